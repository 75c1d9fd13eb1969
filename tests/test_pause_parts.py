"""Pauses (SPEC H) on their parts with a fake clock: the rules, milliseconds per case."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request
from scrapy.settings import Settings
from test_crawl_parts import Stats
from twisted.internet import task
from twisted.internet.defer import Deferred
from twisted.internet.error import (
    ConnectionLost,
    ConnectionRefusedError,
    DNSLookupError,
    SSLError,
    TCPTimedOutError,
    TimeoutError,
)
from twisted.web._newclient import ResponseFailed, ResponseNeverReceived

from scrapy_rep.core.pause import (
    STRUGGLING_PAGES,
    Struggle,
    no_answer,
    page_answer,
    pause_seconds,
)
from scrapy_rep.crawl import _pauses
from scrapy_rep.crawl._events import Events
from scrapy_rep.crawl._pauses import PROBE_META, Pauses, route
from scrapy_rep.crawl._settings import MiddlewareSettings
from scrapy_rep.storage.results import MemoryStore

ORIGIN = "http://a.test"
HOLD, PROBE = "hold", "probe"


def test_what_a_status_says() -> None:
    assert [page_answer(s) for s in (503, 429, 500, 502, 404, 200, 301)] == [
        "slow_down",
        "slow_down",
        "error",
        "error",
        "ok",
        "ok",
        "ok",
    ]


def test_one_page_failing_for_ever_is_not_a_struggling_server() -> None:
    struggle = Struggle()
    assert not any(struggle.failed("http://a.test/broken") for _ in range(100))
    for i in range(STRUGGLING_PAGES - 2):
        assert not struggle.failed(f"http://a.test/{i}")
    assert struggle.failed("http://a.test/last")


@pytest.mark.parametrize(
    ("failures", "retry_after", "seconds"),
    [
        (1, None, 2),
        (2, None, 4),
        (5, None, 32),
        (12, None, 600),
        (1, 7.5, 7.5),
        (3, 3600, 600),
        (1, 2, 2),
        # Shorter than the first delay (REP_PAUSE_DELAY): as if absent, doubling.
        (1, 0, 2),
        (4, 0, 16),
        (4, 1.9, 16),
    ],
)
def test_how_long_a_pause_lasts(failures: int, retry_after: float | None, seconds: float) -> None:
    assert pause_seconds(failures, retry_after, 2, 600) == seconds


def test_a_pause_no_answer_started_is_jittered_longer_never_shorter() -> None:
    assert pause_seconds(1, None, 2, 600, 0.0) == 2
    assert pause_seconds(1, None, 2, 600, 0.5) == 2.5
    assert pause_seconds(3, None, 2, 600, 0.999) == pytest.approx(11.996)
    assert pause_seconds(12, None, 2, 600, 0.999) == 600  # still capped
    assert pause_seconds(1, 7.5, 2, 600, 0.999) == 7.5  # the site's own Retry-After: as asked


class _Timeout(TimeoutError):  # Twisted's, subclassed (a library's own flavour of it)
    pass


@pytest.mark.parametrize(
    ("error", "says_nothing"),
    [
        (TimeoutError(), True),
        (_Timeout(), True),
        (TCPTimedOutError(), True),
        (ConnectionRefusedError(), True),
        (ConnectionLost(), True),
        (ResponseFailed([]), True),
        (ResponseNeverReceived([]), True),
        (DNSLookupError("a.test"), True),
        (IgnoreRequest(), False),
        (ValueError("bad URL"), False),
        (SSLError(), False),
    ],
)
def test_which_failures_mean_the_site_gave_no_answer(error: Exception, says_nothing: bool) -> None:
    assert no_answer(error) is says_nothing


def check(pauses: Pauses, key: str, now: float) -> str | None:
    """What ``Pauses.admit`` says of a request of ``ORIGIN`` by route ``key`` now: None (it
    goes), PROBE (it goes as the one probe, marked so) or HOLD."""
    request = Request(ORIGIN + "/next")
    if not pauses.admit(key, request, now):
        return HOLD
    return PROBE if pauses.probing(request) else None


class Parts:
    def __init__(
        self, store_class: type[MemoryStore] = MemoryStore, shared: bool = False, **kwargs: Any
    ) -> None:
        self.clock = task.Clock()
        self.clock.advance(1000)
        self.stats = Stats()
        self.evicted: list[str] = []
        self.store = store_class(clock=self.clock.seconds)
        self.pauses = Pauses(
            clock=self.clock,
            store=self.store,
            events=Events(self.stats, lambda: None),
            config=replace(
                MiddlewareSettings.from_settings(Settings()),
                pause_delay=2,
                pause_max_delay=600,
                pause_give_up_after=60,
                lease_poll_interval=0.5,
            ),
            probe_timeout=30,
            owner="me",
            shared=shared,
            evict=self.evicted.append,
            **kwargs,
        )

    def no_answer(self, path: str, counts: bool = True) -> bool:
        request = Request(ORIGIN + path)
        self.pauses.admit(ORIGIN, request, self.clock.seconds())  # marks it if it is the probe
        return self.pauses.unanswered(ORIGIN, request, "timed out", counts)

    def answer(self, status: int, retry_after: float | None = None, path: str = "/p") -> bool:
        request = Request(ORIGIN + path)
        self.pauses.admit(ORIGIN, request, self.clock.seconds())  # marks it if it is the probe
        return self.pauses.answered(ORIGIN, request, status, retry_after)


def test_a_pause_holds_then_lets_one_probe_go_and_doubles_when_it_fails() -> None:
    parts = Parts()
    assert parts.answer(503) and parts.evicted == [ORIGIN]
    pauses, now = parts.pauses, parts.clock.seconds
    assert check(pauses, ORIGIN, now()) == HOLD
    waiter = pauses.wait(ORIGIN)
    parts.clock.advance(1.9)
    assert not waiter.called
    parts.clock.advance(0.2)
    assert waiter.called  # the pause is over: one probe may go
    probe = Request(ORIGIN + "/probe")
    assert pauses.admit(ORIGIN, probe, now()) and pauses.probing(probe)
    assert check(pauses, ORIGIN, now()) == HOLD  # one, not two
    # The mark names the probe's URL: a copy of its meta on another request is no probe, and
    # its answer no news; through a scheduler's queue (a new object, same URL) it still is.
    copy = Request(ORIGIN + "/copy", meta=dict(probe.meta))
    assert copy.meta[PROBE_META] == f"{ORIGIN}/probe probes {ORIGIN}"
    assert not pauses.probing(copy) and pauses.probing(probe.replace())
    assert not pauses.answered(ORIGIN, copy, 200, None)
    assert check(pauses, ORIGIN, now()) == HOLD
    assert pauses.answered(ORIGIN, probe, 503, None)
    assert parts.stats["robotstxt/pause/extended"] == 1
    parts.clock.advance(3.9)
    assert check(pauses, ORIGIN, now()) == HOLD  # twice as long: 4 s
    parts.clock.advance(0.2)
    answer = Request(ORIGIN + "/probe")
    assert pauses.admit(ORIGIN, answer, now()) and pauses.probing(answer)
    resumed = pauses.wait(ORIGIN)
    assert not pauses.answered(ORIGIN, answer, 200, None)
    assert resumed.called and check(pauses, ORIGIN, now()) is None
    assert parts.stats["robotstxt/pause/resumed"] == 1


def test_pages_that_get_no_answer_pause_a_site_as_5xx_do_one_slow_page_never() -> None:
    parts = Parts(draw=lambda: 0.5)
    pauses, now = parts.pauses, parts.clock.seconds
    # One page timing out again and again (retried by RetryMiddleware) is one slow page.
    assert not any(parts.no_answer("/slow?try=1") for _ in range(10))
    assert not parts.no_answer("/a")
    # An answer between failures: the site answers, the count starts again.
    assert not parts.answer(200, path="/b")
    assert not parts.no_answer("/slow") and not parts.no_answer("/a")
    # Not a failure that says the site gave no answer (e.g. a bad TLS certificate): not counted.
    assert not parts.no_answer("/tls", counts=False)
    assert parts.no_answer("/c")  # a third distinct page: the site, not a page
    assert parts.stats["robotstxt/pause/paused"] == 1
    assert pauses.why(ORIGIN) == "3 different pages failed in a row (the last: timed out at /c)"
    # In flight when the pause began: held with the others, no retry spent, no longer pause.
    assert parts.no_answer("/d")
    assert parts.stats["robotstxt/pause/extended"] == 0
    # REP_PAUSE_DELAY 2 s, jittered by half the draw: 2.5 s.
    parts.clock.advance(2.4)
    assert check(pauses, ORIGIN, now()) == HOLD
    parts.clock.advance(0.2)
    probe = Request(ORIGIN + "/probe")
    assert pauses.admit(ORIGIN, probe, now()) and pauses.probing(probe)
    # The probe gets no answer either: 4 s, jittered to 5, even a failure that would not count.
    assert pauses.unanswered(ORIGIN, probe, "TLS handshake failed", counts=False)
    assert parts.stats["robotstxt/pause/extended"] == 1
    parts.clock.advance(4.9)
    assert check(pauses, ORIGIN, now()) == HOLD
    parts.clock.advance(0.2)
    assert check(pauses, ORIGIN, now()) == PROBE


def test_the_routes_counted_are_bounded_the_oldest_count_forgotten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_pauses, "STRUGGLES_KEPT", 3)
    pauses = Parts().pauses
    routes = [f"http://site{i}.test" for i in range(4)]
    for key in routes:
        assert not pauses.unanswered(key, Request(key + "/a"), "timed out", True)
    assert list(pauses.struggles) == routes[1:]
    # The ones kept still count: two more distinct pages pause that site.
    assert not pauses.unanswered(routes[1], Request(routes[1] + "/b"), "timed out", True)
    assert pauses.unanswered(routes[1], Request(routes[1] + "/c"), "timed out", True)


def test_a_503_pause_is_not_jittered() -> None:
    parts = Parts(draw=lambda: 0.999)
    parts.answer(503)
    parts.clock.advance(2.01)
    assert check(parts.pauses, ORIGIN, parts.clock.seconds()) == PROBE


def test_answers_sent_before_the_pause_do_not_extend_it() -> None:
    parts = Parts()
    parts.answer(503, retry_after=10)
    assert parts.answer(503, retry_after=100)  # in flight before: sent again, no change
    parts.clock.advance(10.1)
    assert check(parts.pauses, ORIGIN, parts.clock.seconds()) == PROBE


def test_a_probe_that_never_comes_back_lets_another_one_go() -> None:
    parts = Parts()
    parts.answer(429)
    parts.clock.advance(2.1)
    assert check(parts.pauses, ORIGIN, parts.clock.seconds()) == PROBE
    waiter = parts.pauses.wait(ORIGIN)
    parts.clock.advance(30.1)  # probe_timeout
    assert waiter.called
    assert check(parts.pauses, ORIGIN, parts.clock.seconds()) == PROBE


def test_an_idle_crawl_gives_a_long_pause_up_and_the_store_keeps_it() -> None:
    parts = Parts()
    parts.answer(503)
    assert parts.pauses.given_up(ORIGIN) is None
    parts.clock.advance(61)
    why = parts.pauses.given_up(ORIGIN)
    assert why is not None and "REP_PAUSE_GIVE_UP_AFTER=60" in why
    found: list[Any] = []
    parts.store.pauses().addCallback(found.append)
    assert set(found[0][1]) == {ORIGIN}


class _SlowStore(MemoryStore):
    """A store whose pause version comes when the test says (a fleet's Redis, far away)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.answers: list[Deferred[Any]] = []

    def pause_version(self) -> Deferred[int]:
        answer: Deferred[Any] = Deferred()
        self.answers.append(answer)
        return answer.addCallback(lambda _: super(_SlowStore, self).pause_version())


def test_a_fleet_member_opens_only_once_it_knows_the_pauses_in_the_store() -> None:
    parts = Parts(_SlowStore, shared=True)
    store = parts.store
    assert isinstance(store, _SlowStore)
    store.set_pause(ORIGIN, 8, 1, "HTTP 503 at /p")
    opened = parts.pauses.open()
    assert not opened.called  # the spider (and its first request) waits for the store
    store.answers[0].callback(None)
    assert opened.called
    assert check(parts.pauses, ORIGIN, parts.clock.seconds()) == HOLD
    parts.pauses.close()


def test_answers_asking_for_0_s_back_off_as_if_they_said_nothing() -> None:
    # "Retry-After: 0" (or a date in the past) again and again: 2, 4, 8 s, never 0.
    parts = Parts()
    pauses, now = parts.pauses, parts.clock.seconds
    assert parts.answer(503, retry_after=0)
    for seconds in (2, 4, 8):
        parts.clock.advance(seconds - 0.1)
        assert check(pauses, ORIGIN, now()) == HOLD
        parts.clock.advance(0.2)
        probe = Request(ORIGIN + "/p")
        assert pauses.admit(ORIGIN, probe, now())
        assert pauses.answered(ORIGIN, probe, 503, 0.0)


def test_one_script_failing_for_every_query_is_one_page() -> None:
    parts = Parts()
    for query in ("q=1", "q=2", "q=3", "q=4"):
        assert not parts.answer(500, path=f"/search?{query}")
    assert parts.stats["robotstxt/pause/paused"] == 0
    assert not parts.answer(500, path="/a")
    # /search, /a and /b: three different pages in a row.
    assert parts.answer(500, path="/b")
    assert parts.stats["robotstxt/pause/paused"] == 1


def test_an_answer_through_a_proxy_pauses_that_route_only() -> None:
    parts = Parts()
    pauses, now = parts.pauses, parts.clock.seconds
    via = Request(ORIGIN + "/p", meta={"proxy": "http://user:secret@proxy.test:3128"})
    key = route(ORIGIN, via)
    assert key == f"{ORIGIN} via http://proxy.test:3128"  # no credentials
    assert pauses.answered(key, via, 503, None)
    assert parts.evicted == [key]
    direct = Request(ORIGIN + "/q")
    other = Request(ORIGIN + "/r", meta={"proxy": "http://other.test:3128"})
    assert check(pauses, route(ORIGIN, direct), now()) is None
    assert check(pauses, route(ORIGIN, other), now()) is None
    assert check(pauses, key, now()) == HOLD
    assert pauses.why(ORIGIN) == "HTTP 503 at /p"
    # Its probe is given another proxy by a rotating middleware: that says nothing of the
    # paused route, whose next request may probe it at once.
    parts.clock.advance(2.1)
    probe = Request(ORIGIN + "/s", meta={"proxy": "http://user:secret@proxy.test:3128"})
    assert pauses.admit(key, probe, now()) and probe.meta[PROBE_META] == f"{probe.url} probes {key}"
    assert check(pauses, key, now()) == HOLD
    probe.meta["proxy"] = "http://other.test:3128"
    assert not pauses.answered(route(ORIGIN, probe), probe, 200, None)
    assert check(pauses, key, now()) == PROBE
    assert parts.stats["robotstxt/pause/resumed"] == 0


def test_a_pause_longer_than_its_limit_is_given_up_while_the_crawl_is_busy() -> None:
    from test_crawl_parts import ORIGIN as A
    from test_crawl_parts import Parts as CrawlParts
    from test_crawl_parts import ok

    def gate(request: Request) -> None:
        """What the gate does with a released request: it probes, the site says "0 s" again."""
        parts.pauses.admit(A, request, parts.clock.seconds())
        if parts.pauses.probing(request):
            assert parts.pauses.answered(A, request, 503, 0.0)
        parts.room.hold(A, request, until=parts.pauses)

    b_answer: Deferred[Any] = Deferred()
    parts = CrawlParts(ok(), b_answer, crawl=gate, deliver=True)
    # The errbacks the drop path delivers.
    failures = parts.failures
    waiting = parts.room.wait(A)  # robots.txt answers: a.test is known
    assert waiting.called
    page = Request(A + "/page", errback=lambda failure: None)
    assert parts.pauses.answered(A, page, 503, 0.0)
    parts.room.hold(A, page, until=parts.pauses)
    b = parts.room.wait("http://b.test")  # robots.txt never answers: the crawl stays busy
    parts.advance(59)
    assert parts.stats["robotstxt/pause/gave_up"] == 0 and parts.room.busy()
    parts.advance(2)
    # A pause given up has its own stat and reason: a.test's robots.txt answered.
    assert parts.stats["robotstxt/pause/gave_up"] == 1
    assert parts.stats["robotstxt/gave_up"] == 0
    assert parts.stats["robotstxt/held_dropped"] == 1
    (failure,) = failures
    assert failure.value.reason == "pause_gave_up"
    assert "asked to slow down" in str(failure.value)
    # A late page of the same pause (one that was in flight, say) is given up on the next tick,
    # and the pause is still counted once.
    parts.room.hold(A, Request(A + "/late", errback=lambda failure: None), until=parts.pauses)
    parts.advance(1)
    assert [f.value.reason for f in failures] == ["pause_gave_up"] * 2
    assert parts.stats["robotstxt/pause/gave_up"] == 1
    assert not b.called
    b_answer.callback(ok())
    assert b.called


def test_a_site_answering_503_for_ever_is_given_up_a_minute_after_its_pause_began() -> None:
    # Every REP_PAUSE_* default: pauses of 2, 4, 8, 16, 32 s, each probe answered 503 again
    # (no Retry-After); its requests are given up at REP_PAUSE_GIVE_UP_AFTER (60 s), so a crawl
    # of such a site ends within two minutes of its last page. The real crawl, with a shorter
    # give-up: test_pauses_durable.py, test_a_site_answering_503_for_ever_ends_the_crawl.
    from test_crawl_parts import ORIGIN as A
    from test_crawl_parts import Parts as CrawlParts
    from test_crawl_parts import ok

    assert CrawlParts().config.pause_give_up_after == 60
    probes: list[float] = []

    def gate(request: Request) -> None:
        """A released request reaches the scheduler only as the probe (the admission marks it:
        the others stay held); the site answers 503 and it is held again."""
        assert request.meta[PROBE_META] == f"{request.url} probes {A}"
        probes.append(parts.clock.seconds() - paused_at)
        assert parts.pauses.answered(A, request, 503, None)
        parts.room.hold(A, request, until=parts.pauses)

    parts = CrawlParts(ok(), crawl=gate, deliver=True)
    failures = parts.failures
    assert parts.room.wait(A).called
    paused_at = parts.clock.seconds()
    pages = [Request(f"{A}/{i}", errback=lambda failure: None) for i in range(5)]
    assert parts.pauses.answered(A, pages[0], 503, None)
    for page in pages:
        parts.room.hold(A, page, until=parts.pauses)
    parts.advance(59.5)
    assert parts.stats["robotstxt/pause/gave_up"] == 0
    assert [round(t) for t in probes] == [2, 6, 14, 30]
    parts.advance(2)
    assert parts.stats["robotstxt/pause/gave_up"] == 1
    assert parts.stats["robotstxt/gave_up"] == 0  # its robots.txt answered
    assert len(failures) == 5
    assert all(f.value.reason == "pause_gave_up" for f in failures)
    assert all("asked to slow down" in str(f.value) for f in failures)

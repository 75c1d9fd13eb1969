"""The crawl side's state machine on its parts, with a fake clock: milliseconds per test.

The parts built by ``build_components``, the factory ``RobotsTxtMiddleware`` uses, on
``task.Clock``, with ``MemoryStore`` and a scripted fetcher in place of Scrapy's engine (these
are unit tests of the parts; what only a crawl can show is in ``test_middleware_*.py``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from _schedule import attempt_times
from scrapy.dupefilters import RFPDupeFilter
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request
from scrapy.settings import Settings, default_settings
from scrapy.utils.test import get_crawler
from twisted.internet import task
from twisted.internet.defer import Deferred, fail, succeed
from twisted.python.failure import Failure

from scrapy_rep.core.policy import Entry, Fetch, Limits
from scrapy_rep.crawl._admission import SEEN_META, seen_mark
from scrapy_rep.crawl._cache import OriginState
from scrapy_rep.crawl._drops import Drops
from scrapy_rep.crawl._events import Events
from scrapy_rep.crawl._resolver import Resolver
from scrapy_rep.crawl._settings import MiddlewareSettings
from scrapy_rep.crawl.exceptions import RequestDropped
from scrapy_rep.crawl.robotstxt_middleware import Components, build_components
from scrapy_rep.storage.held import MemoryHeld
from scrapy_rep.storage.results import MemoryStore, StoredRobots
from scrapy_rep.storage.results._base import StoreUnavailable

ORIGIN = "http://a.test"
RULES = b"User-agent: *\nDisallow: /private\n"
START = 1_000_000.0
LIMITS = Limits(retry_delay=30.0, retry_fast_delay=5.0, retry_max_delay=600.0)

Reply = tuple[Fetch, bytes | None]


def ok(body: bytes = RULES, cache_control: str | None = None) -> Reply:
    return Fetch("ok", status=200, cache_control=cache_control), body


def error(status: int = 500, retry_after: float | None = None) -> Reply:
    return Fetch(
        "unreachable", status=status, error=f"HTTP {status}", retry_after=retry_after
    ), None


class Stats(Counter[str]):
    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self[key] += count


class Fetcher:
    """Answers each fetch with the next scripted reply; a Deferred reply stays pending."""

    def __init__(self, clock: task.Clock, *replies: Reply | Deferred[Reply]) -> None:
        self._clock = clock
        self._replies = list(replies)
        self.times: list[float] = []

    def script(self, *replies: Reply | Deferred[Reply]) -> None:
        self._replies.extend(replies)

    def fetch(self, url: str, via: Request | None = None) -> Deferred[Reply]:
        assert url.endswith("/robots.txt")
        self.times.append(self._clock.seconds() - START)
        reply = self._replies.pop(0)
        return reply if isinstance(reply, Deferred) else succeed(reply)


class FlakyStore(MemoryStore):
    """A MemoryStore that can be taken down: every call fails as a real outage does."""

    down = False

    def _call(self, method: Callable[..., Deferred[Any]], *args: Any) -> Deferred[Any]:
        if self.down:
            return fail(StoreUnavailable("store down"))
        return method(*args)

    def get(self, origin: str) -> Deferred[StoredRobots | None]:
        return self._call(super().get, origin)

    def put(self, origin: str, entry: StoredRobots) -> Deferred[None]:
        return self._call(super().put, origin, entry)

    def acquire_lease(self, origin: str, owner: str, ttl: float) -> Deferred[bool]:
        return self._call(super().acquire_lease, origin, owner, ttl)


class DurableHeld:
    """A durable ``HeldRequests`` stand-in (memory inside); its next ``take`` can fail as
    RedisHeld's does (nothing returned, the requests stay for a later ``on_adopted``)."""

    next_run = "the test's durable place"

    def __init__(self) -> None:
        self.inner = MemoryHeld()
        self.kept: list[Request] = []
        self.failing_takes = 0
        self.closed = False
        self.elsewhere = False

    def add(self, origin: str, request: Request) -> None:
        self.inner.add(origin, request)

    def take(self, origin: str) -> list[Request]:
        if self.failing_takes:
            self.failing_takes -= 1
            return []
        return self.inner.take(origin)

    def origins(self) -> list[str]:
        return self.inner.origins()

    def peek(self) -> list[Request]:
        return self.inner.peek()

    def put_aside(self, origin: str, requests: list[Request]) -> list[Request]:
        self.kept.extend(requests)
        return []

    def __len__(self) -> int:
        return len(self.inner)

    def in_memory(self) -> int:
        return 0

    def close(self) -> None:
        self.closed = True

    def pending_elsewhere(self) -> bool:
        return self.elsewhere


class Parts:
    """The parts as ``build_components`` wires them for the middleware."""

    def __init__(
        self,
        *replies: Reply | Deferred[Reply],
        limits: Limits = LIMITS,
        hold_timeout: float = 900.0,
        store: MemoryStore | None = None,
        held: DurableHeld | None = None,
        crawl: Callable[[Request], None] | None = None,
        start: float = START,
        deliver: bool = False,
    ) -> None:
        """``deliver``: the drop path delivers each dropped request's failure (to
        ``failures``), as it hands it to Scrapy's scraper in a crawl."""
        self.clock = task.Clock()
        self.clock.advance(start)
        self.stats = Stats()
        self.store = store if store is not None else MemoryStore(clock=self.clock.seconds)
        self.fetcher = Fetcher(self.clock, *replies)
        self.crawled: list[Request] = []
        self.close_asked = False
        self.emptied = 0
        defaults = MiddlewareSettings.from_settings(Settings())
        self.config = replace(
            defaults, limits=limits, hold_timeout=hold_timeout, parsed_cache_size=100
        )
        self.failures: list[Failure] = []
        self.drops = Drops(
            Events(self.stats, lambda: None),
            self.clock,
            deliver=(lambda request, failure: self.failures.append(failure)) if deliver else None,
        )
        built = self.build("me", crawl or self.crawled.append, held, self.drops)
        self.resolver, self.room = built.resolver, built.room
        self.pauses = built.pauses

    def build(
        self,
        owner: str,
        crawl: Callable[[Request], None],
        held: DurableHeld | None = None,
        drops: Drops | None = None,
    ) -> Components:
        """The parts of one process; another ``owner`` is another fleet process on the same
        store (and the same fetcher: what it fetches is what the site answers)."""
        return build_components(
            clock=self.clock,
            store=self.store,
            fetcher_for=lambda kind: self.fetcher,
            events=Events(self.stats, lambda: None),
            config=self.config,
            owner=owner,
            crawl=crawl,
            closing=lambda: self.close_asked,
            wake=self.count_emptied,
            held=held,
            drops=drops,
        )

    def other(self) -> Resolver:
        """The resolver of another fleet process sharing this one's store."""
        return self.build("other", lambda request: None).resolver

    def hold(self, path: str = "/page") -> Request:
        request = Request(ORIGIN + path)
        self.room.hold(ORIGIN, request, until=self.resolver)
        return request

    def state(self) -> OriginState | None:
        return self.resolver.state(ORIGIN, self.clock.seconds(), None)

    def advance(self, seconds: float, step: float = 0.25) -> None:
        for _ in range(int(seconds / step)):
            self.clock.advance(step)

    def count_emptied(self) -> None:
        self.emptied += 1

    def let_go(self) -> None:
        """The spider closed (``spider_closed``): everything let go, the place closed."""
        self.room.close()


def failure_of(deferred: Deferred[Any]) -> BaseException:
    result: list[Failure] = []
    deferred.addErrback(result.append)
    assert result, "the Deferred did not fail"
    return result[0].value


def test_backoff_doubles_until_robots_txt_answers_then_releases() -> None:
    # Without giving up (REP_GIVE_UP_AFTER = 0): the requests wait up to REP_HOLD_TIMEOUT.
    parts = Parts(error(500), error(500), error(500), ok(), limits=replace(LIMITS, give_up_after=0))
    request = parts.hold()
    times = attempt_times([500, 500, 500], LIMITS)
    parts.advance(times[-1] + 1)
    assert parts.fetcher.times == times
    assert parts.crawled == [request]
    assert parts.stats["robotstxt/released"] == 1
    state = parts.state()
    assert state is not None and state.serving.kind == "rules"


@pytest.mark.parametrize("other_way", [True, False])
def test_robots_txt_without_an_answer_through_a_proxy_is_fetched_the_way_others_go(
    other_way: bool,
) -> None:
    pending: Deferred[Reply] = Deferred()
    parts = Parts(pending, ok())
    vias: list[str | None] = []
    fetch = parts.fetcher.fetch

    def recorded(url: str, via: Request | None = None) -> Deferred[Reply]:
        vias.append(None if via is None else via.meta.get("proxy"))
        return fetch(url, via)

    parts.fetcher.fetch = recorded  # type: ignore[method-assign]
    proxy = "http://user:secret@proxy.test:3128"
    proxied = Request(ORIGIN + "/p", meta={"proxy": proxy})
    waited = parts.resolver.wait(ORIGIN, proxied)  # its fetch goes through the proxy
    # The ways are those of requests still waiting (held, alive): kept weakly.
    waiting = [Request(ORIGIN + "/q", meta={"proxy": proxy}), Request(ORIGIN + "/direct")]
    for request in waiting[: 2 if other_way else 1]:
        parts.resolver.waiting(ORIGIN, request)
    pending.callback(error(503))  # the proxy's own 503
    if other_way:
        # Fetched at once directly, the failure through the proxy not counted.
        assert vias == [proxy, None]
        assert parts.stats["robotstxt/other_way"] == 1
        state = parts.state()
        assert waited.called and state is not None and state.entry.failures == 0
    else:
        # One way only: the failure counts (retried on B2's schedule), as before.
        assert vias == [proxy]
        assert parts.stats["robotstxt/other_way"] == 0
        state = parts.state()
        assert not waited.called and state is not None and state.entry.failures == 1
        waited.cancel()


def test_retry_after_and_fast_retry_for_503() -> None:
    parts = Parts(error(503), error(429, retry_after=42), ok())
    parts.hold()
    times = attempt_times([503, (429, 42)], LIMITS)
    parts.advance(times[-1] + 1)
    assert parts.fetcher.times == times
    assert len(parts.crawled) == 1


def test_unreachable_longer_than_allow_after_releases_as_no_restrictions() -> None:
    limits = replace(LIMITS, unreachable_allow_after=100, give_up_after=0)
    parts = Parts(*[error(500)] * 10, limits=limits)
    request = parts.hold()
    three = attempt_times([500, 500], LIMITS)
    assert three[-1] < 100  # the test's premise: 3 attempts within 100 s
    parts.advance(three[-1] + 1)  # unreachable for less than 100 s
    assert parts.crawled == []
    parts.advance(120)  # fetched at 210: unreachable for longer, everything allowed
    assert parts.crawled == [request]
    state = parts.state()
    assert state is not None and state.report().outcome == "allow_all"


def test_no_fetch_while_nothing_waits_for_a_failing_origin() -> None:
    parts = Parts(error(500), hold_timeout=10)
    parts.hold()
    parts.advance(11)  # held too long: nothing waits for the origin any more
    assert parts.stats["robotstxt/held_dropped"] == 1
    parts.advance(120)
    assert parts.fetcher.times == [0]  # the interest was withdrawn: no retry at 30 s


def test_hold_expiry_drops_held_and_fails_waiters_with_the_reason() -> None:
    parts = Parts(*[error(503)] * 10, hold_timeout=10)
    parts.hold()
    waiter = parts.room.wait(ORIGIN)
    parts.advance(9)
    assert not waiter.called
    parts.advance(2)
    assert str(failure_of(waiter)) == (
        f"{ORIGIN}: its robots.txt could not be fetched within REP_HOLD_TIMEOUT=10s (HTTP 503)"
    )
    assert parts.stats["robotstxt/held_dropped"] == 2
    assert parts.crawled == []
    assert not parts.room.busy()
    # The engine is told at once that nothing waits any more (the crawl may end now).
    assert parts.emptied == 1


def test_a_fetch_in_flight_at_the_hold_timeout_is_waited_for_then_drops_at_once() -> None:
    # A robots.txt that hangs: the requests held while its fetch began wait for that fetch
    # (it may answer; the engine could not close before it ends anyway), then go within a
    # tick of its failure: the crawl ends at the fetch's end, not idle after the drop.
    hanging: Deferred[Reply] = Deferred()
    parts = Parts(hanging, *[error(503)] * 5, hold_timeout=10)
    early = parts.hold("/early")
    waiter = parts.room.wait(ORIGIN)
    parts.advance(10.5)  # past REP_HOLD_TIMEOUT, the fetch begun at 0 still in flight
    assert not waiter.called and parts.stats.get("robotstxt/held_dropped", 0) == 0
    parts.advance(4)
    hanging.callback(error(503))  # it fails 14.5 s in: both waited for nothing more
    parts.advance(1)
    assert parts.stats["robotstxt/held_dropped"] == 2 and parts.crawled == []
    assert str(failure_of(waiter)).endswith("within REP_HOLD_TIMEOUT=10s (HTTP 503)")
    assert parts.emptied == 1 and not parts.room.busy()
    assert parts.fetcher.times == [0]  # no attempt for requests no longer held
    assert early not in parts.crawled


def test_a_fetch_in_flight_that_answers_after_the_hold_timeout_serves_its_requests() -> None:
    hanging: Deferred[Reply] = Deferred()
    parts = Parts(hanging, hold_timeout=10)
    request = parts.hold("/late")
    parts.advance(12)
    hanging.callback(ok())
    parts.advance(1)
    assert parts.crawled == [request]
    assert parts.stats.get("robotstxt/held_dropped", 0) == 0


def test_a_fetch_begun_after_the_hold_timeout_is_not_waited_for() -> None:
    # Held at 0.25 s for at most 5.5 s: the first attempt fails at 1 s, the retry (a 503's
    # 5 s) begins at 6 s, after the request's time was up (5.75 s): it is dropped on the
    # next tick (6.25 s), that attempt still in flight.
    first: Deferred[Reply] = Deferred()
    retry: Deferred[Reply] = Deferred()
    parts = Parts(first, retry, hold_timeout=5.5)
    parts.advance(0.25)
    parts.hold("/page")
    parts.advance(0.75)
    first.callback(error(503))
    parts.advance(5.0)
    assert parts.fetcher.times == [0.25, 6.0]
    assert parts.stats.get("robotstxt/held_dropped", 0) == 0
    parts.advance(0.25)
    assert parts.stats["robotstxt/held_dropped"] == 1
    retry.callback(error(503))


def test_lease_held_elsewhere_waits_for_its_entry_without_fetching() -> None:
    parts = Parts()
    other = parts.other()
    pending: Deferred[Reply] = Deferred()
    parts.fetcher.script(pending)
    # "another process" takes the lease and fetches
    other.wait(ORIGIN, Request(ORIGIN + "/other"))
    request = parts.hold()
    parts.advance(5)
    assert parts.crawled == []
    pending.callback(ok())
    parts.advance(1)
    assert parts.fetcher.times == [0]  # fetched once, by the lease holder
    assert parts.crawled == [request]
    assert parts.stats["robotstxt/store_hit"] == 1


def test_lease_of_a_dead_holder_lapses_after_its_ttl() -> None:
    parts = Parts(ok())
    assert parts.store.acquire_lease(ORIGIN, "dead", 30.0).result is True
    request = parts.hold()
    parts.advance(29.5)
    assert parts.fetcher.times == []
    parts.advance(1)
    assert len(parts.fetcher.times) == 1 and 30 <= parts.fetcher.times[0] <= 30.5
    assert parts.crawled == [request]


def test_lease_is_renewed_while_a_slow_fetch_runs() -> None:
    parts = Parts()
    pending: Deferred[Reply] = Deferred()
    parts.fetcher.script(pending)
    parts.hold()
    parts.advance(100)  # more than three lease TTLs
    assert parts.store.acquire_lease(ORIGIN, "other", 30.0).result is False
    pending.callback(ok())
    assert parts.store.acquire_lease(ORIGIN, "other", 30.0).result is True  # released


def test_refresh_of_a_known_origin_serves_the_old_copy_meanwhile() -> None:
    limits = replace(LIMITS, cache_lifetime=100, cache_min_lifetime=0)
    pending: Deferred[Reply] = Deferred()
    parts = Parts(ok(), pending, limits=limits)
    parts.hold()
    old = parts.state()
    assert old is not None and old.document is not None
    parts.advance(101)
    refreshing = parts.state()  # due: starts the refresh, answers with the old copy
    assert refreshing is not None and refreshing.document is old.document
    assert parts.fetcher.times == [0, 101]
    pending.callback(ok(b"User-agent: *\nDisallow: /\n"))
    new = parts.state()
    assert new is not None and new.document is not old.document
    assert not new.document.allowed(ORIGIN + "/page", ())  # type: ignore[union-attr]
    assert parts.stats["robotstxt/refresh"] == 1


def test_stale_copy_serves_while_robots_txt_fails_then_holds_after_stale_max_age() -> None:
    limits = replace(LIMITS, cache_lifetime=100, cache_min_lifetime=0, stale_max_age=1000)
    parts = Parts(ok(), *[error(500)] * 20, limits=limits)
    parts.hold()
    parts.advance(101)
    parts.state()  # refresh fails: the good copy keeps serving, marked stale
    state = parts.state()
    assert state is not None and state.serving.kind == "rules" and state.serving.stale
    assert state.report().stale and state.report().status == 200
    parts.advance(1000)
    held = parts.state()
    assert held is not None and held.serving.kind == "hold"


def test_store_outage_and_recovery(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    store = FlakyStore()
    parts = Parts(ok(), ok(), store=store, limits=replace(LIMITS, cache_min_lifetime=0))
    store._now = parts.clock.seconds
    store.down = True
    request = parts.hold()
    parts.clock.advance(0)  # released on the next reactor turn
    # The store cannot answer: this process fetches by itself and goes on.
    assert parts.crawled == [request]
    assert parts.stats["robotstxt/store_error"] >= 3
    assert caplog.text.count("robots.txt store unavailable") == 1  # warned once per outage
    store.down = False
    assert store.get(ORIGIN).result is None  # the write during the outage was lost
    parts.advance(86400 + 60, step=60)
    parts.state()  # the refresh writes the store again
    stored = store.get(ORIGIN).result
    assert stored is not None and stored.body == RULES
    assert "robots.txt store is available again" in caplog.text


def test_room_waits_while_limit_origins_resolve_and_wakes_below_it() -> None:
    pending: Deferred[Reply] = Deferred()
    parts = Parts(pending, pending)
    assert parts.resolver.room(1) is None
    parts.hold()
    waiter = parts.resolver.room(1)  # one origin being resolved
    assert waiter is not None and not waiter.called
    assert parts.resolver.room(2) is None
    pending.callback(ok())
    assert waiter.called  # none resolving: below the limit
    assert parts.resolver.room(1) is None
    slow: Deferred[Reply] = Deferred()
    closing = Parts(slow)
    closing.hold()
    late = closing.resolver.room(1)
    assert late is not None
    closing.let_go()  # the crawl closes: nothing waits for room any more
    assert late.called and closing.resolver.room(1) is None
    slow.callback(ok())  # the fetch in flight ends (its resolution is not left pending)


def test_release_runs_on_the_next_turn_not_inside_the_resolution() -> None:
    # The gate the released request passes again asks the resolver: that must not happen
    # inside the resolver's own completion (here the store and the fetch answer at once, so
    # the resolution completes inside ``hold``).
    parts = Parts(ok())
    request = parts.hold()
    assert parts.fetcher.times == [0] and parts.state() is not None
    assert parts.crawled == []
    parts.clock.advance(0)
    assert parts.crawled == [request]


def test_release_failure_keeps_the_request_and_retries_it() -> None:
    sent: list[Request] = []
    broken = {"/page/2"}

    def crawl(request: Request) -> None:
        path = request.url[len(ORIGIN) :]
        if path in broken:
            raise ConnectionError("scheduler backend down")
        sent.append(request)

    parts = Parts(error(500), ok(), crawl=crawl)
    first, second, third = parts.hold("/page/1"), parts.hold("/page/2"), parts.hold("/page/3")
    parts.advance(attempt_times([500], LIMITS)[-1] + 1)
    # One failing re-scheduling does not stop the others, and nothing is lost.
    assert sent == [first, third]
    assert parts.stats["robotstxt/release_failed"] >= 1
    assert parts.room.busy()
    broken.clear()
    parts.advance(1)
    assert sent == [first, third, second]
    assert parts.stats["robotstxt/released"] == 3
    assert not parts.room.busy()


def test_close_lets_everything_go_at_once() -> None:
    held_place = DurableHeld()
    parts = Parts(*[error(500)] * 10, held=held_place)
    held = parts.hold()
    waiter = parts.room.wait(ORIGIN)
    parts.close_asked = True
    parts.advance(1)  # the next tick notices the close
    closed = failure_of(waiter)
    assert isinstance(closed, IgnoreRequest)
    assert str(closed) == f"{ORIGIN}: its robots.txt was not known when the crawl closed"
    # The place stays open until the spider closes (requests in progress may still be held
    # on their way out), then keeps them, for the next run (or a live fleet process).
    assert not held_place.closed and not parts.room.busy()
    parts.room.close()
    assert held_place.closed
    assert held_place.inner.take(ORIGIN) == [held]
    assert parts.stats["robotstxt/held_persisted"] == 1
    assert parts.stats["robotstxt/held_dropped_on_close"] == 0
    parts.advance(120)
    assert parts.fetcher.times == [0]  # no retry after the close
    late = parts.room.wait(ORIGIN)
    assert isinstance(failure_of(late), IgnoreRequest)
    parts.room.hold(ORIGIN, Request(ORIGIN + "/late"), until=parts.resolver)
    # Not silently lost either: the waiter at close, the late waiter, the late request.
    assert parts.stats["robotstxt/held_dropped"] == 3


@pytest.mark.parametrize("durable", [True, False])
def test_a_request_held_while_the_crawl_closes_is_kept_or_said_not_downloaded(
    caplog: pytest.LogCaptureFixture, durable: bool
) -> None:
    # Sent back to the gate on its way out (its route paused, its slot's wait ended by the
    # close): held without a release to wait for, as requests left in Scrapy's scheduler are
    # kept by JOBDIR or left behind.
    held_place = DurableHeld() if durable else None
    parts = Parts(ok(), held=held_place)
    parts.room.let_go()  # the close is asked
    late = Request(ORIGIN + "/late")
    parts.room.hold(ORIGIN, late, until=parts.pauses)
    parts.advance(60)
    assert parts.fetcher.times == []  # nothing fetched for it: the crawl closes
    assert parts.stats.get("robotstxt/held_dropped", 0) == 0
    with caplog.at_level(logging.INFO, "scrapy_rep"):
        parts.room.close()  # the spider closed
    if held_place is not None:
        assert held_place.inner.take(ORIGIN) == [late]
        assert parts.stats["robotstxt/held_persisted"] == 1
        assert "1 held request(s) stay in the test's durable place" in caplog.text
    else:
        assert parts.stats["robotstxt/held_dropped_on_close"] == 1
        assert (
            "Crawl closed with 1 request(s) held (1 waiting for their origin's pause); they "
            "were not downloaded"
        ) in caplog.text
    # Once the place is closed, one more is dropped with the reason.
    parts.room.hold(ORIGIN, Request(ORIGIN + "/later"), until=parts.resolver)
    assert parts.stats["robotstxt/held_dropped"] == 1


def test_waiters_failed_at_close_take_the_drop_path(caplog: pytest.LogCaptureFixture) -> None:
    # engine.download callers failed when the crawl closes are dropped as every other request
    # is: counted, logged, in the closing summary; each still fails with the reason.
    parts = Parts(*[error(500)] * 10)
    waiters = [parts.room.wait(ORIGIN), parts.room.wait(ORIGIN)]
    parts.let_go()
    for waiter in waiters:
        closed = failure_of(waiter)
        assert isinstance(closed, RequestDropped) and closed.reason == "closing"
    assert parts.stats["robotstxt/held_dropped"] == 2
    assert f"Dropped 2 request(s) for {ORIGIN}, not downloaded" in caplog.text
    with caplog.at_level(logging.INFO, "scrapy_rep"):
        parts.drops.summarize()
    assert "scrapy-rep dropped 2 request(s), not downloaded, from 1 origin(s)" in caplog.text
    assert (
        f"{ORIGIN}: 2 closing ({ORIGIN}: its robots.txt was not known when the crawl closed)"
    ) in caplog.text


def test_close_without_a_durable_place_counts_held_requests_as_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    parts = Parts(error(500))
    parts.hold("/1"), parts.hold("/2")
    # b.test answered robots.txt, then its pages asked to slow down: held for its pause.
    paused = Request("http://b.test/page")
    assert parts.pauses.answered("http://b.test", paused, 503, None)
    parts.room.hold("http://b.test", paused, until=parts.pauses)
    parts.let_go()
    parts.let_go()  # the close signal after a close request: counted once
    assert parts.stats["robotstxt/held_dropped_on_close"] == 3
    # The closing line says what they were waiting for.
    assert (
        "Crawl closed with 3 request(s) held (2 waiting for robots.txt, 1 for their origin's "
        "pause); they were not downloaded"
    ) in caplog.text


def test_expiry_keeps_only_what_was_held_longer_than_the_timeout_for_the_next_run() -> None:
    held_place = DurableHeld()
    parts = Parts(*[error(503)] * 20, hold_timeout=10, held=held_place)
    old = parts.hold("/old")
    parts.advance(6)
    young = parts.hold("/young")
    parts.advance(5)
    # A durable place keeps what the crawl stopped waiting for: nothing is dropped.
    assert parts.stats.get("robotstxt/held_dropped", 0) == 0
    assert parts.stats["robotstxt/held_kept_for_next_run"] == 1
    assert held_place.kept == [old]
    assert parts.emptied == 0  # /young still waits
    assert held_place.inner.origins() == [ORIGIN]
    assert [r.url for r in held_place.inner.take(ORIGIN)] == [young.url]


def test_expiry_without_a_durable_place_drops_with_the_reason() -> None:
    parts = Parts(*[error(503)] * 20, hold_timeout=10)
    parts.hold("/old")
    parts.advance(11)
    assert parts.stats["robotstxt/held_dropped"] == 1
    assert parts.stats.get("robotstxt/held_kept_for_next_run", 0) == 0


def test_open_sends_what_an_earlier_run_held_back_through_the_gate() -> None:
    held_place = DurableHeld()
    earlier = [Request(ORIGIN + "/1"), Request("http://b.test/2")]
    held_place.add(ORIGIN, earlier[0])
    held_place.add("http://b.test", earlier[1])
    parts = Parts()
    parts.room.open(held_place)
    assert parts.crawled == []  # on the next reactor turn, not inside spider_opened
    parts.clock.advance(0)
    assert parts.crawled == earlier
    assert parts.stats["robotstxt/held_restored"] == 2
    # Not "released": they pass the gate again, and count as released only once it holds
    # and releases them (each held request is counted once per fate).
    assert parts.stats.get("robotstxt/released", 0) == 0
    assert len(held_place) == 0 and not parts.room.busy()


def test_adopted_requests_go_through_this_process_gate() -> None:
    held_place = DurableHeld()
    parts = Parts()
    parts.room.open(held_place)
    adopted = Request("http://dead.test/1")
    held_place.add("http://dead.test", adopted)  # what RedisHeld's heartbeat adopts
    parts.room.adopted({"http://dead.test": 1})
    parts.clock.advance(0)
    assert parts.crawled == [adopted]
    assert parts.stats["robotstxt/held_restored"] == 0


def scrapy_dupefilter() -> RFPDupeFilter:
    """Scrapy's own dupefilter, empty (a job killed before it flushed ``requests.seen``)."""
    settings = {}
    if getattr(default_settings, "REQUEST_FINGERPRINTER_IMPLEMENTATION", None) == "2.6":
        settings["REQUEST_FINGERPRINTER_IMPLEMENTATION"] = "2.7"  # Scrapy 2.11's warning
    return RFPDupeFilter.from_crawler(get_crawler(settings_dict=settings))


def seen_before(url: str) -> Request:
    """A request sent back to the gate after the dupefilter let it through (``send_back``)."""
    request = Request(url, dont_filter=True)
    request.meta[SEEN_META] = seen_mark(request)
    return request


@pytest.mark.parametrize("stopped", ["gracefully", "killed"])
def test_restored_requests_the_dupefilter_saw_are_filed_with_it_before_the_spider_starts(
    stopped: str,
) -> None:
    dupefilter = scrapy_dupefilter()
    if stopped == "gracefully":  # Scrapy flushed requests.seen at close, and read it back
        dupefilter.request_seen(Request(ORIGIN + "/seen"))
    held_place = DurableHeld()
    # Sent back to the gate from the downloader (the dupefilter had let it through), held at
    # the gate before the scheduler (never seen), and the spider's own dont_filter request.
    seen = seen_before(ORIGIN + "/seen")
    unseen = Request(ORIGIN + "/unseen")
    own = Request(ORIGIN + "/own", dont_filter=True)
    # A spider request that copied /seen's meta: the mark is /seen's fingerprint, not its own.
    copied = Request(ORIGIN + "/copied", meta=dict(seen.meta))
    for request in (seen, unseen, own, copied):
        held_place.add(ORIGIN, request)
    parts = Parts()
    parts.room.open(held_place, seen=dupefilter.request_seen)
    refiled = 1 if stopped == "killed" else 0
    assert parts.stats["robotstxt/held_refiled"] == refiled
    # Before anything reaches the scheduler: the spider's copy of /seen, yielded again, is a
    # duplicate; the others are left to whichever copy comes first (/unseen), or pass the
    # dupefilter anyway (/own, as Scrapy's dont_filter start requests do on every resume).
    assert dupefilter.request_seen(Request(ORIGIN + "/seen"))
    assert not dupefilter.request_seen(Request(ORIGIN + "/unseen"))
    assert not dupefilter.request_seen(Request(ORIGIN + "/own"))
    assert not dupefilter.request_seen(Request(ORIGIN + "/copied"))
    parts.clock.advance(0)
    assert parts.crawled == [seen, unseen, own, copied]  # every held copy goes, as before
    assert parts.stats["robotstxt/held_refiled"] == refiled  # filed once
    assert parts.stats["robotstxt/held_restored"] == 4


def test_adopted_requests_the_dupefilter_saw_are_filed_as_they_are_sent() -> None:
    dupefilter = scrapy_dupefilter()
    held_place = DurableHeld()
    parts = Parts()
    parts.room.open(held_place, seen=dupefilter.request_seen)
    adopted = seen_before("http://dead.test/1")
    held_place.add("http://dead.test", adopted)  # what RedisHeld's heartbeat adopts
    parts.room.adopted({"http://dead.test": 1})
    parts.clock.advance(0)
    assert parts.crawled == [adopted]
    assert parts.stats["robotstxt/held_refiled"] == 1
    assert dupefilter.request_seen(Request("http://dead.test/1"))


def test_requests_released_in_this_run_are_not_filed_again() -> None:
    filed: list[Request] = []
    parts = Parts(ok())
    parts.room.open(DurableHeld(), seen=filed.append)
    # Its origin's pause ended: the dupefilter of this run let it through already.
    request = seen_before(ORIGIN + "/page")
    parts.room.hold(ORIGIN, request, until=parts.resolver)
    parts.advance(1)
    assert parts.crawled == [request]
    assert filed == []


def test_a_dupefilter_that_fails_delays_no_restored_request(caplog: Any) -> None:
    def broken(request: Request) -> bool:
        raise ConnectionError("the dupefilter's Redis is down")

    held_place = DurableHeld()
    restored = [seen_before(ORIGIN + f"/{i}") for i in range(2)]
    for request in restored:
        held_place.add(ORIGIN, request)
    parts = Parts()
    with caplog.at_level(logging.WARNING):
        parts.room.open(held_place, seen=broken)
        parts.clock.advance(0)
    assert parts.crawled == restored
    assert caplog.text.count("Could not file") == 1
    assert "the dupefilter's Redis is down" in caplog.text


def test_work_held_by_another_fleet_process_is_seen_only_through_a_fleet_place() -> None:
    parts = Parts()
    assert not parts.room.pending_elsewhere()  # MemoryHeld: no fleet
    held_place = DurableHeld()
    parts.room.open(held_place)
    assert not parts.room.pending_elsewhere()
    held_place.elsewhere = True  # what RedisHeld answers while another owner holds requests
    assert parts.room.pending_elsewhere()
    assert not parts.room.busy()  # nothing of its own: only spider_idle keeps it open


def test_an_idle_fleet_process_is_woken_to_ask_again_while_another_holds_requests() -> None:
    parts = Parts()
    held_place = DurableHeld()
    parts.room.open(held_place)
    held_place.elsewhere = True
    for _ in range(3):  # spider_idle asks, again and again: one tick, not three
        assert parts.room.pending_elsewhere()
    woken = parts.emptied
    # Within a tick (a second), not at Scrapy's next idle check (5 s), the engine is woken
    # and asks again; while the other process holds requests, again a tick later.
    parts.clock.advance(1.0)
    assert parts.emptied == woken + 1
    assert parts.room.pending_elsewhere()
    parts.clock.advance(1.0)
    assert parts.emptied == woken + 2
    held_place.elsewhere = False  # the other process's requests went
    assert not parts.room.pending_elsewhere()
    parts.clock.advance(10)
    assert parts.emptied == woken + 2  # the tick stopped: nothing more to ask


def test_a_failed_take_leaves_the_requests_until_the_place_names_them_again() -> None:
    held_place = DurableHeld()
    parts = Parts(ok(), held=held_place)
    held_place.failing_takes = 1
    held = parts.hold("/1")
    parts.advance(1)
    assert parts.state() is not None
    assert parts.crawled == []  # the take failed: still in the place, not lost
    assert len(held_place) == 1
    parts.room.adopted({ORIGIN: 1})  # the next good heartbeat names it again
    parts.clock.advance(0)
    assert parts.crawled == [held]


def test_memory_store_evicts_least_recently_used_and_expired_entries() -> None:
    clock = task.Clock()
    store = MemoryStore(size=2, entry_ttl=100, clock=clock.seconds)
    for name in ("a", "b"):
        store.put(name, StoredRobots({"n": name}))
    assert store.get("a").result is not None  # "a" is now the most recently used
    store.put("c", StoredRobots({"n": "c"}))
    assert store.get("b").result is None
    assert len(store) == 2
    clock.advance(100)
    assert store.get("a").result is None and store.get("c").result is None
    assert len(store) == 0


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("REP_STORE_TIMEOUT", True),
        ("REP_LEASE_TTL", True),
        ("REP_HELD_OWNER_TTL", 0),
        ("REP_HELD_OWNER_TTL", "soon"),
        ("REP_STORE_TIMEOUT", 0),
        ("REP_MEMORY_STORE_SIZE", 0),
        ("REP_MEMORY_STORE_SIZE", 1.5),
        ("REP_MEMORY_STORE_SIZE", float("inf")),
        ("REP_STORE_PREFIX", 3),
        ("REP_STORE", 3),
        ("REP_GIVE_UP_AFTER", -1),
        ("REP_GIVE_UP_AFTER", 2.5),
    ],
)
def test_one_validator_rejects_every_bad_rep_setting(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=name):
        MiddlewareSettings.from_settings(Settings({name: value}))


def test_store_and_lease_defaults() -> None:
    config = MiddlewareSettings.from_settings(Settings())
    assert config.lease_ttl == 30
    assert config.store.url == "memory://"
    assert config.store.memory_size == 10000
    assert config.limits.give_up_after == 3


def test_idle_crawl_gives_up_after_the_failures_and_keeps_the_unreachable_entry() -> None:
    parts = Parts(*[error(500)] * 10)
    parts.hold()
    waiter = parts.room.wait(ORIGIN)
    times = attempt_times([500, 500], LIMITS)
    parts.advance(times[1] + 1)  # two failures: not yet
    parts.room.give_up()
    assert parts.room.busy() and not waiter.called
    parts.advance(times[2] - times[1])  # the third failure
    parts.room.give_up()
    assert "failed 3 times in a row (HTTP 500)" in str(failure_of(waiter))
    assert parts.stats["robotstxt/gave_up"] == 1
    assert parts.stats["robotstxt/held_dropped"] == 2
    assert not parts.room.busy() and parts.crawled == []
    parts.advance(600)
    # Nothing waits: no more fetches after the third.
    assert parts.fetcher.times == attempt_times([500, 500], LIMITS)
    # The store keeps "unreachable since START" (not "no robots.txt"): a later crawl retries
    # and the 30-day clock runs on.
    stored: list[StoredRobots | None] = []
    parts.store.get(ORIGIN).addCallback(stored.append)
    assert stored[0] is not None
    entry = Entry.from_meta(stored[0].meta)
    assert entry is not None and entry.outcome == "unreachable"
    assert (entry.failures, entry.unreachable_since, entry.good) == (3, START, None)


def test_give_up_with_a_durable_place_keeps_the_held_requests_for_the_next_run() -> None:
    held_place = DurableHeld()
    parts = Parts(*[error(500)] * 10, held=held_place)
    held = [parts.hold("/1"), parts.hold("/2")]
    waiter = parts.room.wait(ORIGIN)  # an engine.download caller: this process's only
    parts.advance(attempt_times([500, 500], LIMITS)[-1] + 1)
    parts.room.give_up()
    assert held_place.kept == held
    assert parts.stats["robotstxt/gave_up"] == 1
    assert parts.stats["robotstxt/held_kept_for_next_run"] == 2
    assert parts.stats["robotstxt/held_dropped"] == 1  # the waiter
    assert "failed 3 times in a row" in str(failure_of(waiter))
    assert not parts.room.busy()  # the crawl may close
    parts.let_go()
    # Every held request counted once per fate.
    assert parts.stats["robotstxt/held"] == 2
    assert parts.stats.get("robotstxt/held_persisted", 0) == 0


def test_failures_of_an_earlier_run_do_not_give_up_before_an_attempt_of_this_run() -> None:
    store = MemoryStore(clock=lambda: 0.0)
    earlier = Parts(*[error(503)] * 3, store=store)
    earlier.hold()
    times = attempt_times([503, 503, 503], LIMITS)  # 0, 5, 15; the next due at 35 s
    earlier.advance(times[2] + 1)
    assert earlier.fetcher.times == times[:3]
    # The job is resumed 30 s after its start; the site has recovered.
    resumed = Parts(ok(), store=store, start=START + 30)
    request = resumed.hold()
    resumed.clock.advance(0)
    resumed.room.give_up()  # the first spider_idle
    assert resumed.stats.get("robotstxt/gave_up", 0) == 0 and resumed.room.busy()
    assert resumed.fetcher.times == []  # no new burst: the stored retry_at is kept
    resumed.advance(times[3] - 30 + 0.25)
    assert resumed.fetcher.times == [times[3]]  # times since the first run started
    assert resumed.crawled == [request]


def test_an_attempt_of_this_run_that_fails_lets_the_idle_crawl_give_up() -> None:
    store = MemoryStore(clock=lambda: 0.0)
    earlier = Parts(*[error(503)] * 3, store=store)
    earlier.hold()
    earlier.advance(16)
    resumed = Parts(error(503), store=store, start=START + 30)
    resumed.hold()
    waiter = resumed.room.wait(ORIGIN)
    resumed.clock.advance(0)
    resumed.room.give_up()
    assert resumed.stats.get("robotstxt/gave_up", 0) == 0 and not waiter.called
    resumed.advance(5.25)  # its own attempt, at the stored retry_at, fails too
    resumed.room.give_up()
    assert resumed.stats["robotstxt/gave_up"] == 1
    assert "failed 4 times in a row" in str(failure_of(waiter))


def test_an_origin_is_given_up_on_the_tick_while_others_are_waited_for_not_when_disabled() -> None:
    # Giving up does not wait for the crawl to be idle: another origin still being resolved
    # (b.test, whose fetch never ends) keeps the crawl busy, a.test is given up all the same.
    b_answer: Deferred[Reply] = Deferred()
    parts = Parts(error(500), b_answer, error(500), error(500))
    waiter = parts.room.wait(ORIGIN)
    b = parts.room.wait("http://b.test")
    parts.advance(attempt_times([500, 500], LIMITS)[-1] + 1.5)
    assert parts.stats["robotstxt/gave_up"] == 1
    assert "failed 3 times in a row" in str(failure_of(waiter))
    assert not b.called and parts.room.busy()
    b_answer.callback(ok())
    assert b.called and not parts.room.busy()
    disabled = Parts(*[error(500)] * 10, limits=replace(LIMITS, give_up_after=0))
    disabled.hold()
    disabled.advance(attempt_times([500, 500], LIMITS)[-1] + 1)
    disabled.room.give_up()
    assert disabled.stats["robotstxt/gave_up"] == 0 and disabled.room.busy()


def test_the_drop_path_delivers_later_counts_and_sums_up(caplog: pytest.LogCaptureFixture) -> None:
    from scrapy_rep.crawl._drops import SUMMARY_ORIGINS, Drops
    from scrapy_rep.crawl._events import Why
    from scrapy_rep.crawl.exceptions import RequestDropped

    clock, stats = task.Clock(), Stats()
    delivered: list[tuple[Request, Failure]] = []
    signalled: list[Request] = []
    drops = Drops(
        Events(stats, lambda: None),
        clock,
        deliver=lambda request, failure: delivered.append((request, failure)),
        signal_dropped=signalled.append,
    )
    with_errback = Request(ORIGIN + "/x", errback=lambda failure: None)
    why = Why("disallowed", "Forbidden by robots.txt", ORIGIN, rule="Disallow: / (line 2)")
    exc = drops.refuse(with_errback, why, "before_schedule")
    assert isinstance(exc, RequestDropped) and str(exc) == "Forbidden by robots.txt"
    assert delivered == [] and drops.pending()  # never inside the signal handler
    clock.advance(0)
    ((request, failure),) = delivered
    assert request is with_errback and failure.value.reason == "disallowed"
    assert not drops.pending()
    # At the final gate Scrapy delivers the raised exception itself; without an errback there
    # is nothing to deliver; a duplicate gets request_dropped only.
    drops.refuse(with_errback, why, "before_download")
    drops.refuse(Request(ORIGIN + "/y"), why, "before_schedule")
    drops.duplicate(with_errback)
    clock.advance(0)
    assert len(delivered) == 1 and signalled == [with_errback]
    assert stats["robotstxt/forbidden"] == 3
    assert stats["robotstxt/forbidden_before_schedule"] == 2
    assert stats["robotstxt/forbidden_duplicate"] == 1
    for i in range(SUMMARY_ORIGINS + 2):
        origin = f"http://o{i}.test"
        drops.drop(origin, [Request(origin)] * (i + 1), Why("gave_up", "gone", origin, "failing"))
    with caplog.at_level(logging.INFO, "scrapy_rep"):
        drops.summarize()
    (summary,) = [r.getMessage() for r in caplog.records if "scrapy-rep dropped" in r.getMessage()]
    assert summary.startswith("scrapy-rep dropped 81 request(s), not downloaded, from 13 origin(s)")
    assert "http://o11.test: 12 gave_up (failing)" in summary
    assert "http://o0.test" not in summary and "http://o1.test:" not in summary
    assert summary.count("\n") == SUMMARY_ORIGINS


def test_the_closing_summary_counts_each_reason_under_its_own_words(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # As in the demo: 4 requests disallowed (by different rules), 3 links of a nofollow page.
    # Each reason counted apart; words that may not hold for all of a reason say "first".
    from scrapy_rep.crawl._drops import Drops
    from scrapy_rep.crawl._events import Why

    drops = Drops(Events(Stats(), lambda: None), task.Clock())
    for path, line in (("/private/", 3), ("/*.pdf$", 5), ("/private/", 3), ("/tmp/", 6)):
        rule = f"Disallow: {path} (line {line})"
        why = Why("disallowed", "Forbidden by robots.txt", ORIGIN, rule=lambda rule=rule: rule)
        drops.refuse(Request(ORIGIN + path), why, "before_schedule")
    drops.filtered(ORIGIN, 3, f"the page {ORIGIN}/search.html says nofollow", "nofollow")
    drops.filtered("http://b.test", 2, "the page http://b.test/ says nofollow", "nofollow")
    drops.filtered("http://b.test", 1, "the page http://b.test/ says nofollow", "nofollow")
    # rel="nofollow" links are a reason of their own, counted apart.
    drops.filtered("http://c.test", 1, "rel=nofollow links of http://c.test/", "rel_nofollow")
    drops.filtered("http://c.test", 1, "the page http://c.test/ says nofollow", "nofollow")
    usage = Why("usage", "Content may not be used for train-ai", "http://c.test", rule="line 7")
    drops.refuse(Request("http://c.test/blog/"), usage, "before_schedule")
    drops.refuse(Request("http://c.test/blog/2"), usage, "before_schedule")
    with caplog.at_level(logging.INFO, "scrapy_rep"):
        drops.summarize()
    (summary,) = [r.getMessage() for r in caplog.records if "scrapy-rep dropped" in r.getMessage()]
    assert summary.splitlines() == [
        "scrapy-rep dropped 14 request(s), not downloaded, from 3 origin(s):",
        f"  {ORIGIN}: 7 = 4 disallowed (first: Forbidden by robots.txt: Disallow: /private/ "
        f"(line 3)) + 3 nofollow (the page {ORIGIN}/search.html says nofollow)",
        "  http://c.test: 4 = 2 usage (Content may not be used for train-ai: line 7) + "
        "1 rel_nofollow (rel=nofollow links of http://c.test/) + "
        "1 nofollow (the page http://c.test/ says nofollow)",
        "  http://b.test: 3 nofollow (the page http://b.test/ says nofollow)",
    ]


def test_a_refusals_explanation_is_worked_out_only_for_a_line_a_handler_writes() -> None:
    # Scrapy filters LOG_LEVEL in its handler: the logger is enabled for DEBUG even at INFO,
    # so the explanation (a second match, with reasons) must wait until a line is written.
    import io

    from scrapy_rep.crawl._events import Why, logger

    asked: list[int] = []

    def explain() -> str:
        asked.append(1)
        return "Disallow: /x (line 2)"

    events = Events(Stats(), lambda: None)
    why = Why("disallowed", "Forbidden by robots.txt", ORIGIN, rule=explain)
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.setLevel(logging.INFO)
    saved = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        events.refused(Request(ORIGIN + "/x"), why, "before_schedule")
        assert logger.isEnabledFor(logging.DEBUG) and asked == [] and written.getvalue() == ""
        handler.setLevel(logging.DEBUG)
        events.refused(Request(ORIGIN + "/x"), why, "before_schedule")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
    assert asked == [1]
    assert "(Disallow: /x (line 2))" in written.getvalue()


def test_a_fetch_that_raises_is_a_counted_failure_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # What a site sent broke the fetch's own code (before: the resolution failed outright and
    # was retried every REP_RETRY_DELAY for ever, never counted, never given up).
    broken = [fail(ValueError("could not convert string to float: '\u00b2'")) for _ in range(3)]
    parts = Parts(*broken)
    waiter = parts.room.wait(ORIGIN)
    parts.advance(attempt_times([500, 500], LIMITS)[-1] + 1.5)
    assert parts.fetcher.times == attempt_times([500, 500], LIMITS)
    assert "failed 3 times in a row (internal error: ValueError" in str(failure_of(waiter))
    assert parts.stats["robotstxt/internal_error"] == 3
    assert parts.stats["robotstxt/gave_up"] == 1
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "counted as a failed fetch" in errors[0].getMessage()


class _NeverKnown:
    """A usage document whose resolution never ends (what the ``Room`` may wait for)."""

    name = "tdmrep.json"

    def wait(self, origin: str, trigger: Request | None) -> Deferred[Any]:
        return Deferred()


def test_a_hold_timeout_names_what_the_expired_requests_waited_for(
    caplog: pytest.LogCaptureFixture,
) -> None:
    parts = Parts(ok(), hold_timeout=10)
    parts.room.wait(ORIGIN)  # robots.txt answers; tdmrep.json never does
    parts.advance(1)
    parts.room.hold(ORIGIN, Request(ORIGIN + "/1"), until=_NeverKnown())
    parts.advance(11)
    assert parts.stats["robotstxt/held_dropped"] == 1
    assert "its tdmrep.json could not be fetched within REP_HOLD_TIMEOUT=10s" in caplog.text


def test_a_robots_txt_that_never_answers_is_given_up_within_150_s_with_the_defaults() -> None:
    # Every attempt ends at REP_FETCH_TIMEOUT (the real crawl in test_scrapy_parts.py shows the
    # fetch gets that timeout, not DOWNLOAD_TIMEOUT's 180 s); with every REP_* default, the
    # third one fails at 10 + 30 + 10 + 60 + 10 = 120 s and the origin is given up then.
    defaults = MiddlewareSettings.from_settings(Settings())
    attempts: list[Deferred[Reply]] = [Deferred() for _ in range(3)]
    parts = Parts(*attempts, limits=defaults.limits)
    parts.hold()
    waiter = parts.room.wait(ORIGIN)
    timed_out = Fetch("unreachable", error="timed out"), None
    for number, attempt in enumerate(attempts, 1):
        while len(parts.fetcher.times) < number:
            parts.clock.advance(0.25)
            assert parts.clock.seconds() - START < 150, parts.fetcher.times
        parts.clock.advance(defaults.fetch_timeout)
        attempt.callback(timed_out)
    while not waiter.called:
        parts.clock.advance(0.25)
        assert parts.clock.seconds() - START < 150
    assert parts.fetcher.times == [0, 40, 110]
    assert parts.stats["robotstxt/gave_up"] == 1
    assert "failed 3 times in a row (timed out)" in str(failure_of(waiter))
    parts.advance(600)
    assert len(parts.fetcher.times) == 3  # nothing waits: no fourth attempt

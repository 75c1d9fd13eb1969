"""The one admission decision (crawl/_admission.py), table-driven on ``task.Clock``.

Every combination of robots.txt state, usage document, pause and Crawl-delay gets the answer
the stated order gives (module docstring of ``_admission``): robots.txt first, certain drops
before any wait, waits for missing documents before a usage drop, the pause last, go with the
Crawl-delay applied. The parts are the ones ``build_components`` wires for the middleware, with the
crawl's real verdicts; milliseconds for the whole table.
"""

from __future__ import annotations

import itertools
import pickle
import tracemalloc
from dataclasses import replace
from typing import Any

import pytest
from scrapy import Spider
from scrapy.http import Request
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler
from twisted.internet import task
from twisted.internet.defer import Deferred

from scrapy_rep.core.policy import Fetch, Limits, record
from scrapy_rep.core.purpose import NO_PURPOSE, Purpose
from scrapy_rep.core.tokens import CrawlerTokens
from scrapy_rep.crawl._admission import ADMITTED, FIRST, GO, NO_PLACE, Drop, Token, Wait
from scrapy_rep.crawl._drops import Drops
from scrapy_rep.crawl._events import Events
from scrapy_rep.crawl._pauses import PROBE_META, route
from scrapy_rep.crawl._settings import MiddlewareSettings
from scrapy_rep.crawl._slots import Slots
from scrapy_rep.crawl._verdict import Verdicts
from scrapy_rep.crawl.robotstxt_middleware import Components, build_components
from scrapy_rep.storage.held import MemoryHeld
from scrapy_rep.storage.results import MemoryStore

ORIGIN = "http://a.test"
URL = ORIGIN + "/page"
START = 1_000_000.0
ALLOWING = b'[{"location": "/", "tdm-reservation": 0}]'
REFUSING = b'[{"location": "/", "tdm-reservation": 1}]'
DELAYS = {"none": b"", "applied": b"Crawl-delay: 3\n", "skip": b"Crawl-delay: 100\n"}

OK = Fetch("ok", 200)

ROBOTS = ["unknown", "fetching", "rules", "allow-all", "unreachable"]
USAGE = ["not needed", "unknown", "allowing", "refusing"]
PAUSE = ["none", "paused", "probe due"]
DELAY = ["none", "applied", "skip"]


class Harness:
    """The parts with the crawl's verdicts, and states put in by hand."""

    def __init__(self, purpose: Purpose = NO_PURPOSE, slots: Slots | None = None) -> None:
        self.clock = task.Clock()
        self.clock.advance(START)
        crawler = get_crawler(Spider, {"USER_AGENT": "TestBot/1.0"})
        events = Events(crawler.stats, lambda: None)
        self.delays: list[tuple[Request, float]] = []
        defaults = MiddlewareSettings.from_settings(Settings())
        config = replace(defaults, parsed_cache_size=100, purpose=purpose)
        self.verdicts = Verdicts(
            crawler,
            CrawlerTokens.from_settings(crawler.settings),
            events,
            Drops(events, self.clock),
            replace(config, crawl_delay_max=10.0, crawl_delay_above_max="skip"),
        )
        self.pending: dict[str, Deferred[Any]] = {}
        # Requests the holds sent on to the scheduler (engine.crawl).
        self.crawled: list[Request] = []
        self.parts: Components = build_components(
            clock=self.clock,
            store=MemoryStore(clock=self.clock.seconds),
            fetcher_for=lambda kind: self,
            events=events,
            config=config,
            owner="me",
            crawl=self.crawled.append,
            closing=lambda: False,
            crawl_delay=self.verdicts.crawl_delay_of,
            judge=self.verdicts,
            apply_delay=lambda request, delay: self.delays.append((request, delay)),
            slots=slots,
        )
        self.admission = self.parts.admission
        self.stats = crawler.stats

    def fetch(self, url: str, via: Request | None = None) -> Deferred[Any]:
        """Every fetch stays pending (a robots.txt being fetched)."""
        found: Deferred[Any] = Deferred()
        self.pending[url] = found
        return found

    def finish(self, body: bytes | None = None) -> None:
        """Answer the fetches left pending (their resolutions end, as a crawl's do): 404, or
        ``body`` with a 200."""
        pending, self.pending = self.pending, {}
        for found in pending.values():
            found.callback((Fetch("no_robots", 404), None) if body is None else (OK, body))

    def now(self) -> float:
        return self.clock.seconds()

    def robots(self, kind: str, delay: str = "none", extra: bytes = b"") -> None:
        cache = self.parts.resolver._cache
        now = self.now()
        if kind == "fetching":
            self.parts.resolver.resolve(ORIGIN, None)
        elif kind == "rules":
            body = b"User-agent: *\nDisallow: /private\n" + DELAYS[delay] + extra
            entry = record(None, Fetch("ok", 200), now, Limits())
            cache.read(ORIGIN, entry, body, None, now)
        elif kind == "allow-all":
            entry = record(None, Fetch("no_robots", 404), now, Limits())
            cache.read(ORIGIN, entry, None, None, now)
        elif kind == "unreachable":
            entry = record(None, Fetch("unreachable", 503, error="HTTP 503"), now, Limits())
            cache.read(ORIGIN, entry, None, None, now)

    def tdmrep(self, kind: str) -> None:
        if kind not in ("allowing", "refusing"):
            return
        (source,) = self.parts.documents
        now = self.now()
        entry = record(None, Fetch("ok", 200), now, Limits())
        body = ALLOWING if kind == "allowing" else REFUSING
        source.resolver._cache.read(ORIGIN, entry, body, None, now)

    def pause(self, kind: str) -> None:
        if kind == "none":
            return
        answer = Request(ORIGIN + "/answered")
        assert self.parts.pauses.answered(route(ORIGIN, answer), answer, 503, None)
        if kind == "probe due":
            self.clock.advance(10)  # past the pause (REP_PAUSE_DELAY = 2 s)


def expected(robots: str, usage: str, pause: str, delay: str) -> str:
    """The stated order, as words."""
    if robots in ("unknown", "fetching", "unreachable"):
        return "wait robots.txt"
    if robots == "rules" and delay == "skip":
        return "drop crawl_delay"
    if usage == "unknown":
        return "wait tdmrep.json"
    if usage == "refusing":
        return "drop usage"
    if pause == "paused":
        return "wait pause"
    return "go"


def answered(decision: Any) -> str:
    if decision is GO:
        return "go"
    if isinstance(decision, Wait):
        return f"wait {decision.awaited.name}"
    if isinstance(decision, Drop):
        return f"drop {decision.why.reason}"
    return repr(decision)


CASES = list(itertools.product(ROBOTS, USAGE, PAUSE, DELAY))


@pytest.mark.parametrize("at", ["gate", "release", "download"])
def test_every_combination_gets_the_answer_of_the_stated_order(at: str) -> None:
    wrong = []
    for robots, usage, pause, delay in CASES:
        harness = Harness(NO_PURPOSE if usage == "not needed" else Purpose(("train-ai",)))
        harness.robots(robots, delay)
        harness.tdmrep(usage)
        harness.pause(pause)
        request = Request(URL)
        decision = harness.admission.decide(request, ORIGIN, harness.now(), at)  # type: ignore[arg-type]
        want = expected(robots, usage, pause, delay)
        harness.finish()
        if answered(decision) != want:
            wrong.append(((robots, usage, pause, delay), answered(decision), want))
            continue
        if want == "go":
            # The token is carried; the probe is marked; the delay is applied before download.
            assert isinstance(request.meta[ADMITTED], Token)
            assert (PROBE_META in request.meta) == (pause == "probe due")
            applied = robots == "rules" and delay == "applied" and at == "download"
            assert harness.delays == ([(request, 3.0)] if applied else [])
        else:
            assert ADMITTED not in request.meta and harness.delays == []
    assert wrong == []
    assert len(CASES) == 180


def test_a_disallowed_url_is_dropped_before_any_wait() -> None:
    harness = Harness(Purpose(("train-ai",)))
    harness.robots("rules")
    harness.pause("paused")  # and tdmrep.json unknown
    decision = harness.admission.decide(Request(ORIGIN + "/private/1"), ORIGIN, START, "gate")
    assert answered(decision) == "drop disallowed"
    assert harness.pending == {}  # tdmrep.json not fetched for it


def test_a_refusal_no_pending_document_can_override_drops_without_waiting() -> None:
    # robots.txt's Content-Usage combines most restrictively (SPEC G1): tdmrep.json, still
    # unknown, cannot lift it.
    harness = Harness(Purpose(("train-ai",)))
    harness.robots("rules", extra=b"Content-Usage: train-ai=n\n")
    decision = harness.admission.decide(Request(URL), ORIGIN, START, "gate")
    assert answered(decision) == "drop usage"


def test_a_refusal_within_a_family_waits_for_the_documents_that_may_supersede_it() -> None:
    # tdmrep.json refusing, robots.txt silent: known, so it drops (nothing pending); unknown,
    # the request waits for it before any usage drop.
    harness = Harness(Purpose(("train-ai",)))
    harness.robots("rules")
    assert answered(harness.admission.decide(Request(URL), ORIGIN, START, "gate")) == (
        "wait tdmrep.json"
    )


def test_an_unknown_origins_first_request_goes_on_unresolved_at_the_gate_only() -> None:
    harness = Harness()
    harness.parts.room.open(MemoryHeld())  # the spider opens; held requests in memory
    first, second = Request(URL), Request(URL + "/2")
    assert harness.admission.decide(first, ORIGIN, START, "gate") is FIRST
    assert harness.admission.first(first)
    # The origin is claimed: the next one waits; a released one never goes unresolved.
    assert answered(harness.admission.decide(second, ORIGIN, START, "gate")) == "wait robots.txt"
    third = Request(URL + "/3")
    assert answered(harness.admission.decide(third, ORIGIN, START, "release")) == (
        "wait robots.txt"
    )


def test_a_current_token_is_one_comparison_and_a_changed_state_judges_again() -> None:
    harness = Harness(Purpose(("train-ai",)))
    harness.robots("rules")
    harness.tdmrep("allowing")
    request = Request(URL)
    assert harness.admission.decide(request, ORIGIN, START, "gate") is GO
    token = request.meta[ADMITTED]
    again = Request(URL + "/2")
    assert harness.admission.decide(again, ORIGIN, START, "gate") is GO
    assert again.meta[ADMITTED] is token  # made once per combination of states
    # tdmrep.json changes to refusing while the request is scheduled: refused at download.
    harness.tdmrep("refusing")
    assert answered(harness.admission.decide(request, ORIGIN, START, "download")) == "drop usage"


def test_the_token_names_the_copies_and_pickles_to_a_plain_string() -> None:
    harness = Harness(Purpose(("train-ai",)))
    harness.robots("rules")
    harness.tdmrep("allowing")
    request = Request(URL)
    harness.admission.decide(request, ORIGIN, START, "gate")
    token = request.meta[ADMITTED]
    generation, contents = token.split(":")
    robots_id, tdmrep_id = contents.split(",")
    assert int(generation, 16) > 0 and len(robots_id) == len(tdmrep_id) == 16
    state, known = harness.admission.judged(request) or (None, ())
    assert state is not None and state.content == robots_id
    assert [document.content for _, document in known] == [tdmrep_id]
    # Through JOBDIR or Redis: a plain string, equal to the token; but a verdict belongs to the
    # request object it was given for: the restored request is judged again, counted once.
    restored = pickle.loads(pickle.dumps(request.meta))[ADMITTED]
    assert type(restored) is str and restored == token
    later = Request(URL, meta={ADMITTED: restored})
    assert harness.admission.judged(later) is None
    assert harness.admission.decide(later, ORIGIN, START, "download") is GO
    assert later.meta[ADMITTED] is token  # the page level has what it was judged by
    assert harness.admission.judged(later) == harness.admission.judged(request)
    assert harness.admission.decide(later, ORIGIN, START, "download") is GO
    assert harness.stats.get_value("robotstxt/rejudged") == 1


def test_a_released_request_robots_txt_refuses_is_dropped_at_release_judged_once(
    matched: list[str],
) -> None:
    # Held while robots.txt was fetched, then released: the one it disallows is dropped there,
    # as the gate drops it (errback, stats), not sent to the scheduler to be judged again at
    # the gate; the one it allows goes with its token (judged once too).
    harness = Harness()
    harness.robots("fetching")
    refused, allowed = Request(ORIGIN + "/private/1"), Request(URL)
    for request in (refused, allowed):
        decision = harness.admission.decide(request, ORIGIN, START, "gate")
        assert answered(decision) == "wait robots.txt"
        harness.parts.room.hold(ORIGIN, request, until=decision.awaited)
    harness.finish(b"User-agent: *\nDisallow: /private\n")
    harness.clock.advance(0)  # released on the next reactor turn
    assert harness.crawled == [allowed]
    assert ADMITTED not in refused.meta and ADMITTED in allowed.meta
    assert matched == [refused.url, allowed.url]
    stats = harness.stats.get_stats()
    assert stats["robotstxt/forbidden"] == stats["robotstxt/forbidden_before_schedule"] == 1
    assert stats["robotstxt/released"] == 2
    # The gate, for the one sent on: its token, one comparison, no match.
    assert harness.admission.decide(allowed, ORIGIN, START, "gate") is GO
    assert matched == [refused.url, allowed.url]


def test_the_same_bytes_have_the_same_content_id_in_another_generation() -> None:
    first, second = Harness(), Harness()
    first.robots("rules")
    second.robots("rules")
    one = first.parts.resolver.peek(ORIGIN)
    two = second.parts.resolver.peek(ORIGIN)
    assert one is not None and two is not None
    assert one.generation != two.generation and one.content == two.content


def test_rep_dont_pause_is_never_waiting_for_a_pause() -> None:
    harness = Harness()
    harness.robots("rules")
    harness.pause("paused")
    request = Request(URL, meta={"rep_dont_pause": True})
    assert harness.admission.decide(request, ORIGIN, START, "gate") is GO
    assert not harness.admission.leaving(request)


def test_the_last_look_sends_back_only_an_admitted_request_whose_route_paused() -> None:
    harness = Harness()
    harness.robots("rules")
    request = Request(URL)
    assert harness.admission.decide(request, ORIGIN, START, "download") is GO
    assert not harness.admission.leaving(request)
    harness.pause("paused")
    assert harness.admission.leaving(request)
    assert not harness.admission.leaving(Request(URL))  # not admitted here


def test_a_slot_wait_the_close_ended_is_held_for_no_place_once() -> None:
    """Step 6: a request over its slot's concurrency waits for a place (the Deferred
    ``Slots.enter`` gives, asked by the room's last look); one whose wait the crawl's close
    ended is told at the gate to wait for ``NO_PLACE`` (held as the crawl closes), once."""
    first, second, third = (Request(f"{URL}/{i}") for i in range(3))
    slots = Slots(
        slot_of=lambda request: ("a.test", None),
        limit_of=lambda slot: (2, False),
        mark=lambda slot, request, waiting: None,
        in_flight=lambda request: True,
        events=Events(get_crawler(Spider).stats, lambda: None),
    )
    harness = Harness(slots=slots)
    harness.robots("rules")
    assert slots.enter(first) is None
    assert slots.enter(second) is None
    waiting = slots.enter(third)
    assert waiting is not None and not waiting.called and slots.busy()
    harness.pause("paused")
    assert harness.admission.decide(third, ORIGIN, START, "download") == Wait(harness.parts.pauses)
    # A wait the crawl's close ended: back at the gate it is told to wait for a place (held as
    # the crawl closes), once; any other request is judged as ever.
    harness.admission.send_back(second, closing=True)
    assert harness.admission.decide(second, ORIGIN, START, "gate") == Wait(NO_PLACE)
    assert harness.admission.decide(second, ORIGIN, START, "gate") == Wait(harness.parts.pauses)


def test_deciding_a_current_token_allocates_nothing_per_request() -> None:
    harness = Harness()
    harness.robots("rules")
    requests = [Request(f"{URL}/{i}") for i in range(2000)]
    for request in requests:
        assert harness.admission.decide(request, ORIGIN, START, "gate") is GO
    decide = harness.admission.decide
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for request in requests:
        decide(request, ORIGIN, START, "download")
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert grown < 2000 * 8  # less than a pointer per request: nothing kept per request

"""The gates' verdicts (crawl/_verdict.py) on a stub crawler: milliseconds per case, no crawl.

What a real crawl adds (errbacks delivered through Scrapy's scraper, the request_dropped
signal sent by the engine's signal manager) is in test_errbacks.py."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import pytest
from scrapy import Spider
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request
from scrapy.utils.test import get_crawler
from test_admission import ORIGIN as TABLE_ORIGIN
from test_admission import URL as TABLE_URL
from test_admission import Harness as Table
from test_admission import answered
from twisted.internet import task

from scrapy_rep.core.policy import Entry, Fetch, Good, Limits, record
from scrapy_rep.core.purpose import NO_PURPOSE, Purpose, Refusal
from scrapy_rep.core.robots_file import RobotsTxt
from scrapy_rep.core.sources import usage_of
from scrapy_rep.core.tdmrep import TDMREP
from scrapy_rep.core.tokens import CrawlerTokens
from scrapy_rep.core.usage import UsagePrefs
from scrapy_rep.crawl._cache import ROBOTS, OriginCache, OriginState, usage_kind
from scrapy_rep.crawl._drops import Drops
from scrapy_rep.crawl._events import Events
from scrapy_rep.crawl._settings import MiddlewareSettings
from scrapy_rep.crawl._verdict import Known, Verdicts
from scrapy_rep.crawl.exceptions import RequestDropped

ORIGIN = "http://site.test"
NOW = 1_000_000.0
BODY = b"User-agent: *\nDisallow: /private\nContent-Usage: /no-ai/ train-ai=n\n"


def _state(body: bytes = BODY) -> OriginState[RobotsTxt]:
    entry = Entry(NOW, "ok", 200, good=Good("ok", NOW, NOW + 86400, 200))
    return OriginCache(ROBOTS, Limits(), 10).install(ORIGIN, entry, RobotsTxt.parse(body), NOW)


class Gate:
    def __init__(self, purpose: Purpose = NO_PURPOSE) -> None:
        crawler = get_crawler(Spider, {"USER_AGENT": "TestBot/1.0"})
        self.stats = crawler.stats
        self.clock = task.Clock()
        self.delivered: list[tuple[Request, Any]] = []
        self.signalled: list[Request] = []
        events = Events(crawler.stats, lambda: None)
        drops = Drops(
            events,
            self.clock,
            deliver=lambda request, failure: self.delivered.append((request, failure)),
            signal_dropped=self.signalled.append,
        )
        tokens = CrawlerTokens.from_settings(crawler.settings)
        config = replace(MiddlewareSettings.from_settings(crawler.settings), purpose=purpose)
        self.verdicts = Verdicts(crawler, tokens, events, drops, config)

    def stat(self, name: str) -> Any:
        return self.stats.get_value(name, 0)


def at_gate(verdicts: Verdicts, state: OriginState[RobotsTxt], request: Request) -> None:
    """What the admission does with the verdicts before scheduling (robots.txt known)."""
    why = verdicts.refusal(state, request) or verdicts.usage_refusal(state, request, ())
    if why is not None:
        verdicts.refuse(request, why, "before_schedule")


def at_download(verdicts: Verdicts, state: OriginState[RobotsTxt], request: Request) -> None:
    why = verdicts.refusal(state, request) or verdicts.usage_refusal(state, request, ())
    if why is not None:
        verdicts.refuse(request, why, "before_download")


def _errback(failure: object) -> None:
    """A request's errback (its presence makes the drop path deliver)."""


def test_allowed_requests_pass_both_gates() -> None:
    gate = Gate()
    at_gate(gate.verdicts, _state(), Request(ORIGIN + "/page"))
    at_download(gate.verdicts, _state(), Request(ORIGIN + "/page"))
    assert gate.stat("robotstxt/forbidden") == 0


def test_a_disallowed_request_is_dropped_once_then_a_duplicate_is_what_the_dupefilter_gives() -> (
    None
):
    gate = Gate()
    request = Request(ORIGIN + "/private/1", errback=_errback)
    with pytest.raises(RequestDropped, match=r"^Forbidden by robots\.txt$") as dropped:
        at_gate(gate.verdicts, _state(), request)
    assert dropped.value.reason == "disallowed" and dropped.value.origin == ORIGIN
    gate.clock.advance(0)
    assert [r for r, _ in gate.delivered] == [request]
    again = Request(ORIGIN + "/private/1", errback=_errback)
    with pytest.raises(IgnoreRequest) as duplicate:
        at_gate(gate.verdicts, _state(), again)
    assert not isinstance(duplicate.value, RequestDropped)
    gate.clock.advance(0)
    assert len(gate.delivered) == 1 and gate.signalled == [again]
    assert gate.stat("robotstxt/forbidden") == 1
    assert gate.stat("robotstxt/forbidden_duplicate") == 1
    # dont_filter passes the dupefilter: dropped and told again.
    with pytest.raises(RequestDropped):
        at_gate(gate.verdicts, _state(), Request(ORIGIN + "/private/1", dont_filter=True))
    assert gate.stat("robotstxt/forbidden") == 2


def test_the_final_gate_raises_and_leaves_the_errback_to_scrapy() -> None:
    gate = Gate()
    with pytest.raises(RequestDropped):
        at_download(gate.verdicts, _state(), Request(ORIGIN + "/private/2", errback=_errback))
    gate.clock.advance(0)
    assert gate.delivered == []
    assert gate.stat("robotstxt/forbidden_before_download") == 1


def test_a_declared_purpose_refuses_what_the_usage_lines_refuse() -> None:
    gate = Gate(Purpose(("train-ai",)))
    with pytest.raises(RequestDropped, match="Content may not be used for train-ai") as dropped:
        at_gate(gate.verdicts, _state(), Request(ORIGIN + "/no-ai/x"))
    assert dropped.value.reason == "usage"
    assert gate.stat("robotstxt/usage_forbidden/train-ai") == 1
    at_gate(gate.verdicts, _state(), Request(ORIGIN + "/ok"))  # nothing refuses it
    statements = gate.verdicts.statements(_state(), Request(ORIGIN + "/private/x"), ())
    assert usage_of(statements)["train-ai"] is None


def _tdmrep(body: bytes) -> Known:
    """tdmrep.json of ``ORIGIN``, read from ``body`` (the usage documents the gate knows)."""
    entry = Entry(NOW, "ok", 200, good=Good("ok", NOW, NOW + 86400, 200))
    cache = OriginCache(usage_kind(TDMREP), Limits(), 10)
    return [(TDMREP, cache.install(ORIGIN, entry, TDMREP.parse(body), NOW))]


#: robots.txt silent on train-ai; tdmrep.json: not reserved under /open/, reserved under /closed/.
SILENT = b"User-agent: *\nDisallow: /private\n"
TDM_OPEN = (
    b'[{"location": "/open/", "tdm-reservation": 0},'
    b' {"location": "/closed/", "tdm-reservation": 1}]'
)


@pytest.mark.parametrize("strict", [False, True])
def test_an_unknown_label_is_no_certain_refusal_while_tdmrep_json_may_state_it(
    strict: bool,
) -> None:
    # SPEC G2 with REP_USAGE_STRICT: robots.txt leaving train-ai unknown refuses nothing before
    # tdmrep.json is known (its "tdm-reservation": 0 allows train-ai, F4); once it is known, a
    # path it reserves, or leaves unstated, is refused, one it does not reserve is used.
    verdicts = Gate(Purpose(("train-ai",), strict=strict)).verdicts
    state = _state(SILENT)
    for path in ("/open/a", "/closed/a", "/else/a"):
        assert verdicts.certain_refusal(state, Request(ORIGIN + path), ()) is None
    known = _tdmrep(TDM_OPEN)
    assert verdicts.usage_refusal(state, Request(ORIGIN + "/open/a"), known) is None
    closed = verdicts.usage_refusal(state, Request(ORIGIN + "/closed/a"), known)
    assert closed is not None and closed.label == "train-ai"
    assert "tdmrep.json rule 2" in str(closed.rule)
    unstated = verdicts.usage_refusal(state, Request(ORIGIN + "/else/a"), known)
    assert (unstated is not None) == strict
    if unstated is not None:
        assert unstated.rule == "train-ai not stated (REP_USAGE_STRICT = True)"


def test_a_disallow_no_pending_document_can_lift_is_still_a_certain_refusal() -> None:
    # robots.txt's Content-Usage combines most restrictively (SPEC G1): certain, strict or not,
    # for the first declared label it refuses even after one left unknown.
    verdicts = Gate(Purpose(("search", "train-ai"), strict=True)).verdicts
    why = verdicts.certain_refusal(_state(), Request(ORIGIN + "/no-ai/x"), ())
    assert why is not None and why.label == "train-ai"
    assert "robots.txt line 3" in str(why.rule)
    assert verdicts.certain_refusal(_state(), Request(ORIGIN + "/ok"), ()) is None


def test_a_pending_source_leaves_only_disallows_refused() -> None:
    # The one rule of REP_USAGE_STRICT (core/purpose.py): unknown refuses once every source is
    # known, never while one may still state it.
    strict = Purpose(("train-ai",), strict=True)
    unknown, allowed = UsagePrefs(), UsagePrefs({"train-ai": True})
    disallowed = UsagePrefs({"train-ai": False})
    assert strict.refusal(unknown) == Refusal("train-ai", None)
    assert strict.refusal(unknown, pending=True) is None
    assert strict.refusal(allowed, pending=True) is None
    assert strict.refusal(disallowed, pending=True) == Refusal("train-ai", False)


@pytest.mark.parametrize("at", ["gate", "release", "download"])
def test_a_strict_purpose_waits_for_tdmrep_json_before_judging_what_robots_txt_leaves_unknown(
    at: str,
) -> None:
    # The admission on task.Clock (test_admission's harness, the crawl's verdicts): strict or
    # not, a request whose robots.txt leaves train-ai unknown waits for tdmrep.json, then its
    # "tdm-reservation" decides; a robots.txt refusal drops it without waiting (SPEC G1, G2).
    usage = {
        "silent": b"",
        "y": b"Content-Usage: train-ai=y\n",
        "n": b"Content-Usage: train-ai=n\n",
    }
    wrong = []
    for strict, (said, extra), tdmrep in itertools.product(
        (False, True), usage.items(), ("unknown", "allowing", "refusing", "none")
    ):
        harness = Table(Purpose(("train-ai",), strict=strict))
        harness.robots("rules", extra=extra)
        if tdmrep == "none":  # no tdmrep.json (404): it states nothing
            (source,) = harness.parts.documents
            entry = record(None, Fetch("no_robots", 404), harness.now(), Limits())
            source.resolver._cache.read(TABLE_ORIGIN, entry, None, None, harness.now())
        harness.tdmrep(tdmrep)
        decision = harness.admission.decide(Request(TABLE_URL), TABLE_ORIGIN, harness.now(), at)  # type: ignore[arg-type]
        harness.finish()
        if said == "n" or tdmrep == "refusing":
            want = "drop usage"
        elif tdmrep == "unknown":
            want = "wait tdmrep.json"
        elif tdmrep == "none" and said == "silent" and strict:
            want = "drop usage"  # known now: nothing states train-ai
        else:
            want = "go"
        if answered(decision) != want:
            wrong.append(((strict, said, tdmrep), answered(decision), want))
    assert wrong == []

"""The gates' verdicts (crawl/_verdict.py) on a stub crawler: milliseconds per case, no crawl.

What a real crawl adds (errbacks delivered through Scrapy's scraper, the request_dropped
signal sent by the engine's signal manager) is in test_errbacks.py."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Spider
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request
from scrapy.utils.test import get_crawler
from twisted.internet import task

from scrapy_rep.core.policy import Entry, Good, Limits
from scrapy_rep.core.purpose import NO_PURPOSE, Purpose
from scrapy_rep.core.robots_file import RobotsTxt
from scrapy_rep.core.tokens import CrawlerTokens
from scrapy_rep.crawl._cache import ROBOTS, OriginCache, OriginState
from scrapy_rep.crawl._drops import Drops
from scrapy_rep.crawl._events import Events
from scrapy_rep.crawl._verdict import Verdicts
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
        self.verdicts = Verdicts(crawler, tokens, events, drops, purpose)

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
    assert gate.verdicts.usage(_state(), Request(ORIGIN + "/private/x"))["train-ai"] is None

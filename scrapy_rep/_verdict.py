"""What a known origin's robots.txt says of one request: let through, or dropped with a reason.

Both gates ask here (``request_scheduled`` before the scheduler, ``process_request`` before
download). A disallowed request raises ``IgnoreRequest`` and is counted and logged once per
fingerprint (issue 11.3); a request let through to download gets the origin's Crawl-delay on
its download slot when REP_CRAWL_DELAY is on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest
from scrapy.utils.request import fingerprint as _scrapy_fingerprint

from scrapy_rep import _compat
from scrapy_rep._events import (
    CRAWL_DELAY_APPLIED,
    FORBIDDEN_BEFORE_DOWNLOAD,
    FORBIDDEN_BEFORE_SCHEDULE,
    FORBIDDEN_DUPLICATE,
)
from scrapy_rep._seen import BoundedSet
from scrapy_rep.adapter import RobotParser

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request

    from scrapy_rep._cache import OriginState
    from scrapy_rep._events import Events
    from scrapy_rep.robotstxt import RobotsTxt
    from scrapy_rep.tokens import CrawlerTokens

__all__ = ["Verdicts"]


class Verdicts:
    def __init__(self, crawler: Crawler, tokens: CrawlerTokens, events: Events) -> None:
        self._crawler = crawler
        self._tokens = tokens
        self._events = events
        # Disallowed requests counted and logged already (the gate runs before the dupefilter).
        self._reported: BoundedSet[bytes] = BoundedSet()
        fingerprinter = getattr(crawler, "request_fingerprinter", None)
        self._fingerprint: Callable[[Request], bytes] = (
            fingerprinter.fingerprint if fingerprinter is not None else _scrapy_fingerprint
        )

    def at_gate(self, state: OriginState, request: Request) -> None:
        """Raise ``IgnoreRequest`` if ``state``'s rules disallow ``request`` (before scheduling)."""
        if state.serving.kind != "rules" or self._allowed(state, request):
            return
        # Like the dupefilter this gate runs before: a request seen before is not counted or
        # logged again (issue 11.3), unless it would pass the dupefilter (dont_filter).
        if request.dont_filter or self._reported.add(self._fingerprint(request)):
            self._events.forbidden(
                FORBIDDEN_BEFORE_SCHEDULE, request, lambda: self._explain(state, request)
            )
        else:
            self._events.count(FORBIDDEN_DUPLICATE)
        raise IgnoreRequest("Forbidden by robots.txt")

    def at_download(self, state: OriginState, request: Request) -> None:
        """Raise ``IgnoreRequest`` if ``state``'s rules disallow ``request``; else apply the
        origin's Crawl-delay (the final gate, just before download)."""
        if state.crawl_delay is not None:
            self.apply_crawl_delay(request, state.crawl_delay)
        if state.serving.kind == "rules" and not self._allowed(state, request):
            self._events.forbidden(
                FORBIDDEN_BEFORE_DOWNLOAD, request, lambda: self._explain(state, request)
            )
            raise IgnoreRequest("Forbidden by robots.txt")

    def apply_crawl_delay(self, request: Request, delay: float) -> None:
        slot = _compat.downloader_slot(self._crawler.engine, request)
        if slot is not None and slot.delay < delay:
            slot.delay = delay
            self._events.count(CRAWL_DELAY_APPLIED)

    def crawl_delay_of(self, robots: RobotsTxt) -> float | None:
        return robots.crawl_delay(self._tokens.default)

    def parser(self, robots: RobotsTxt) -> RobotParser:
        """``robots`` behind Scrapy's RobotParser interface, obeying as this crawler's tokens."""
        parser = RobotParser(b"", self._tokens)
        parser.robots = robots
        return parser

    def _allowed(self, state: OriginState, request: Request) -> bool:
        assert state.robots is not None
        return state.robots.allowed(request.url, self._tokens.for_header(_user_agent(request)))

    def _explain(self, state: OriginState, request: Request) -> tuple[str, str]:
        assert state.robots is not None
        decision = state.robots.decide(request.url, self._tokens.for_header(_user_agent(request)))
        rule = decision.rule
        where = ""
        if rule is not None:
            where = f"{'Allow' if rule.allow else 'Disallow'}: {rule.pattern} (line {rule.line})"
        return where, decision.reason


def _user_agent(request: Request) -> bytes | None:
    return request.headers.get(b"User-Agent")

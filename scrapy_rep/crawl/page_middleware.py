"""``PageRobotsMiddleware``: what a page's robots meta tags and X-Robots-Tag ask (SPEC D).

A spider middleware, enabled by the add-on (or by hand, see the README), active
whenever robots.txt is obeyed (``ROBOTSTXT_OBEY``) and ``REP_PAGE_RULES`` is
not False. For every response it computes the page's rules once, for the
crawler's robots.txt tokens, and:

- stores them as ``response.meta["rep_page_rules"]`` (a ``scrapy_rep.PageRules``)
  before the callback runs, for callbacks and for whoever reads the meta later;
- ``nofollow``: drops every request the callback (or errback) yields from that
  response, items pass; with ``REP_PAGE_RELNOFOLLOW`` also the requests whose URL
  a ``rel="nofollow"`` link of the page points to;
- ``noindex``: marks the items yielded from that response by setting the field
  ``REP_PAGE_NOINDEX_FIELD`` to True, or drops them (``REP_PAGE_NOINDEX = "drop"``);
- usage preferences (SPEC G3): the response's own statements (``page_statements``) combined
  (``sources.usage_of``) with those the gate knew for its URL (robots.txt, the usage documents
  a declared purpose needs) are kept as ``response.meta["rep_usage"]`` (a
  ``scrapy_rep.UsagePrefs``); with a declared purpose (``REP_USAGE_PURPOSES``) that they
  refuse, the items yielded from the response are dropped (``REP_USAGE_ITEMS = "drop"``, the
  default) or marked (``"mark"``: the field ``REP_USAGE_FIELD`` set to the reason).

Non-HTML responses are judged by their headers only. A response whose request
has ``dont_obey_robotstxt`` in its meta is left alone, and so is a request
yielded with it. Each drop is counted (stats ``robotspage/…``) and logged once
per page at DEBUG; dropped requests are also in the closing summary of the robots.txt
middleware's drop path when it runs (``Drops.filtered``: no errback, as DepthMiddleware).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from itemadapter import ItemAdapter
from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse
from scrapy.utils.httpobj import urlparse_cached
from w3lib.url import canonicalize_url

from scrapy_rep.core.origin import origin_from_parts
from scrapy_rep.core.pagerules import PageRules
from scrapy_rep.core.purpose import Refusal
from scrapy_rep.core.sources import Statement, known_statements, usage_of
from scrapy_rep.core.stats import (
    PAGE_ITEMS_DROPPED,
    PAGE_ITEMS_MARKED,
    PAGE_ITEMS_UNMARKED,
    PAGE_ITEMS_USAGE_DROPPED,
    PAGE_ITEMS_USAGE_MARKED,
    PAGE_NOFOLLOW,
    PAGE_NOINDEX,
    PAGE_REQUESTS_NOFOLLOW,
    PAGE_REQUESTS_REL_NOFOLLOW,
    PAGE_USAGE_REFUSED,
)
from scrapy_rep.core.usage import UsagePrefs
from scrapy_rep.crawl._settings import (
    PageSettings,
    refused_at_startup,
    warn_unknown_settings,
)
from scrapy_rep.crawl._tokens import settings_tokens
from scrapy_rep.crawl._verdict import (
    response_rules,
    response_statements,
    served,
    served_documents,
    user_agent,
)
from scrapy_rep.crawl.robotstxt_middleware import running_middleware

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.spiders import Spider

    from scrapy_rep.crawl.robotstxt_middleware import RobotsTxtMiddleware

__all__ = [
    "META_KEY",
    "USAGE_KEY",
    "PageRobotsMiddleware",
    "response_rules",
    "response_statements",
]

#: The page level's own log lines.
_logger = logging.getLogger("scrapy_rep.crawl.page_middleware")

#: Where the page's ``PageRules`` are kept: ``response.meta[META_KEY]``.
META_KEY = "rep_page_rules"
#: Where the response's combined usage preferences are kept: ``response.meta[USAGE_KEY]``.
USAGE_KEY = "rep_usage"


class PageRobotsMiddleware:
    """Spider middleware obeying robots meta tags and X-Robots-Tag (SPEC D)."""

    def __init__(self, crawler: Crawler, config: PageSettings) -> None:
        self.crawler = crawler
        self.config = config
        assert crawler.stats is not None
        self._stats = crawler.stats
        # The same tokens robots.txt is obeyed as (SPEC D4), from the one place that decides them.
        self._tokens = settings_tokens(crawler.settings, crawler)
        self._unmarkable: set[tuple[type, str]] = set()
        self._judged: WeakKeyDictionary[Response, PageRules | None] = WeakKeyDictionary()
        self._usage: WeakKeyDictionary[Response, UsagePrefs] = WeakKeyDictionary()
        # scrapy_rep's downloader middleware, looked up once it runs (not on every response).
        self._robots: RobotsTxtMiddleware | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageRobotsMiddleware:
        warn_unknown_settings(crawler)
        with refused_at_startup(crawler):
            if not PageSettings.enabled(crawler.settings):
                # Without a message: turning the page level off is no news worth a warning.
                raise NotConfigured
            config = PageSettings.from_settings(crawler.settings)
        return cls(crawler, config)

    # -- rules ------------------------------------------------------------------

    def rules(self, response: Response) -> PageRules | None:
        """The page's rules, computed once per response; None when it is not judged."""
        if response in self._judged:
            return self._judged[response]
        # Not read back from the meta: a callback that copies response.meta into
        # its requests would hand this page's rules to the next one.
        meta = response.meta
        if meta.get("dont_obey_robotstxt"):
            # Not judged: what its meta (its request's) has of these keys is a copy of another
            # page's.
            _unmarked(response.request)
            self._judged[response] = None
            return None
        request = response.request
        tokens = self._tokens.for_header(user_agent(request) if request is not None else None)
        # unavailable_after is a calendar date: read against the wall clock (the page level is
        # given no clock).
        rules = response_rules(response, tokens, datetime.now(timezone.utc))
        meta[META_KEY] = self._judged[response] = rules
        meta[USAGE_KEY] = self._usage[response] = self._usage_of(response, rules, tokens)
        if rules.nofollow:
            self._stats.inc_value(PAGE_NOFOLLOW)
        if rules.noindex:
            self._stats.inc_value(PAGE_NOINDEX)
        return rules

    def usage(self, response: Response) -> UsagePrefs | None:
        """The response's combined usage preferences; None when it is not judged."""
        self.rules(response)  # judged first (once): only a judged response has usage
        return self._usage.get(response)

    def _robots_middleware(self) -> RobotsTxtMiddleware | None:
        if self._robots is None:
            self._robots = running_middleware(self.crawler)
        return self._robots

    def _usage_of(self, response: Response, rules: PageRules, tokens: Sequence[str]) -> UsagePrefs:
        """SPEC G3: the page's own statements with those the gate knew (SPEC G1): of the
        documents the request was let go with (its admission token's, whatever the LRU
        evicted since; none for a request it did not judge). The gate found its URL allowed
        by that robots.txt for these tokens (the token is bound to both): not matched again."""
        request = response.request
        robots = self._robots_middleware()
        known: list[Statement] = []
        if request is not None and robots is not None and (decided := robots.judged(request)):
            state, documents = decided
            robots_txt, used = served(state), served_documents(documents)
            known = known_statements(robots_txt, request.url, tokens, used, allowed=True)
        return usage_of([*known, *response_statements(response, rules, tokens)])

    # -- spider middleware hooks -----------------------------------------------

    def process_spider_input(self, response: Response, spider: Spider | None = None) -> None:
        self.rules(response)

    def process_spider_output(
        self, response: Response, result: Iterable[Any], spider: Spider | None = None
    ) -> Iterator[Any]:
        page = self._page(response)
        try:
            for output in result:
                if page is None or page.keep(output):
                    yield _unmarked(output)
        finally:
            if page is not None:
                page.close()

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterable[Any], spider: Spider | None = None
    ) -> AsyncIterator[Any]:
        page = self._page(response)
        try:
            async for output in result:
                if page is None or page.keep(output):
                    yield _unmarked(output)
        finally:
            if page is not None:
                page.close()

    def _page(self, response: Response) -> _Page | None:
        """The response's output filter; None when it passes as it is (apart from ``_unmarked``)."""
        rules = self.rules(response)
        if rules is None:
            return None
        refusal = self.config.purpose.refusal(self._usage[response])  # None: nothing declared
        if refusal is not None:
            self._stats.inc_value(PAGE_USAGE_REFUSED)
        if not (rules.nofollow or rules.noindex or self.config.rel_nofollow or refusal):
            return None
        return _Page(self, response, rules, refusal)

    def _mark(self, item: Any, field: str, value: object, stat: str, settings: str) -> None:
        """Set ``item``'s ``field`` to ``value``; an item that cannot be marked is counted, and
        the first of its type is warned about."""
        if ItemAdapter.is_item(item):
            # These errors: it cannot be marked (no such field, a frozen dataclass…).
            with suppress(KeyError, AttributeError, TypeError):
                ItemAdapter(item)[field] = value
                self._stats.inc_value(stat)
                return
        kind = type(item)
        self._stats.inc_value(PAGE_ITEMS_UNMARKED)
        if (kind, field) not in self._unmarkable:
            self._unmarkable.add((kind, field))
            _logger.warning(
                "Items of type %s cannot be marked: they have no field %r (declare it, or set %s)",
                kind.__qualname__,
                field,
                settings,
                extra={"spider": self.crawler.spider},
            )


@dataclass
class _Page:
    """One response's output going through the page rules."""

    middleware: PageRobotsMiddleware
    response: Response
    rules: PageRules
    refusal: Refusal | None
    usage_dropped: int = 0
    items_dropped: int = 0
    # The requests filtered (nofollow, rel="nofollow"), by origin: for the drop path's
    # closing summary.
    nofollow_origins: Counter[str | None] = field(default_factory=Counter)
    rel_origins: Counter[str | None] = field(default_factory=Counter)

    def keep(self, output: Any) -> bool:
        """Whether ``output`` goes on; a kept item from a noindex page, or one whose use the page
        refuses, gets its mark on the way (SPEC D7, G3)."""
        config = self.middleware.config
        if isinstance(output, Request):
            if output.meta.get("dont_obey_robotstxt"):
                return True
            if self.rules.nofollow:
                # SPEC D6: nofollow = follow none of the page's links.
                self.nofollow_origins[origin_from_parts(urlparse_cached(output))] += 1
                return False
            if config.rel_nofollow and self._is_rel_nofollow(output.url):
                self.rel_origins[origin_from_parts(urlparse_cached(output))] += 1
                return False
            return True
        if self.refusal is not None and config.usage_items == "drop":
            self.usage_dropped += 1
            return False
        if self.rules.noindex and config.noindex == "drop":
            self.items_dropped += 1
            return False
        mark = self.middleware._mark
        if self.rules.noindex:
            hint = "REP_PAGE_NOINDEX_FIELD to one they have, or REP_PAGE_NOINDEX = 'drop'"
            mark(output, config.noindex_field, True, PAGE_ITEMS_MARKED, hint)
        if self.refusal is not None:
            hint = "REP_USAGE_FIELD to one they have, or REP_USAGE_ITEMS = 'drop'"
            mark(output, config.usage_field, str(self.refusal), PAGE_ITEMS_USAGE_MARKED, hint)
        return True

    @cached_property
    def _rel_nofollow(self) -> frozenset[str]:
        """Canonical URLs of the page's ``rel="nofollow"`` links (a hint, SPEC D6); HTML only."""
        response = self.response
        if not isinstance(response, HtmlResponse):
            return frozenset()
        # The callback has usually parsed the page already: the selector is cached.
        return frozenset(
            canonicalize_url(response.urljoin(link.attrib["href"].strip()))
            for link in response.xpath("//a[@rel][@href]|//area[@rel][@href]")
            if "nofollow" in link.attrib["rel"].lower().split()
        )

    def _is_rel_nofollow(self, url: str) -> bool:
        return bool(self._rel_nofollow) and canonicalize_url(url) in self._rel_nofollow

    def close(self) -> None:
        """Count and log what this page dropped: one line per page, not per link."""
        url = self.response.url
        # The page's directives (none on most pages: nothing to format).
        why = "; ".join(f"{agent}: {', '.join(d)}" for agent, d in self.rules.directives)
        for count, stat, message, detail in (
            (
                self.nofollow_origins.total(),
                PAGE_REQUESTS_NOFOLLOW,
                "request(s) from %s: the page says nofollow (%s)",
                why,
            ),
            (
                self.rel_origins.total(),
                PAGE_REQUESTS_REL_NOFOLLOW,
                "request(s) from %s to rel=nofollow links (%s)",
                "REP_PAGE_RELNOFOLLOW",
            ),
            (
                self.usage_dropped,
                PAGE_ITEMS_USAGE_DROPPED,
                "item(s) from %s: its content may not be used for %s",
                self.refusal,
            ),
            (
                self.items_dropped,
                PAGE_ITEMS_DROPPED,
                "item(s) from %s: the page says noindex (%s); REP_PAGE_NOINDEX = 'drop'",
                why,
            ),
        ):
            if count:
                self.middleware._stats.inc_value(stat, count)
                spider = self.middleware.crawler.spider
                _logger.debug("Dropped %d " + message, count, url, detail, extra={"spider": spider})
        # Filtered requests are drops too: in the closing summary of the robots.txt
        # middleware's drop path (without it, the page level counts and logs them alone).
        robots = self.middleware._robots_middleware()
        if robots is None:
            return
        robots.page_filtered(self.nofollow_origins, f"the page {url} says nofollow", "nofollow")
        robots.page_filtered(
            self.rel_origins, f"rel=nofollow links of {url} (REP_PAGE_RELNOFOLLOW)", "rel_nofollow"
        )


def _unmarked(output: Any) -> Any:
    """``output``, without the page's keys if it is a request: they are its response's, and a
    callback that copied ``response.meta`` into it would hand them on as the next page's (to
    an errback, or where the next page is not judged)."""
    if isinstance(output, Request):
        output.meta.pop(META_KEY, None)
        output.meta.pop(USAGE_KEY, None)
    return output

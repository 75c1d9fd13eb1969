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
  ``REP_PAGE_NOINDEX_FIELD`` to True, or drops them (``REP_PAGE_NOINDEX = "drop"``).

Non-HTML responses are judged by their headers only. A response whose request
has ``dont_obey_robotstxt`` in its meta is left alone, and so is a request
yielded with it. Each drop is counted (stats ``robotspage/…``) and logged once
per page at DEBUG.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from itemadapter import ItemAdapter
from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse
from w3lib.encoding import http_content_type_encoding
from w3lib.url import canonicalize_url

from scrapy_rep._checks import settings_tokens
from scrapy_rep.pagerules import PageRules, page_rules

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from scrapy.spiders import Spider

__all__ = ["META_KEY", "PageRobotsMiddleware", "PageSettings", "response_rules"]

logger = logging.getLogger(__name__)

#: Where the page's ``PageRules`` are kept: ``response.meta[META_KEY]``.
META_KEY = "rep_page_rules"
_NOINDEX_MODES = ("mark", "drop")


@dataclass(frozen=True)
class PageSettings:
    """The REP_PAGE_* settings, read once and checked."""

    noindex: str
    noindex_field: str
    rel_nofollow: bool

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> PageSettings:
        """The settings; a bad value raises ValueError naming the setting."""
        noindex = str(settings.get("REP_PAGE_NOINDEX") or "mark").lower()
        if noindex not in _NOINDEX_MODES:
            given = settings.get("REP_PAGE_NOINDEX")
            raise ValueError(f"REP_PAGE_NOINDEX must be 'mark' or 'drop', got {given!r}")
        field = settings.get("REP_PAGE_NOINDEX_FIELD", "rep_noindex")
        if not isinstance(field, str) or not field:
            raise ValueError(f"REP_PAGE_NOINDEX_FIELD must be a field name, got {field!r}")
        return cls(noindex, field, _bool(settings, "REP_PAGE_RELNOFOLLOW", False))

    @staticmethod
    def enabled(settings: BaseSettings) -> bool:
        """Page rules are obeyed when robots.txt is, unless REP_PAGE_RULES is False (SPEC D8)."""
        return _bool(settings, "ROBOTSTXT_OBEY", False) and _bool(settings, "REP_PAGE_RULES", True)


def _bool(settings: BaseSettings, name: str, default: bool) -> bool:
    try:
        return settings.getbool(name, default)
    except ValueError:
        raise ValueError(f"{name} must be True or False, got {settings.get(name)!r}") from None


class PageRobotsMiddleware:
    """Spider middleware obeying robots meta tags and X-Robots-Tag (SPEC D)."""

    def __init__(self, crawler: Crawler, config: PageSettings) -> None:
        self.crawler = crawler
        self.config = config
        assert crawler.stats is not None
        self._stats = crawler.stats
        # The same tokens robots.txt is obeyed as (SPEC D4), from the one place that decides them.
        self._tokens = settings_tokens(crawler.settings, crawler)
        self._unmarkable: set[type] = set()
        self._judged: WeakKeyDictionary[Response, PageRules | None] = WeakKeyDictionary()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageRobotsMiddleware:
        if not PageSettings.enabled(crawler.settings):
            # Without a message: turning the page level off is no news worth a warning.
            raise NotConfigured
        return cls(crawler, PageSettings.from_settings(crawler.settings))

    # -- rules ------------------------------------------------------------------

    def rules(self, response: Response) -> PageRules | None:
        """The page's rules, computed once per response; None when it is not judged."""
        if response in self._judged:
            return self._judged[response]
        # Not read back from the meta: a callback that copies response.meta into
        # its requests would hand this page's rules to the next one.
        meta = response.meta
        if meta.get("dont_obey_robotstxt"):
            self._judged[response] = None
            return None
        rules = self._compute(response)
        meta[META_KEY] = self._judged[response] = rules
        if rules.nofollow:
            self._stats.inc_value("robotspage/pages/nofollow")
        if rules.noindex:
            self._stats.inc_value("robotspage/pages/noindex")
        return rules

    def _compute(self, response: Response) -> PageRules:
        request = response.request
        user_agent = request.headers.get(b"User-Agent") if request is not None else None
        tokens = self._tokens.for_header(user_agent)
        return response_rules(response, tokens, datetime.now(timezone.utc))

    # -- spider middleware hooks -----------------------------------------------

    def process_spider_input(self, response: Response, spider: Spider | None = None) -> None:
        self.rules(response)

    def process_spider_output(
        self, response: Response, result: Iterable[Any], spider: Spider | None = None
    ) -> Iterator[Any]:
        page = self._page(response)
        if page is None:
            yield from result
            return
        try:
            for output in result:
                if page.keep(output):
                    yield page.marked(output)
        finally:
            page.close()

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterable[Any], spider: Spider | None = None
    ) -> AsyncIterator[Any]:
        page = self._page(response)
        if page is None:
            async for output in result:
                yield output
            return
        try:
            async for output in result:
                if page.keep(output):
                    yield page.marked(output)
        finally:
            page.close()

    def _page(self, response: Response) -> _Page | None:
        rules = self.rules(response)
        if rules is None:
            return None
        if not (rules.nofollow or rules.noindex or self.config.rel_nofollow):
            return None
        return _Page(self, response, rules)

    def _cannot_mark(self, item: Any) -> None:
        self._stats.inc_value("robotspage/items/unmarked")
        kind = type(item)
        if kind not in self._unmarkable:
            self._unmarkable.add(kind)
            logger.warning(
                "Items of type %s from noindex pages cannot be marked: they have no field %r "
                "(declare it, set REP_PAGE_NOINDEX_FIELD to one they have, or set "
                "REP_PAGE_NOINDEX = 'drop')",
                kind.__qualname__,
                self.config.noindex_field,
            )


class _Page:
    """One response's output going through the page rules."""

    def __init__(self, middleware: PageRobotsMiddleware, response: Response, rules: PageRules):
        self.middleware = middleware
        self.response = response
        self.rules = rules
        self.config = middleware.config
        self._rel_nofollow: frozenset[str] | None = None
        self.nofollow_dropped = 0
        self.rel_dropped = 0
        self.items_dropped = 0

    def keep(self, output: Any) -> bool:
        if isinstance(output, Request):
            if output.meta.get("dont_obey_robotstxt"):
                return True
            if self.rules.nofollow:
                # SPEC D6: nofollow = follow none of the page's links.
                self.nofollow_dropped += 1
                return False
            if self.config.rel_nofollow and self._is_rel_nofollow(output.url):
                self.rel_dropped += 1
                return False
            return True
        if self.rules.noindex and self.config.noindex == "drop":
            self.items_dropped += 1
            return False
        return True

    def marked(self, output: Any) -> Any:
        """An item from a noindex page with its mark (SPEC D7); anything else unchanged."""
        if not self.rules.noindex or isinstance(output, Request):
            return output
        if not ItemAdapter.is_item(output):
            self.middleware._cannot_mark(output)
            return output
        try:
            ItemAdapter(output)[self.config.noindex_field] = True
        except (KeyError, AttributeError, TypeError):  # no such field, a frozen dataclass…
            self.middleware._cannot_mark(output)
        else:
            self.middleware._stats.inc_value("robotspage/items/marked")
        return output

    def _is_rel_nofollow(self, url: str) -> bool:
        if self._rel_nofollow is None:
            self._rel_nofollow = _rel_nofollow_urls(self.response)
        return bool(self._rel_nofollow) and canonicalize_url(url) in self._rel_nofollow

    def close(self) -> None:
        """Count and log what this page dropped: one line per page, not per link."""
        stats = self.middleware._stats
        url = self.response.url
        if self.nofollow_dropped:
            stats.inc_value("robotspage/requests/nofollow", self.nofollow_dropped)
            logger.debug(
                "Dropped %d request(s) from %s: the page says nofollow (%s)",
                self.nofollow_dropped,
                url,
                _Why(self.rules),
            )
        if self.rel_dropped:
            stats.inc_value("robotspage/requests/rel_nofollow", self.rel_dropped)
            logger.debug(
                "Dropped %d request(s) from %s to rel=nofollow links (REP_PAGE_RELNOFOLLOW)",
                self.rel_dropped,
                url,
            )
        if self.items_dropped:
            stats.inc_value("robotspage/items/dropped", self.items_dropped)
            logger.debug(
                "Dropped %d item(s) from %s: the page says noindex (%s); REP_PAGE_NOINDEX = 'drop'",
                self.items_dropped,
                url,
                _Why(self.rules),
            )


def response_rules(response: Response, tokens: Sequence[str], now: datetime) -> PageRules:
    """The rules ``response`` sets for a crawler answering to ``tokens``, at ``now``."""
    headers = response.headers.getlist(b"X-Robots-Tag")
    body: bytes | None = None
    encoding: str | None = None
    # SPEC D1: meta tags are read from HTML only; other types have headers.
    if isinstance(response, HtmlResponse):
        body = response.body
        content_type = response.headers.get(b"Content-Type")
        if content_type:
            encoding = http_content_type_encoding(content_type.decode("latin-1"))
    return page_rules(headers, body, tokens, now, encoding)


class _Why:
    """The directives of a page, formatted only if the log line is emitted."""

    def __init__(self, rules: PageRules) -> None:
        self.rules = rules

    def __str__(self) -> str:
        return "; ".join(f"{agent}: {', '.join(d)}" for agent, d in self.rules.directives)


def _rel_nofollow_urls(response: Response) -> frozenset[str]:
    """Canonical URLs of the page's ``rel="nofollow"`` links (a hint, SPEC D6); HTML only."""
    if not isinstance(response, HtmlResponse):
        return frozenset()
    urls = set()
    # The callback has usually parsed the page already: the selector is cached.
    for link in response.xpath("//a[@rel][@href]|//area[@rel][@href]"):
        rel = (link.attrib.get("rel") or "").lower().split()
        if "nofollow" in rel:
            urls.add(canonicalize_url(response.urljoin(link.attrib["href"].strip())))
    return frozenset(urls)

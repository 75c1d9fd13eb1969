"""The online half of ``scrapy robots``: resolve origins through a real crawler.

A tiny spider opens with the project's settings and ``scrapy_rep.RobotsTxtMiddleware``
enabled, asks the middleware to ``resolve`` each URL's origin (the same fetch,
status, redirect, size and cache rules as a crawl, through Scrapy's engine), and
closes once every answer is in. Nothing but robots.txt is downloaded, unless
``pages`` is asked: then each URL that robots.txt allows for the explained tokens
is fetched too and its page rules reported (SPEC D).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.exceptions import DontCloseSpider
from twisted.internet.defer import DeferredList, maybeDeferred

from scrapy_rep.core.explain import (
    describe_error,
    document_entry,
    explain_report,
    fleet_entry,
    page_entry,
    pause_entry,
    with_usage,
)
from scrapy_rep.core.purpose import NO_PURPOSE, Purpose
from scrapy_rep.core.sources import UsageDocument, known_statements
from scrapy_rep.crawl import _compat
from scrapy_rep.crawl._verdict import served_documents
from scrapy_rep.crawl.addon import BUILTIN_MIDDLEWARE, MIDDLEWARE, MIDDLEWARE_ORDER, component_path
from scrapy_rep.crawl.guard_middleware import GUARD, GUARD_ORDER
from scrapy_rep.crawl.robotstxt_middleware import running_middleware

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

__all__ = ["build_entry", "enable_middleware", "explain_online"]

#: A usage document resolved for a URL's origin, with its state (``OriginState``).
Documents = Sequence[tuple[UsageDocument, Any]]


def enable_middleware(settings: BaseSettings) -> None:
    """Run ``scrapy_rep.RobotsTxtMiddleware`` whatever the project says (ROBOTSTXT_OBEY too).

    The command explains what the middleware would decide, so it needs it even
    in a project that has not enabled it yet; ``scrapy_rep.RobotsTxtGuard`` too.
    A project's own order for them is kept, and so is everything that shapes a
    download (proxies, headers, store).
    """
    ours, builtin = component_path(MIDDLEWARE), component_path(BUILTIN_MIDDLEWARE)
    guard = component_path(GUARD)
    order: Any = MIDDLEWARE_ORDER
    guard_order: Any = GUARD_ORDER
    components: dict[Any, Any] = {}
    for key, value in settings.getdict("DOWNLOADER_MIDDLEWARES").items():
        path = component_path(key)
        if path == ours and value is not None:
            order = value
        elif path == guard and value is not None:
            guard_order = value
        elif path not in (ours, builtin, guard):
            components[key] = value
    components[BUILTIN_MIDDLEWARE] = None
    components[MIDDLEWARE] = order
    # Fetching robots.txt of any site safely needs the guard (scheme, decompression).
    components[GUARD] = guard_order
    settings.set("DOWNLOADER_MIDDLEWARES", components, "cmdline")
    settings.set("ROBOTSTXT_OBEY", True, "cmdline")
    # Explaining must leave no trace in the project's job state, feeds or pipelines.
    settings.set("JOBDIR", None, "cmdline")
    settings.set("FEEDS", {}, "cmdline")
    settings.set("ITEM_PIPELINES", {}, "cmdline")


def explain_online(
    process: Any,
    urls: list[str],
    tokens: list[str],
    pages: bool = False,
    purpose: Purpose = NO_PURPOSE,
) -> list[dict[str, Any]]:
    """Resolve ``urls``' origins with a crawl run by ``process`` (a CrawlerProcess).

    ``pages``: also fetch each URL and add its page rules (``page``) to its entry.
    ``purpose``: say whether a crawl declaring it would use each URL's content (with the
    origin's tdmrep.json when the purpose needs it, and the page's own statements with
    ``pages``).
    """
    results: dict[str, Any] = {}
    page_results: dict[str, dict[str, Any]] = {}
    documents: dict[str, Documents] = {}
    pauses: dict[str, Any] = {}
    fleets: dict[str, Any] = {}
    process.crawl(
        _ExplainSpider,
        urls=urls,
        results=results,
        pages=page_results if pages else None,
        tokens=tokens,
        documents=documents,
        labels=purpose.labels,
        pauses=pauses,
        fleets=fleets,
    )
    process.start()
    entries = []
    for url in urls:
        outcome = results.get(url)
        if outcome is None:
            entry = describe_error(url, tokens, "the crawl did not start (see the log)")
        elif isinstance(outcome, BaseException):
            entry = describe_error(url, tokens, f"{type(outcome).__name__}: {outcome}")
        else:
            page = None
            if pages:
                page = page_results.get(url, {"url": url, "error": "not fetched (see the log)"})
            entry = build_entry(outcome, url, tokens, purpose, documents.get(url, ()), page)
            pause = pauses.get(url)
            if pause is not None:
                entry["pause"] = pause_entry(pause)
            if (fleet := fleets.get(url)) is not None:
                entry["fleet"] = fleet_entry(fleet)
        entries.append(entry)
    return entries


def build_entry(
    report: Any,
    url: str,
    tokens: Sequence[str],
    purpose: Purpose,
    documents: Documents = (),
    page: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One URL's explanation, its usage computed as the crawl computes it (SPEC G1): from
    robots.txt (``report``, the middleware's ``OriginReport``) and the usage ``documents``
    resolved for its origin, what the gate decides; and for a fetched ``page`` (whose
    ``statements`` are its own, ``response_statements``), what the page level decides."""
    read = served_documents(documents)
    entry = explain_report(report, url, tokens, purpose, documents=read)
    if documents:
        entry["documents"] = [
            document_entry(
                document.name,
                state.report(),
                document.summary(state.document) if state.document is not None else None,
            )
            for document, state in documents
        ]
    if page is not None:
        page = dict(page)
        own = page.pop("statements", None)
        if own is not None:
            robots = getattr(report, "robots", None)
            found = known_statements(robots, url, tokens, read, given=own)
            # The page was fetched because robots.txt allows it.
            page["allowed"] = True
            with_usage(page, found, purpose)
            page.pop("allowed")
        entry["page"] = page
    return entry


class _ExplainSpider(Spider):
    name = "scrapy-rep-explain"

    def __init__(
        self,
        urls: list[str],
        results: dict[str, Any],
        pages: dict[str, dict[str, Any]] | None = None,
        tokens: list[str] | None = None,
        documents: dict[str, Documents] | None = None,
        labels: Sequence[str] = (),
        pauses: dict[str, Any] | None = None,
        fleets: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.urls = urls
        self.results = results
        self.pages = pages
        self.tokens = tokens or []
        self.documents = documents if documents is not None else {}
        self.labels = labels
        self.pauses = pauses if pauses is not None else {}
        self.fleets = fleets if fleets is not None else {}
        self._resolved = False

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> _ExplainSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider._resolve_all, signals.spider_opened)
        crawler.signals.connect(spider._keep_open, signals.spider_idle)
        return spider

    def start_requests(self) -> Iterable[Request]:
        return ()

    async def start(self) -> AsyncIterator[Any]:  # Scrapy >= 2.13
        for request in self.start_requests():
            yield request

    def _fetch_pages(self) -> None:
        """Fetch the pages robots.txt allows for the explained tokens (``--page``)."""
        if self.pages is None:
            return
        engine = self.crawler.engine
        assert engine is not None
        for url in dict.fromkeys(self.urls):
            outcome = self.results.get(url)
            if outcome is None or isinstance(outcome, BaseException):
                self.pages[url] = {"url": url, "error": "robots.txt not resolved"}
            elif not explain_report(outcome, url, self.tokens)["allowed"]:
                self.pages[url] = {"url": url, "error": "robots.txt disallows it"}
            else:
                # Decided above for the explained tokens, which may not be the
                # project's: the middleware must not decide again.
                request = Request(
                    url,
                    callback=self._page,
                    errback=self._page_failed,
                    cb_kwargs={"url": url},
                    dont_filter=True,
                    meta={"dont_obey_robotstxt": True},
                )
                engine.crawl(request)

    def _page(self, response: Response, url: str) -> None:
        from scrapy_rep.crawl.page_middleware import response_rules, response_statements

        assert self.pages is not None
        rules = response_rules(response, self.tokens, datetime.now(timezone.utc))
        self.pages[url] = page_entry(response.url, response.status, rules)
        self.pages[url]["statements"] = response_statements(response, rules, self.tokens)

    def _page_failed(self, failure: Failure) -> None:
        assert self.pages is not None
        request = getattr(failure, "request", None)
        if request is not None:
            url = request.cb_kwargs["url"]
            error = failure.value
            self.pages[url] = {"url": url, "error": f"{type(error).__name__}: {error}"}

    def _resolve_all(self, spider: Spider) -> None:
        # Not returned: spider_opened handlers are awaited before the engine
        # runs, and resolving needs the engine running.
        middleware = running_middleware(self.crawler)
        if middleware is None:
            error = RuntimeError(
                f"{MIDDLEWARE} is not enabled: check DOWNLOADER_MIDDLEWARES and ROBOTSTXT_OBEY"
            )
            self.results.update(dict.fromkeys(self.urls, error))
            self._fetch_pages()
            self._finish()
            return
        pending = [
            maybeDeferred(middleware.resolve, url).addBoth(self._store, url) for url in self.urls
        ]
        pending += [
            middleware.documents(url, self.labels).addCallback(self._store_documents, url)
            for url in self.urls
        ]
        pending += [
            middleware.pause_of(url).addCallback(self._store_pause, url) for url in self.urls
        ]
        pending += [
            middleware.fleet_of(url).addCallback(self._store_fleet, url) for url in self.urls
        ]
        DeferredList(pending).addBoth(lambda _: self._fetch_pages()).addBoth(
            lambda _: self._finish()
        )

    def _store_pause(self, pause: Any, url: str) -> None:
        self.pauses[url] = pause

    def _store_fleet(self, fleet: Any, url: str) -> None:
        self.fleets[url] = fleet

    def _store_documents(self, found: Documents, url: str) -> None:
        self.documents[url] = found

    def _store(self, result: Any, url: str) -> None:
        self.results[url] = getattr(result, "value", result)  # a Failure's exception

    def _keep_open(self, spider: Spider) -> None:
        if not self._resolved or self._pages_pending():
            raise DontCloseSpider

    def _pages_pending(self) -> bool:
        return self.pages is not None and len(self.pages) < len(set(self.urls))

    def _finish(self) -> None:
        self._resolved = True
        if self._pages_pending():
            # Pages still downloading: the spider closes when it is idle.
            return
        engine = self.crawler.engine
        if engine is None or getattr(engine, "spider", self) is None:
            return
        _compat.close_spider(engine, self, "finished")

"""The online half of ``scrapy robots``: resolve origins through a real crawler.

A tiny spider opens with the project's settings and ``scrapy_rep.RobotsTxtMiddleware``
enabled, asks the middleware to ``resolve`` each URL's origin (the same fetch,
status, redirect, size and cache rules as a crawl, through Scrapy's engine), and
closes once every answer is in. Nothing but robots.txt is downloaded.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.exceptions import DontCloseSpider
from twisted.internet.defer import DeferredList, maybeDeferred

from scrapy_rep._explain import describe_error, explain_report
from scrapy_rep._guard import GUARD, GUARD_ORDER
from scrapy_rep.addon import BUILTIN_MIDDLEWARE, MIDDLEWARE, MIDDLEWARE_ORDER, component_path

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

__all__ = ["enable_middleware", "explain_online", "find_middleware"]


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


def find_middleware(crawler: Crawler) -> Any:
    """The crawler's running ``scrapy_rep.RobotsTxtMiddleware``, or None."""
    from scrapy_rep.middleware import RobotsTxtMiddleware

    getter = getattr(crawler, "get_downloader_middleware", None)  # Scrapy >= 2.12
    if getter is not None:
        return getter(RobotsTxtMiddleware)
    engine = crawler.engine
    if engine is None:
        return None
    for middleware in engine.downloader.middleware.middlewares:
        if isinstance(middleware, RobotsTxtMiddleware):
            return middleware
    return None


def explain_online(process: Any, urls: list[str], tokens: list[str]) -> list[dict[str, Any]]:
    """Resolve ``urls``' origins with a crawl run by ``process`` (a CrawlerProcess)."""
    results: dict[str, Any] = {}
    process.crawl(_ExplainSpider, urls=urls, results=results)
    process.start()
    entries = []
    for url in urls:
        outcome = results.get(url)
        if outcome is None:
            entries.append(describe_error(url, tokens, "the crawl did not start (see the log)"))
        elif isinstance(outcome, BaseException):
            entries.append(describe_error(url, tokens, f"{type(outcome).__name__}: {outcome}"))
        else:
            entries.append(explain_report(outcome, url, tokens))
    return entries


class _ExplainSpider(Spider):
    name = "scrapy-rep-explain"

    def __init__(self, urls: list[str], results: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = urls
        self.results = results
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

    def _resolve_all(self, spider: Spider) -> None:
        # Not returned: spider_opened handlers are awaited before the engine
        # runs, and resolving needs the engine running.
        middleware = find_middleware(self.crawler)
        if middleware is None:
            error = RuntimeError(
                f"{MIDDLEWARE} is not enabled: check DOWNLOADER_MIDDLEWARES and ROBOTSTXT_OBEY"
            )
            self.results.update(dict.fromkeys(self.urls, error))
            self._finish()
            return
        pending = [
            maybeDeferred(middleware.resolve, url).addBoth(self._store, url) for url in self.urls
        ]
        DeferredList(pending).addBoth(lambda _: self._finish())

    def _store(self, result: Any, url: str) -> None:
        self.results[url] = getattr(result, "value", result)  # a Failure's exception

    def _keep_open(self, spider: Spider) -> None:
        if not self._resolved:
            raise DontCloseSpider

    def _finish(self) -> None:
        self._resolved = True
        engine = self.crawler.engine
        if engine is None or getattr(engine, "spider", self) is None:
            return
        close_async = getattr(engine, "close_spider_async", None)  # Scrapy >= 2.14
        if close_async is not None:
            from scrapy.utils.defer import deferred_from_coro

            deferred_from_coro(close_async(reason="finished"))
        else:
            engine.close_spider(self, "finished")

"""``scrapy crawl demo``: crawl the demo site (or ``-a start_url=...``) and report.

With no arguments the spider serves the demo site (``example_project.demo_site``)
on 127.0.0.1 from inside the crawl, follows every link, and prints at the end
what was fetched, which requests robots.txt dropped before they were scheduled
(with the deciding rule and its line) and each origin's robots.txt outcome.

``-a start_url=https://example.com`` crawls a real site the same way, following
links on that host only, bounded by ``CLOSESPIDER_PAGECOUNT``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.http import Response, TextResponse
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred, fail, maybeDeferred
from twisted.python.failure import Failure

from example_project import demo_site
from example_project.report import DemoReport


class DemoSpider(scrapy.Spider):
    name = "demo"

    def __init__(self, start_url: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_url = start_url
        self.site: demo_site.DemoSite | None = None
        self.report = DemoReport()
        self.hosts: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> DemoSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider._reached_downloader, signals.request_reached_downloader)
        return spider

    def start_requests(self) -> Iterator[scrapy.Request]:
        if self.start_url is None:
            self.site = demo_site.start()
            url = self.site.start_url
        else:
            url = self.start_url
        # The demo site's origins all live on 127.0.0.1; a real site: its host.
        self.hosts.add(urlsplit(url).hostname or "")
        yield self._request(url)

    async def start(self) -> AsyncIterator[scrapy.Request]:  # Scrapy >= 2.13
        for request in self.start_requests():
            yield request

    def parse(self, response: Response) -> Iterator[scrapy.Request]:
        # A redirected page is reported under its final URL, answered under the first.
        self.report.fetched.append(response.url)
        self.report.answered.add(response.meta.get("redirect_urls", [response.url])[0])
        if not isinstance(response, TextResponse):
            return
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            if urlsplit(url).hostname in self.hosts and url not in self.report.requested:
                yield self._request(url)

    def _request(self, url: str) -> scrapy.Request:
        self.report.requested[url] = None
        if self.report.needs_origin(url):
            self.report.watch_origin(url, self._resolve(url))
        return scrapy.Request(url, callback=self.parse, errback=self._failed)

    def _resolve(self, url: str) -> Deferred[Any]:
        """The middleware's answer for ``url``'s origin (it fetches robots.txt once per origin)."""
        from scrapy_rep import running_middleware

        middleware = running_middleware(self.crawler)
        if middleware is None:
            return fail(RuntimeError("scrapy_rep.RobotsTxtMiddleware is not enabled"))
        return maybeDeferred(middleware.resolve, url)

    def _reached_downloader(self, request: scrapy.Request, spider: scrapy.Spider) -> None:
        self.report.reached_downloader.add(request.url)

    def _failed(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        if request is not None:
            self.report.failed[request.url] = f"{type(failure.value).__name__}: {failure.value}"

    async def closed(self, reason: str) -> None:
        tokens = self._tokens()
        print(self.report.render(reason, tokens, self.crawler.stats.get_stats()), flush=True)
        if self.site is not None:
            await maybe_deferred_to_future(self.site.stop())

    def _tokens(self) -> list[str]:
        from scrapy_rep import CrawlerTokens

        return list(CrawlerTokens.from_settings(self.crawler.settings).default)

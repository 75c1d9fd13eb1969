"""``scrapy crawl demo``: crawl the demo site (or ``-a start_url=...``) and report.

With no arguments the spider serves the demo site (``example_project.demo_site``)
on 127.0.0.1 from inside the crawl, follows every link, yields one item per page
(its url and title) and prints at the end what scrapy-rep did and why: requests
dropped (grouped by the reason their errback got), an origin whose robots.txt
failed and recovered, a site that paused, a page's noindex and nofollow, what a
declared purpose refuses, and two ``scrapy robots`` commands to try offline.

``-a purpose=train-ai`` declares what the crawl's output is used for
(``REP_USAGE_PURPOSES``; ``-s REP_USAGE_PURPOSES=train-ai`` does the same).
``-a start_url=https://example.com`` crawls a real site the same way, following
links on that host only, bounded by ``CLOSESPIDER_PAGECOUNT``.
"""

from __future__ import annotations

import time
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
from example_project.report import Answer, Closing, DemoReport, Made, offline_commands
from scrapy_rep import RequestDropped

#: The demo site's pages the offline commands ask about: one its robots.txt disallows, one
#: it refuses for train-ai.
_TRY_OFFLINE = ("/private/salaries.html", "/blog/first-post.html")


class DemoSpider(scrapy.Spider):
    name = "demo"

    def __init__(
        self, start_url: str | None = None, purpose: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.start_url = start_url
        self.purpose = purpose
        self.site: demo_site.DemoSite | None = None
        self.report = DemoReport()
        self.hosts: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> DemoSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        # Spider arguments are known here, before Scrapy freezes the settings (Scrapy >= 2.11;
        # the middleware reads them later). -s on the command line still wins.
        if spider.purpose is not None:
            crawler.settings.set("REP_USAGE_PURPOSES", spider.purpose, priority="spider")
        if spider.start_url is None:
            # The demo site is ours, on 127.0.0.1: no need for the delay real sites get.
            crawler.settings.set("DOWNLOAD_DELAY", 0, priority="spider")
        connect = crawler.signals.connect
        connect(spider._reached_downloader, signals.request_reached_downloader)
        connect(spider._downloaded, signals.response_downloaded)
        connect(spider._item_scraped, signals.item_scraped)
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

    def parse(self, response: Response) -> Iterator[dict[str, Any] | scrapy.Request]:
        self._parsed(response)
        title = response.css("title::text").get() if isinstance(response, TextResponse) else None
        # scrapy-rep marks it rep_noindex when the page says noindex.
        yield {"url": response.url, "title": title}
        if not isinstance(response, TextResponse):
            return
        # Links are yielded as on any page: scrapy-rep drops them when the page says nofollow.
        links = [response.urljoin(href) for href in response.css("a::attr(href)").getall()]
        links = [url for url in links if urlsplit(url).hostname in self.hosts]
        self.report.links[response.url] = links
        for url in links:
            if url not in self.report.requested:
                yield self._request(url, response.url)

    def _parsed(self, response: Response) -> None:
        # A redirected page is reported under its final URL, answered under the first.
        self.report.fetched.append(response.url)
        first = response.meta.get("redirect_urls", [response.url])[0]
        self.report.answered.add(first)
        self.report.final[first] = response.url
        rules = response.meta.get("rep_page_rules")  # scrapy_rep.PageRules (SPEC D)
        if rules is not None and (rules.noindex or rules.nofollow):
            self.report.rules[response.url] = rules
        if self.report.stale_origin(response.url):
            self.report.watch_origin(response.url, self._resolve(response.url))

    def _request(self, url: str, page: str | None = None) -> scrapy.Request:
        self.report.requested[url] = Made(time.monotonic(), page)
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
        self.report.sent.append((time.monotonic(), request.url))

    def _downloaded(
        self, response: Response, request: scrapy.Request, spider: scrapy.Spider
    ) -> None:
        retry_after = response.headers.get("Retry-After")
        self.report.answers.append(
            Answer(
                time.monotonic(),
                request.url,
                response.status,
                retry_after.decode("latin-1") if retry_after else None,
            )
        )

    def _item_scraped(self, item: Any, response: Response, spider: scrapy.Spider) -> None:
        self.report.items.append(dict(item))

    def _failed(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        if request is None:
            return
        if isinstance(failure.value, RequestDropped):
            self.report.dropped[request.url] = failure.value
        else:
            self.report.failed[request.url] = f"{type(failure.value).__name__}: {failure.value}"

    async def closed(self, reason: str) -> None:
        tokens = self._tokens()
        closing = Closing(
            reason,
            tokens,
            self.crawler.settings.getlist("REP_USAGE_PURPOSES"),
            self.crawler.stats.get_stats(),
            self._offline_commands(tokens),
        )
        print(self.report.render(closing), flush=True)
        if self.site is not None:
            await maybe_deferred_to_future(self.site.stop())

    def _tokens(self) -> list[str]:
        from scrapy_rep import CrawlerTokens

        return list(CrawlerTokens.from_settings(self.crawler.settings).default)

    def _offline_commands(self, tokens: list[str]) -> list[str]:
        if self.site is None or not tokens:
            return []
        urls = [self.site.urls["main"] + path for path in _TRY_OFFLINE]
        return offline_commands(demo_site.ROBOTS_FILE, tokens[0], *urls)

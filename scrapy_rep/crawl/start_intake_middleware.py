"""``StartIntakeMiddleware``: take start requests lazily while origins wait for robots.txt.

Scrapy pulls the next start request while the engine does not need to back out (fewer than
CONCURRENT_REQUESTS requests in ``Downloader.active``). A request the gate holds takes no
downloader place, and while its origin's robots.txt is read from an asynchronous store (SQLite,
Redis: a thread pool or the network) nothing of it is in ``Downloader.active`` yet either: the
engine would see room all along, take every start request at once and queue the home pages
behind every site's robots.txt. This spider middleware makes an origin being resolved count as
a request in flight for intake: the next start request waits while CONCURRENT_REQUESTS origins
or more are being resolved (``Resolver.room``), as it would wait for downloader places without
robots.txt.

On Scrapy 2.11 and 2.12 it marks start requests with ``meta["is_start_request"]`` (Scrapy >=
2.13 sets it itself), so that a start request robots.txt refuses is warned about.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured
from scrapy.http import Request
from scrapy.utils.defer import maybe_deferred_to_future

from scrapy_rep.crawl._running import running_middleware

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["StartIntakeMiddleware"]


class StartIntakeMiddleware:
    """Spider middleware (the add-on enables it); see the module docstring.

    Scrapy >= 2.13 only (``_compat.START_INTAKE``): on 2.11 and 2.12 it does nothing.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StartIntakeMiddleware:
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        return cls(crawler)

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for item_or_request in start:
            # Found at each step: without scrapy_rep's RobotsTxtMiddleware (not enabled, or
            # another robots.txt middleware) there is nothing to wait for.
            middleware = running_middleware(self.crawler)
            waiter = middleware.intake_room() if middleware is not None else None
            if waiter is not None:
                await maybe_deferred_to_future(waiter)
            yield item_or_request

    def process_start_requests(self, start_requests: Iterable[Any], spider: Any) -> Iterator[Any]:
        """Scrapy 2.11 and 2.12 (later versions call ``process_start``, and set this key
        themselves): mark start requests with Scrapy's ``is_start_request``, so that a start
        request robots.txt refuses is warned about."""
        for item_or_request in start_requests:
            if isinstance(item_or_request, Request):
                item_or_request.meta.setdefault("is_start_request", True)
            yield item_or_request

"""``StartIntakeMiddleware``: take start requests lazily while origins wait for robots.txt.

Scrapy pulls the next start request while the engine does not need to back out (fewer than
CONCURRENT_REQUESTS requests in ``Downloader.active``). A request the gate holds takes no
downloader place, and while its origin's robots.txt is read from an asynchronous store (SQLite,
Redis: a thread pool or the network) nothing of it is in ``Downloader.active`` yet either: the
engine would see room all along, take every start request at once and queue the home pages
behind every site's robots.txt. This spider middleware makes an origin being resolved count as
a request in flight for intake: the next start request waits while CONCURRENT_REQUESTS origins
or more are being resolved, as it would wait for downloader places without robots.txt.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from scrapy_rep.crawl._running import running_middleware

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["Intake", "StartIntakeMiddleware"]


class Intake:
    """Counts origins being resolved; ``room()`` waits while there are ``limit`` or more."""

    def __init__(self, limit: int) -> None:
        self._limit = max(1, limit)
        self._resolving = 0
        self._waiters: list[Deferred[None]] = []
        self._closed = False

    def started(self) -> None:
        self._resolving += 1

    def settled(self) -> None:
        self._resolving = max(0, self._resolving - 1)
        if self._resolving < self._limit:
            self._wake()

    def room(self) -> Deferred[None] | None:
        """None when a start request may be taken now, else a Deferred fired when it may."""
        if self._closed or self._resolving < self._limit:
            return None
        waiter: Deferred[None] = Deferred()
        self._waiters.append(waiter)
        return waiter

    def let_go(self) -> None:
        """The crawl closes: nothing waits any more (the engine stops taking start requests)."""
        self._closed = True
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.callback(None)


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
            waiter = middleware.intake.room() if middleware is not None else None
            if waiter is not None:
                await maybe_deferred_to_future(waiter)
            yield item_or_request

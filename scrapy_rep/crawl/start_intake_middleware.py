"""``StartIntakeMiddleware``: take start requests lazily while origins wait for robots.txt.

The next start request waits while either holds:

- CONCURRENT_REQUESTS origins or more are being resolved (``Resolver.room``). A request the gate
  holds takes no downloader place, and while its origin's robots.txt is read from an
  asynchronous store (SQLite, Redis: a thread pool or the network) nothing of it is in
  ``Downloader.active`` yet either: without this, the engine would see room all along, take
  every start request at once and queue the home pages behind every site's robots.txt.
- The engine needs to back out (``engine.needs_backout()``: ``Downloader.active`` is full, or the
  scraper is): Scrapy's own recipe for lazy start requests. robots.txt downloads go through
  ``engine.download``, which does not wait for a free place, and a new origin starts with one:
  taken while every place is busy, new sites would crowd out the pages of the sites already
  being crawled, whose requests then pile up in the scheduler (and with
  ``DownloaderAwarePriorityQueue`` each pop costs one look per queued site). Scrapy >= 2.13
  itself keeps pulling start requests while it backs out, so a broad crawl that gets there
  queues every start request at once. The start request waits for the next request to leave
  the downloader (``request_left_downloader``), or for the scheduler to run dry
  (``scheduler_empty``).

On Scrapy 2.11 and 2.12 it marks start requests with ``meta["is_start_request"]`` (Scrapy >=
2.13 sets it itself), so that a start request robots.txt refuses is warned about.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.http import Request
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from scrapy_rep.crawl import _compat
from scrapy_rep.crawl.robotstxt_middleware import running_middleware

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["StartIntakeMiddleware"]

#: What wakes a start request waiting for the engine to stop backing out: a place freed, or
#: nothing left to send (``scheduler_empty``: Scrapy >= 2.13, the versions that call
#: ``process_start``).
_WAKE_SIGNALS = [
    s for s in (signals.request_left_downloader, getattr(signals, "scheduler_empty", None)) if s
]


class StartIntakeMiddleware:
    """Spider middleware (the add-on enables it); see the module docstring.

    Scrapy >= 2.13 only (``_compat.START_INTAKE``): on 2.11 and 2.12 it does nothing.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        # Fired when a start request waiting for the engine to stop backing out may look again.
        self._backout_waiter: Deferred[None] | None = None
        self._connected = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StartIntakeMiddleware:
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        return cls(crawler)

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for item_or_request in start:
            while (waiter := self._wait()) is not None:
                await maybe_deferred_to_future(waiter)
            yield item_or_request

    def _wait(self) -> Deferred[None] | None:
        """None when the next start request may be taken now, else what to wait for before
        looking again."""
        # Found at each step: without scrapy_rep's RobotsTxtMiddleware (not enabled, or
        # another robots.txt middleware) there is nothing to wait for.
        middleware = running_middleware(self.crawler)
        if middleware is None:
            return None
        if (waiter := middleware.intake_room()) is not None:
            return waiter
        engine = self.crawler.engine
        # A crawl asked to close backs out for good: Scrapy decides what becomes of the rest.
        if engine is None or _compat.close_requested(engine) or not engine.needs_backout():
            return None
        self._backout_waiter = waiter = Deferred()
        if not self._connected:
            self._connected = True
            for signal in _WAKE_SIGNALS:
                self.crawler.signals.connect(self._wake, signal=signal)
        return waiter

    def _wake(self) -> None:
        waiter, self._backout_waiter = self._backout_waiter, None
        if waiter is None:
            return
        # Disconnected on the next turn, not while Scrapy is sending the signal: pydispatch
        # walks the live list of receivers, and removing one would skip the next.
        from twisted.internet import reactor

        cast(Any, reactor).callLater(0, self._disconnect)
        if not waiter.called:  # cancelled when the engine stops while it waits
            waiter.callback(None)

    def _disconnect(self) -> None:
        # Connected only while start requests wait: nothing is paid per request otherwise.
        if self._backout_waiter is None and self._connected:
            self._connected = False
            for signal in _WAKE_SIGNALS:
                self.crawler.signals.disconnect(self._wake, signal=signal)

    def process_start_requests(self, start_requests: Iterable[Any], spider: Any) -> Iterator[Any]:
        """Scrapy 2.11 and 2.12 (later versions call ``process_start``, and set this key
        themselves): mark start requests with Scrapy's ``is_start_request``, so that a start
        request robots.txt refuses is warned about."""
        for item_or_request in start_requests:
            if isinstance(item_or_request, Request):
                item_or_request.meta.setdefault("is_start_request", True)
            yield item_or_request

"""``Slots``: each download slot's concurrency, held before the download. Scrapy >= 2.14, with the
asyncio reactor and a slot delay of 0, starts a slot's whole queue at once (each download is a
task that enters ``slot.transferring`` only when it first runs); Scrapy 2.11 to 2.13 hold the
limit, but with the slot's queue in ``Downloader.active``, where a slow site's backlog takes the
crawl's places from every other site. The last look asks ``Slots`` on every version: a request
goes if its slot has fewer requests let through and not yet left the downloader
(``request_left_downloader``) than the slot's concurrency, else it waits, FIFO, off
``Downloader.active``, and goes when a place of its slot frees (the place passes to it directly:
no race). However many wait, the engine keeps taking other sites' requests.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred

from scrapy_rep.core.stats import SLOT_WAITED, SLOT_WAITING_MAX

if TYPE_CHECKING:
    from scrapy.http import Request

    from scrapy_rep.crawl._events import Events

__all__ = ["SlotClosed", "Slots"]


class SlotClosed(Exception):
    """A waiting request's wait ended by the crawl closing: it has no place."""


class Slots:
    def __init__(
        self,
        *,
        slot_of: Callable[[Request], tuple[str, Any]],
        limit_of: Callable[[Any], tuple[int, bool]],
        mark: Callable[[Any, Request, bool], None],
        in_flight: Callable[[Request], bool],
        events: Events,
    ) -> None:
        """``slot_of``: a request's slot key and Scrapy's slot (``_compat.get_slot``),
        asked once per request; ``limit_of``: a slot's concurrency and whether Scrapy holds it
        itself (a slot delay above 0: its queue starts one request per delay,
        ``_compat.slot_limit``); ``mark``: count a waiting request in its Scrapy slot, or no
        longer (``_compat.in_slot``); ``in_flight``: is a request still in
        ``Downloader.active`` (one let through that is not has left the downloader without
        the signal: a middleware above the guard answered it)."""
        self._slot_of = slot_of
        self._limit_of = limit_of
        self._mark = mark
        self._in_flight = in_flight
        self._events = events
        #: Requests let through, by their slot's key, until they leave the downloader, and how
        #: many per slot.
        self._through: dict[Request, str] = {}
        self._count: Counter[str] = Counter()
        #: The concurrency each slot was last seen with.
        self._limit: dict[str, int] = {}
        self._waiters: dict[str, deque[tuple[Request, Any, Deferred[None]]]] = {}
        self._waiting = 0

    def enter(self, request: Request) -> Deferred[None] | None:
        """None: ``request`` goes now, counted in its slot until it leaves. Else a Deferred
        fired when it has its place (``SlotClosed``: the crawl closes first); meanwhile it is
        counted in its Scrapy slot's ``active`` (``mark``), as a queued request is there."""
        key, slot = self._slot_of(request)
        concurrency, held_by_scrapy = self._limit_of(slot)
        self._limit[key] = concurrency
        count = self._count[key]
        if held_by_scrapy or concurrency < 1 or (count < concurrency and key not in self._waiters):
            # Counted even where Scrapy holds the limit: right should the slot's delay drop.
            self._through[request] = key
            self._count[key] += 1
            return None
        waiter: Deferred[None] = Deferred()
        self._waiters.setdefault(key, deque()).append((request, slot, waiter))
        # The downloader-aware queue then ranks the slot as busy, and feeds other sites.
        self._mark(slot, request, True)
        self._waiting += 1
        self._events.count(SLOT_WAITED)
        self._events.most(SLOT_WAITING_MAX, self._waiting)
        return waiter

    def left(self, request: Request, spider: object = None) -> None:
        """``request_left_downloader``: its place goes to its slot's first waiter."""
        key = self._through.pop(request, None)
        if key is None:
            return
        self._count[key] -= 1
        if not self._count[key] and key not in self._waiters:
            # Nothing of this slot here any more: kept per slot in flight, not per site seen.
            del self._count[key], self._limit[key]
        while (waiters := self._waiters.get(key)) and self._count[key] < self._limit[key]:
            queued, slot, waiter = waiters.popleft()
            if not waiters:
                del self._waiters[key]
            self._waiting -= 1
            self._mark(slot, queued, False)
            self._through[queued] = key
            self._count[key] += 1
            # Settled first: without asyncio the waiter's coroutine runs on at once, and may
            # come back here (its route paused meanwhile: it leaves, and its place passes on).
            waiter.callback(None)

    def taken(self, pairs: list[tuple[Request, Any]]) -> list[tuple[Request, Any]]:
        """Requests taken out of their slot's queue before downloading (a pause sends them
        back): they never get ``request_left_downloader``, so their places free here."""
        for request, _ in pairs:
            self.left(request)
        return pairs

    def sweep(self) -> None:
        """Free the places of requests let through that left ``Downloader.active`` without
        ``request_left_downloader`` (a middleware above the guard answered them)."""
        for request in [request for request in self._through if not self._in_flight(request)]:
            self.left(request)

    def let_go(self) -> None:
        """The crawl closes: every waiting request's wait ends without a place
        (``SlotClosed``), so that the engine, which counts them in progress, can close."""
        waiters, self._waiters = self._waiters, {}
        self._waiting = 0
        for queue in waiters.values():
            for request, slot, waiter in queue:
                self._mark(slot, request, False)
                waiter.errback(SlotClosed())

    def busy(self) -> bool:
        return bool(self._waiters)

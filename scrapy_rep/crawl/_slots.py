"""``Slots``: each download slot's concurrency, held before the download. Scrapy >= 2.14, with the
asyncio reactor and a slot delay of 0, starts a slot's whole queue at once (each download is a
task that enters ``slot.transferring`` only when it first runs); Scrapy 2.11 to 2.13 hold the
limit, but with the slot's queue in ``Downloader.active``, where a slow site's backlog takes the
crawl's places from every other site. The last look asks ``Slots`` on every version: a request
goes if its slot has fewer requests let through and not yet left the downloader
(``request_left_downloader``) than the slot's concurrency, else it waits, FIFO, off
``Downloader.active``, and goes when a place of its slot frees (the place passes to it directly:
no race). However many wait, the engine keeps taking other sites' requests.

With a fleet's places (``fleet``: ``storage.fleet.RedisPlaces``, REP_FLEET_LIMITS) every slot's
concurrency and delay are the fleet's: a request goes when the fleet gives it a place (its
lease, given back when it leaves the downloader), else waits here as above; the slot's own delay
is 0 (``fleet_limits`` moves it to the fleet), so no place sits idle in Scrapy's queue. A
waiting slot asks the fleet again when told a place freed (``woken``), when the next start is
due, and on the waiting room's tick (``sweep``) as a backstop.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from twisted.internet.defer import Deferred

from scrapy_rep.core.stats import SLOT_WAITED, SLOT_WAITING_MAX

if TYPE_CHECKING:
    from scrapy.http import Request

    from scrapy_rep.core.clock import Clock, DelayedCall
    from scrapy_rep.crawl._events import Events
    from scrapy_rep.storage.fleet import SlotLimits

#: Seconds between a waiting slot's backstop asks (a wake-up message may be missed).
_BACKSTOP = 1.0


class Places(Protocol):
    """A fleet's places (``storage.fleet.RedisPlaces``)."""

    def take(
        self, slot: str, limits: SlotLimits, more: bool, release: str | None = None
    ) -> str | float: ...

    def give(self, slot: str, lease: str) -> None: ...

    def leave(self, slot: str) -> None: ...


__all__ = ["Places", "SlotClosed", "Slots"]


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
        clock: Clock | None = None,
        fleet: Places | None = None,
        fleet_limits: Callable[[str, Any], SlotLimits] | None = None,
    ) -> None:
        """``slot_of``: a request's slot key and Scrapy's slot (``_compat.get_slot``),
        asked once per request; ``limit_of``: a slot's concurrency and whether Scrapy holds it
        itself (a slot delay above 0: its queue starts one request per delay,
        ``_compat.slot_limit``); ``mark``: count a waiting request in its Scrapy slot, or no
        longer (``_compat.in_slot``); ``in_flight``: is a request still in
        ``Downloader.active`` (one let through that is not has left the downloader without
        the signal: a middleware above the guard answered it); ``fleet``: the fleet's places
        (with ``fleet_limits``: a Scrapy slot's limits, its delay moved to the fleet, and
        ``clock``), or None."""
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
        self._clock = clock
        self._fleet = fleet
        self._fleet_limits = fleet_limits
        #: The fleet's leases of the requests let through; each fleet slot's limits, when it
        #: was last asked, and its timer for the next start.
        self._leases: dict[Request, str] = {}
        self._declared: dict[str, SlotLimits] = {}
        self._asked: dict[str, float] = {}
        self._timers: dict[str, DelayedCall] = {}

    def enter(self, request: Request) -> Deferred[None] | None:
        """None: ``request`` goes now, counted in its slot until it leaves. Else a Deferred
        fired when it has its place (``SlotClosed``: the crawl closes first); meanwhile it is
        counted in its Scrapy slot's ``active`` (``mark``), as a queued request is there."""
        key, slot = self._slot_of(request)
        if self._fleet is not None and self._fleet_limits is not None:
            self._declared[key] = self._fleet_limits(key, slot)
            if key not in self._waiters and self._let_through(request, key):
                return None
            return self._wait(request, key, slot)
        concurrency, held_by_scrapy = self._limit_of(slot)
        self._limit[key] = concurrency
        count = self._count[key]
        if held_by_scrapy or concurrency < 1 or (count < concurrency and key not in self._waiters):
            # Counted even where Scrapy holds the limit: right should the slot's delay drop.
            self._through[request] = key
            self._count[key] += 1
            return None
        return self._wait(request, key, slot)

    def _wait(self, request: Request, key: str, slot: Any) -> Deferred[None]:
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
        if (lease := self._leases.pop(request, None)) is not None and self._fleet is not None:
            if not self._count[key]:
                del self._count[key]
                if key not in self._waiters:  # kept per slot in flight, as below
                    del self._declared[key], self._asked[key]
            # Given back, and the slot's next waiter asks, in one call.
            self.woken(key, release=lease)
            return
        if not self._count[key] and key not in self._waiters:
            # Nothing of this slot here any more: kept per slot in flight, not per site seen.
            del self._count[key], self._limit[key]
        while self._waiters.get(key) and self._count[key] < self._limit[key]:
            queued, waiter = self._first_waiter(key)
            self._through[queued] = key
            self._count[key] += 1
            # Settled first: without asyncio the waiter's coroutine runs on at once, and may
            # come back here (its route paused meanwhile: it leaves, and its place passes on).
            waiter.callback(None)

    def woken(self, key: str, release: str | None = None) -> None:
        """A fleet place may be free in slot ``key``: its waiters, first come first served,
        take what the fleet gives. ``release``: a lease of the slot given back first."""
        while (waiters := self._waiters.get(key)) and self._fleet is not None:
            if (timer := self._timers.pop(key, None)) is not None and timer.active():
                timer.cancel()
            taken = self._let_through(waiters[0][0], key, more=len(waiters) > 1, release=release)
            release = None
            if not taken:
                return
            self._first_waiter(key)[1].callback(None)
        if release is not None and self._fleet is not None:
            self._fleet.give(key, release)

    def _first_waiter(self, key: str) -> tuple[Request, Deferred[None]]:
        """Slot ``key``'s first waiter, out of the queue and of its Scrapy slot's count."""
        waiters = self._waiters[key]
        request, slot, waiter = waiters.popleft()
        if not waiters:
            del self._waiters[key]
        self._waiting -= 1
        self._mark(slot, request, False)
        return request, waiter

    def _let_through(
        self, request: Request, key: str, *, more: bool = False, release: str | None = None
    ) -> bool:
        """Ask the fleet for a place for ``request`` (``release`` given back first): True if
        it has one; else a timer asks again when the next start is due."""
        assert self._fleet is not None and self._clock is not None
        self._asked[key] = self._clock.seconds()
        got = self._fleet.take(key, self._declared[key], more, release)
        if isinstance(got, str):
            self._through[request] = key
            self._leases[request] = got
            self._count[key] += 1
            return True
        if got > 0 and key not in self._timers:
            self._timers[key] = self._clock.callLater(got, self._due, key)
        return False

    def _due(self, key: str) -> None:
        self._timers.pop(key, None)
        self.woken(key)

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
        if self._fleet is not None and self._clock is not None:
            # The backstop: a slot not asked for a second asks now (a missed wake-up).
            now = self._clock.seconds()
            for key in [key for key in self._waiters if now - self._asked.get(key, 0) >= _BACKSTOP]:
                self.woken(key)

    def let_go(self) -> None:
        """The crawl closes: every waiting request's wait ends without a place
        (``SlotClosed``), so that the engine, which counts them in progress, can close."""
        waiters, self._waiters = self._waiters, {}
        self._waiting = 0
        for timer in self._timers.values():
            if timer.active():
                timer.cancel()
        self._timers.clear()
        if self._fleet is not None:
            for key in waiters:
                self._fleet.leave(key)
        for queue in waiters.values():
            for request, slot, waiter in queue:
                self._mark(slot, request, False)
                waiter.errback(SlotClosed())

    def busy(self) -> bool:
        return bool(self._waiters)

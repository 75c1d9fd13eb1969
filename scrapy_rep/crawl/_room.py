"""``Room``: the waits a request makes before its download, in place and off
``Downloader.active`` (the held requests' waits at the gate are ``Holds``).

At the final gate (``RobotsTxtMiddleware.process_request``), what the admission answers "wait"
to: an unknown origin's first request waits for its robots.txt (``first_request``); any other
request waits for what it needs (``settle``), or goes back to the gate to be held there (one the
gate let through that now waits for a pause or an unreachable origin); a spider's own request for
robots.txt is answered from the crawl's copy (``robots_copy``, ``COPY_FLAG``).

At the guard's last look (``RobotsTxtGuard``, after every other downloader middleware):

- ``Admission.again``: a request whose URL or User-Agent tokens a downloader middleware changed
  since its verdict was given (one that rotates User-Agents, at 400 say) is judged again;
- ``Admission.leaving`` (``PageAnswers.page_leaving``): a page whose route paused since it was
  admitted goes back to the gate;
- the admission's step 6 (``Slots``, below): a request over its download slot's concurrency
  waits for a place, off ``Downloader.active``, so the engine keeps feeding other sites
  meanwhile.

A slot wait the crawl's close ends (``SlotClosed``): a request from the scheduler goes back to
the gate, where the admission has it held (``send_back(closing=True)``), as requests left in
Scrapy's scheduler are kept or left; an ``engine.download`` caller is dropped with the reason
``closing``.

``Slots``: each download slot's concurrency, held before the download. Scrapy >= 2.14, with the
asyncio reactor and a slot delay of 0, starts a slot's whole queue at once (each download is a
task that enters ``slot.transferring`` only when it first runs); Scrapy 2.11 to 2.13 hold the
limit, but with the slot's queue in ``Downloader.active``, where a slow site's backlog takes the
crawl's places from every other site. The last look asks ``Slots`` on every version: a request
goes if its slot has fewer requests let through and not yet left the downloader
(``request_left_downloader``) than the slot's concurrency, else it waits, FIFO, off
``Downloader.active``, and goes when a place of its slot frees (the place passes to it directly:
no race). However many wait, the engine keeps taking other sites' requests.

The room's one tick (``Holds.tick``) sweeps the places of requests that left without the signal
(``sweep``) and, when the crawl is asked to close, lets the waiting requests go without a place
(``let_go``, ``SlotClosed``): the room keeps them as it keeps held requests, or drops them with
the reason (an ``engine.download`` caller), rather than download a slow site's backlog on the
way out.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar, cast

from scrapy.http import Request, Response, TextResponse
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from scrapy_rep.core.stats import SLOT_WAITED, SLOT_WAITING_MAX
from scrapy_rep.crawl import _compat, _inline
from scrapy_rep.crawl._admission import NO_PLACE, Drop, Wait

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_rep.core.clock import Clock
    from scrapy_rep.core.robots_file import RobotsTxt
    from scrapy_rep.crawl._admission import Admission, Awaited
    from scrapy_rep.crawl._events import Events
    from scrapy_rep.crawl._holds import Holds
    from scrapy_rep.crawl._resolver import Resolver

__all__ = ["COPY_FLAG", "Room", "SlotClosed", "Slots"]

_T = TypeVar("_T")

#: Flag of a response answering a spider's own robots.txt request from the crawl's copy.
COPY_FLAG = "robotstxt_copy"


class Room:
    def __init__(
        self,
        *,
        crawler: Crawler,
        admission: Admission,
        holds: Holds,
        resolver: Resolver[RobotsTxt],
        clock: Clock,
        slots: Slots | None,
        page_leaving: Callable[[Request], Request | None] | None,
    ) -> None:
        """``crawler``: its engine (there once the crawl runs) keeps ``Downloader.active``;
        ``slots``: the download slots' concurrency (None: REP_SLOT_CONCURRENCY off);
        ``page_leaving``: a page whose route paused since goes back (None: pauses off)."""
        self._crawler = crawler
        self._admission = admission
        self._holds = holds
        self._resolver = resolver
        self._clock = clock
        self._slots = slots
        self._page_leaving = page_leaving

    # -- the final gate's waits --------------------------------------------------------------

    async def off_active(
        self, waiter: Deferred[_T], request: Request, downloads: _inline.Taken | None = None
    ) -> _T:
        """Wait for ``waiter`` with ``request`` out of ``Downloader.active``: waiting for
        robots.txt is not downloading, so the CONCURRENT_REQUESTS place is given back meanwhile
        (an ``engine.download`` caller cannot stall other origins). ``downloads``: the ones
        ``waiter`` waits for, run in this task (``_inline``)."""
        engine = self._crawler.engine
        left = _compat.leave_active(engine, request)
        if left:
            # Back the moment the wait is over, not a turn of the event loop later when this
            # task resumes: meanwhile the engine would see nothing in flight, and close.
            waiter.addBoth(_rejoined, engine, request)
        try:
            if downloads:
                await _inline.run(downloads)
            return await maybe_deferred_to_future(waiter)
        finally:
            if left:
                _compat.rejoin_active(engine, request)

    async def first_request(self, origin: str, request: Request) -> Request | None:
        """An unknown origin's first request, let through by the gate: it resolves the origin
        now and waits for it here, off ``Downloader.active`` and outside any slot, so it goes
        the moment robots.txt is known (not behind the scheduler's backlog, as a released
        request would). Unreachable, it waits here as held requests do (this is a crawl whose
        held requests live in memory): one wait, not a trip back through the scheduler."""
        with _inline.taken() as downloads:
            resolution = self._resolver.resolve(origin, request)
        try:
            # Its robots.txt download runs in this task: the request goes on in the turn of
            # the event loop robots.txt is known in, as with Scrapy's own middleware.
            state = await self.off_active(resolution, request, downloads)
        except Exception:  # the resolver logged it; it waits on the origin's retry schedule
            pass
        else:
            self._resolver.reinstate(state)
        decision = self._admission.decide(request, origin, self._clock.seconds(), "download")
        if isinstance(decision, Drop):
            self._admission.refuse(request, decision.why)
        if isinstance(decision, Wait):
            return await self.settle(origin, request, decision, first=True)
        return None

    async def settle(
        self, origin: str, request: Request, decision: Wait, *, first: bool = False
    ) -> Request | None:
        """Wait here, off ``Downloader.active``, until the admission lets ``request`` go (or
        drops it). A request the gate let through (to the scheduler) and that now waits for
        its route's pause or for an origin become unreachable goes back to the gate instead,
        to be held there (durably where the crawl is); the others wait here: an
        ``engine.download`` caller, an origin's first request, one another process or an
        earlier run allowed, one whose origin's state the LRU evicted. ``first``: an origin's
        first request, counted as held while it waits for robots.txt."""
        # The states known for it so far serve its next decision, even if the caches evicted
        # them while it waited (caches smaller than the origins in flight).
        kept = self._admission.kept(origin)
        while True:
            awaited = decision.awaited
            if not first and self._admission.goes_back(request, origin, awaited):
                return self._admission.send_back(request)
            if awaited is self._resolver:
                self._holds.say_waiting(origin)
            waiter = self._wait_for(awaited, origin, request, first)
            known = await self.off_active(waiter, request)
            if known is not None:
                kept[cast("Resolver[Any]", awaited)] = known
            self._admission.restore(kept)
            next_decision = self._admission.decide(
                request, origin, self._clock.seconds(), "download"
            )
            kept.update(self._admission.kept(origin))
            if isinstance(next_decision, Drop):
                self._admission.refuse(request, next_decision.why)
            if not isinstance(next_decision, Wait):
                return None
            decision = next_decision

    def _wait_for(
        self, awaited: Awaited, origin: str, request: Request, first: bool
    ) -> Deferred[Any]:
        """A Deferred fired once ``awaited`` says of ``origin``: robots.txt through the holds
        (its waits time out and are given up as held requests are; an origin's first request
        is counted as held there, as it would have been in the gate's hold)."""
        if awaited is self._resolver:
            return self._holds.wait(origin, request, held=first)
        return awaited.wait(origin, request)

    async def robots_copy(self, origin: str, request: Request) -> Response | None:
        """A spider's request for ``origin``'s robots.txt, answered from the crawl's copy (one
        robots.txt request per origin): it waits while robots.txt is unknown or being retried,
        is dropped with the reason if the crawl gives the origin up, and goes to the server
        only when there is no copy to give (unreachable for too long, the store lost it)."""
        answer = self._admission.copy_of(request, origin, self._clock.seconds())
        while isinstance(answer, Wait):
            self._holds.say_waiting(origin)
            known = await self.off_active(self._holds.wait(origin, request), request)
            self._resolver.reinstate(known)
            answer = self._admission.copy_of(request, origin, self._clock.seconds())
        if isinstance(answer, Drop):
            self._admission.refuse(request, answer.why)
        state = answer
        copy = await maybe_deferred_to_future(self._resolver.copy(state))
        if copy is None:
            return None
        status, url, body = copy
        # HttpCacheMiddleware stores what passes its process_response: not this copy.
        request.meta["dont_cache"] = True
        if body is None:
            return Response(url, status=status, request=request, flags=[COPY_FLAG])
        return TextResponse(
            url,
            status=status,
            # SPEC A1: the body is read as UTF-8, whatever the server declared.
            headers={b"Content-Type": b"text/plain; charset=utf-8"},
            body=body,
            request=request,
            flags=[COPY_FLAG],
        )

    # -- the guard's last look -----------------------------------------------------------

    def last_look(self, request: Request) -> Request | Coroutine[Any, Any, Request | None] | None:
        """None to go on, a Request to send back, or a coroutine waiting for a place. A
        request whose URL or User-Agent a middleware changed since it was judged is judged
        again first: dropped, sent back to wait, or on."""
        again = self._admission.again(request)
        if isinstance(again, Drop):
            self._admission.refuse(request, again.why)
        if isinstance(again, Wait):
            return self._admission.send_back(request)
        back = self._paused_since(request)
        if back is not None:
            return back
        # Step 6: a place in its download slot (every request counts, as Scrapy counts it in
        # the slot: pages, robots.txt and usage-document fetches, ``engine.download`` callers,
        # ``dont_obey_robotstxt`` ones).
        waiter = None if self._slots is None else self._slots.enter(request)
        if waiter is None:
            return None
        self._holds.watch_slots()
        return self._slot_wait(request, waiter)

    def _paused_since(self, request: Request) -> Request | None:
        return None if self._page_leaving is None else self._page_leaving(request)

    async def _slot_wait(self, request: Request, waiter: Deferred[None]) -> Request | None:
        """Wait for a place in ``request``'s download slot (``waiter``; counted in its Scrapy
        slot meanwhile, by ``Slots``). Its route may have paused meanwhile: back it goes then,
        and its place to the next."""
        slots = self._slots
        assert slots is not None
        try:
            await self.off_active(waiter, request)
        except SlotClosed:
            return self._closed(request)
        back = self._paused_since(request)
        if back is not None:
            slots.left(request)
        return back

    def _closed(self, request: Request) -> Request:
        """The crawl closes while ``request`` waits for a place: one from the scheduler (it
        carries the gate's token) goes back to the gate to be held (kept for the next run
        where held requests are durable, else said as not downloaded); an ``engine.download``
        caller is dropped with the reason. The rest of the crawl's closing is left to the
        holds, which notice it on their own tick."""
        origin = self._admission.origin(request)
        if origin is not None and self._admission.from_scheduler(request):
            return self._admission.send_back(request, closing=True)
        why = self._admission.closing(origin or request.url, NO_PLACE)
        self._admission.refuse(request, why)


def _rejoined(result: _T, engine: Any, request: Request) -> _T:
    _compat.rejoin_active(engine, request)
    return result


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
        #: Requests let through, by their slot's key, until they leave the downloader.
        self._through: dict[Request, str] = {}
        self._count: dict[str, int] = {}
        #: The concurrency each slot was last seen with.
        self._limit: dict[str, int] = {}
        self._waiters: dict[str, deque[tuple[Request, Any, Deferred[None]]]] = {}
        self._waiting = 0
        self._most = 0

    def enter(self, request: Request) -> Deferred[None] | None:
        """None: ``request`` goes now, counted in its slot until it leaves. Else a Deferred
        fired when it has its place (``SlotClosed``: the crawl closes first); meanwhile it is
        counted in its Scrapy slot's ``active`` (``mark``), as a queued request is there."""
        key, slot = self._slot_of(request)
        concurrency, held_by_scrapy = self._limit_of(slot)
        self._limit[key] = concurrency
        count = self._count.get(key, 0)
        if held_by_scrapy or concurrency < 1 or (count < concurrency and key not in self._waiters):
            # Counted even where Scrapy holds the limit: right should the slot's delay drop.
            self._through[request] = key
            self._count[key] = count + 1
            return None
        waiter: Deferred[None] = Deferred()
        self._waiters.setdefault(key, deque()).append((request, slot, waiter))
        # The downloader-aware queue then ranks the slot as busy, and feeds other sites.
        self._mark(slot, request, True)
        self._waiting += 1
        self._events.count(SLOT_WAITED)
        if self._waiting > self._most:
            self._most = self._waiting
            self._events.most(SLOT_WAITING_MAX, self._most)
        return waiter

    def left(self, request: Request, spider: object = None) -> None:
        """``request_left_downloader``: its place goes to its slot's first waiter."""
        key = self._through.pop(request, None)
        if key is None:
            return
        count = self._count[key] - 1
        if count:
            self._count[key] = count
        else:
            del self._count[key]
        if key in self._waiters:
            self._wake(key)
        elif not count:
            # Nothing of this slot here any more: kept per slot in flight, not per site seen.
            del self._limit[key]

    def taken(self, pairs: list[tuple[Request, Any]]) -> list[tuple[Request, Any]]:
        """Requests taken out of their slot's queue before downloading (a pause sends them
        back): they never get ``request_left_downloader``, so their places free here."""
        for request, _ in pairs:
            self.left(request)
        return pairs

    def _wake(self, key: str) -> None:
        limit = self._limit.get(key, 1)
        while (waiters := self._waiters.get(key)) and self._count.get(key, 0) < limit:
            request, slot, waiter = waiters.popleft()
            if not waiters:
                del self._waiters[key]
            self._waiting -= 1
            self._mark(slot, request, False)
            self._through[request] = key
            self._count[key] = self._count.get(key, 0) + 1
            # Settled first: without asyncio the waiter's coroutine runs on at once, and may
            # come back here (its route paused meanwhile: it leaves, and its place passes on).
            waiter.callback(None)

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

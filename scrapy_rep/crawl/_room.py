"""``Room``: the waiting room. Every wait a request makes before its download, its tick and its
close; the admission says what a request waits for (its ``Wait``) and how each wait ends.

- *held* (``hold``, from the gate): off the scheduler and the downloader, in a
  ``HeldRequests`` place (memory, JOBDIR, the fleet's Redis: durable from the moment it is
  held). Released, each asks the admission again: held for what it still needs, or to the
  scheduler (``crawl``), counted once per fate (README, ``robotstxt/held``).
- *in place*, at the final gate, off ``Downloader.active`` (``off_active``): an unknown
  origin's first request (``first_request``), any other the admission tells to wait
  (``settle``), a spider's own request for robots.txt (``robots_copy``).
- at the guard's last look (``last_look``, after every other downloader middleware): a
  request a middleware changed since its verdict is judged again; a page whose route paused
  since goes back; one over its download slot's concurrency waits for a place (step 6,
  ``_slots.Slots``), off ``Downloader.active``.

What waits is kept in one table, per origin (``_Origin``): the held requests' times and what
each waits for (the requests themselves are in the place, oldest first), the in-place waiters,
the interest registered for what they await (one Deferred per origin and thing, cancelled when
nothing waits: an origin nobody waits for is not retried) and the states that released them
(put back in their caches before each release: caches smaller than the origins in flight would
otherwise release and hold them again for ever). Requests are sent on the next reactor turn,
never inside the completion that released them.

One tick, while anything waits, goes through the table once per origin (``give_up``): a wait
over REP_HOLD_TIMEOUT, or an origin the admission gives up, ends with the admission's reason
(held requests kept for the next run where the place is durable, SPEC C4, else dropped); it
sweeps the slots' places and notices a close being asked (``let_go``): in-place waiters fail
with ``closing``, a slot wait ends (``SlotClosed``), held requests stay until ``close`` says
what stays (kept for the next run, or not downloaded as Scrapy leaves its scheduler's).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast
from weakref import WeakKeyDictionary

from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request, Response
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import task
from twisted.internet.defer import Deferred

from scrapy_rep.core.stats import HELD, HELD_REFILED, RELEASED
from scrapy_rep.crawl import _compat, _inline
from scrapy_rep.crawl._admission import NO_PLACE, SEEN_META, Drop, Wait, seen_mark
from scrapy_rep.crawl._events import Waiting, Why
from scrapy_rep.crawl._slots import SlotClosed, Slots
from scrapy_rep.storage.held import HeldRequests, MemoryHeld

if TYPE_CHECKING:
    from scrapy_rep.core.clock import Clock
    from scrapy_rep.core.policy import Limits
    from scrapy_rep.core.robots_file import RobotsTxt
    from scrapy_rep.crawl._admission import Admission, Awaited
    from scrapy_rep.crawl._cache import OriginState
    from scrapy_rep.crawl._drops import Drops
    from scrapy_rep.crawl._events import Events
    from scrapy_rep.crawl._resolver import Resolver
    from scrapy_rep.crawl.exceptions import DropReason

__all__ = ["Room"]

_T = TypeVar("_T")
_KEEP_HINT = "; set JOBDIR, or a Redis REP_STORE, to keep such requests for the next run"
_Waiter = Deferred["OriginState[RobotsTxt]"]


@dataclass
class _Origin:
    """What waits for one origin (see the module docstring)."""

    #: When each held request was held, and what it waits for (its ``Awaited.name``: the
    #: words of a timeout and of the closing line), in the place's order.
    held: list[tuple[float, str]] = field(default_factory=list)
    #: Since when each in-place waiter for robots.txt waits, and the waiter.
    waiters: list[tuple[float, _Waiter]] = field(default_factory=list)
    interest: dict[str, Deferred[Any]] = field(default_factory=dict)
    known: dict[Resolver[Any], OriginState[Any]] = field(default_factory=dict)

    def waiting(self) -> bool:
        return bool(self.held or self.waiters)

    def expired(self, deadline: float) -> tuple[int, set[str], list[_Waiter]]:
        """Take what waits since ``deadline`` or before: how many held requests (the first in
        the place, oldest first), what they wait for, and the in-place waiters."""
        old = bisect.bisect_right(self.held, deadline, key=lambda held: held[0])
        waited_for = {what for _since, what in self.held[:old]}
        del self.held[:old]
        waiters = [waiter for since, waiter in self.waiters if since <= deadline]
        self.waiters = [(since, waiter) for since, waiter in self.waiters if since > deadline]
        return old, waited_for, waiters


class _InPlace:
    """The room's waits in place (see the module docstring), each off ``Downloader.active``
    (``off_active``): at the final gate (``first_request``, ``settle``, ``robots_copy``) and at
    the guard's last look (``last_look``). A base of ``Room``, which keeps what they wait in:
    the table, the tick and the close."""

    _clock: Clock
    _resolver: Resolver[RobotsTxt]
    _admission: Admission
    _slots: Slots | None
    _engine: Callable[[], Any]
    _page_leaving: Callable[[Request], Request | None]
    say_waiting: Callable[[str], None]
    wait: Callable[..., _Waiter]
    watch_slots: Callable[[], None]

    async def off_active(
        self, waiter: Deferred[_T], request: Request, downloads: _inline.Taken | None = None
    ) -> _T:
        """Wait for ``waiter`` with ``request`` out of ``Downloader.active``: waiting is not
        downloading, so the CONCURRENT_REQUESTS place is given back meanwhile (an
        ``engine.download`` caller cannot stall other origins). ``downloads``: the ones
        ``waiter`` waits for, run in this task (``_inline``)."""
        engine = self._engine()
        left = _compat.leave_active(engine, request)
        if left:
            # Back the moment the wait is over, not a turn of the event loop later when this
            # task resumes: meanwhile the engine would see nothing in flight, and close.
            waiter.addBoth(_after, _compat.rejoin_active, engine, request)
        try:
            await _inline.run(downloads or [])
            return await maybe_deferred_to_future(waiter)
        finally:
            if left:
                _compat.rejoin_active(engine, request)

    async def first_request(self, origin: str, request: Request) -> Request | None:
        """An unknown origin's first request, let through by the gate, resolves it and waits
        here, outside any slot: it goes the moment robots.txt is known, not behind the
        scheduler's backlog. Unreachable, it waits here as held requests do (this crawl's live
        in memory): one wait, not a trip back through the scheduler."""
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
        return await self.settle(origin, request, self._decided(request, origin), first=True)

    async def settle(
        self, origin: str, request: Request, decision: Wait | None, *, first: bool = False
    ) -> Request | None:
        """Wait here until the admission lets ``request`` go (or drops it), or send it back to
        the gate to be held (``Admission.goes_back``); ``decision`` None: it goes at once.
        ``first``: an origin's first request, counted as held while it waits for robots.txt
        (its waits time out and are given up as held requests' are)."""
        # The states known for it so far serve its next decision, even if the caches evicted
        # them while it waited (caches smaller than the origins in flight).
        kept = self._admission.kept(origin)
        while decision is not None:
            awaited = decision.awaited
            if not first and self._admission.goes_back(request, origin, awaited):
                return self._admission.send_back(request)
            if awaited is self._resolver:
                self.say_waiting(origin)
                waiter = self.wait(origin, request, held=first)
            else:
                waiter = awaited.wait(origin, request)
            known = await self.off_active(waiter, request)
            if known is not None:
                kept[cast("Resolver[Any]", awaited)] = known
            self._admission.restore(kept)
            decision = self._decided(request, origin)
            kept.update(self._admission.kept(origin))
        return None

    def _decided(self, request: Request, origin: str) -> Wait | None:
        """The admission's answer before download: a wait, or None to go on (a drop raises)."""
        decision = self._admission.decide(request, origin, self._clock.seconds(), "download")
        if isinstance(decision, Drop):
            self._admission.refuse(request, decision.why)
        return decision if isinstance(decision, Wait) else None

    async def robots_copy(self, origin: str, request: Request) -> Response | None:
        """A spider's request for ``origin``'s robots.txt, answered from the crawl's copy (one
        robots.txt request per origin): it waits while robots.txt is unknown or being retried,
        is dropped with the reason if the crawl gives the origin up, and goes to the server
        only when there is no copy to give (unreachable for too long, the store lost it)."""
        answer = self._admission.copy_of(request, origin, self._clock.seconds())
        while isinstance(answer, Wait):
            self.say_waiting(origin)
            self._resolver.reinstate(await self.off_active(self.wait(origin, request), request))
            answer = self._admission.copy_of(request, origin, self._clock.seconds())
        if isinstance(answer, Drop):
            self._admission.refuse(request, answer.why)
        return await maybe_deferred_to_future(self._resolver.copy(answer, request))

    def last_look(self, request: Request) -> Request | Coroutine[Any, Any, Request | None] | None:
        """None to go on, a Request to send back, or a coroutine waiting for a place. A
        request whose URL or User-Agent a middleware changed since it was judged is judged
        again first: dropped, sent back to wait, or on."""
        again = self._admission.again(request)
        if isinstance(again, Drop):
            self._admission.refuse(request, again.why)
        if isinstance(again, Wait):
            return self._admission.send_back(request)
        if (back := self._page_leaving(request)) is not None:
            return back
        # Step 6: a place in its download slot (every request counts, as Scrapy counts it in
        # the slot: pages, robots.txt and usage-document fetches, ``engine.download`` callers,
        # ``dont_obey_robotstxt`` ones).
        if self._slots is None or (waiter := self._slots.enter(request)) is None:
            return None
        self.watch_slots()
        return self._slot_wait(request, waiter)

    async def _slot_wait(self, request: Request, waiter: Deferred[None]) -> Request | None:
        """Wait for a place in ``request``'s download slot (counted in its Scrapy slot
        meanwhile, by ``Slots``). Then it is judged again (``Admission.after_wait``): dropped,
        or back to the gate if it must wait (its route paused meanwhile), its place to the
        next. The crawl closing first (``SlotClosed``): one from the scheduler
        (it carries the gate's token) goes back to the gate to be held (kept for the next run
        where held requests are durable, else said as not downloaded); an ``engine.download``
        caller is dropped with the reason."""
        try:
            await self.off_active(waiter, request)
        except SlotClosed:
            origin = self._admission.origin(request)
            if origin is not None and self._admission.from_scheduler(request):
                return self._admission.send_back(request, closing=True)
            why = self._admission.closing(origin or request.url, NO_PLACE)
            self._admission.refuse(request, why)
        # What it was judged by may have changed while it waited (robots.txt refreshed, its
        # route paused): as at the final gate, it goes on, is dropped or goes back, its place
        # freed.
        again = self._admission.after_wait(request)
        if again is None:
            return None
        if self._slots is not None:
            self._slots.left(request)
        if isinstance(again, Drop):
            self._admission.refuse(request, again.why)
        return self._admission.send_back(request)


class Room(_InPlace):
    def __init__(
        self,
        *,
        clock: Clock,
        events: Events,
        drops: Drops,
        resolver: Resolver[RobotsTxt],
        admission: Admission,
        hold_timeout: float,
        limits: Limits,
        crawl: Callable[[Request], object],
        closing: Callable[[], bool],
        wake: Callable[[], None] = lambda: None,
        on_close: Callable[[], None] = lambda: None,
        held: HeldRequests | None = None,
        slots: Slots | None = None,
        engine: Callable[[], Any] = lambda: None,
        page_leaving: Callable[[Request], Request | None] | None = None,
    ) -> None:
        """``crawl`` sends a request to the scheduler; ``closing``: is the crawl asked to close;
        ``wake``: nothing waits any more (the engine may close now, not at its next idle check);
        ``on_close`` closes what else waits for the crawl (once everything here was let go);
        ``held``: where held requests live until ``open`` (memory if None); ``slots``: None
        when REP_SLOT_CONCURRENCY is off; ``engine``: the crawl's, once it runs;
        ``page_leaving``: a page whose route paused since goes back (None: pauses off)."""
        self._clock = clock
        self._events = events
        self._drops = drops
        self._resolver = resolver
        self._admission = admission
        self._timeout = hold_timeout
        self._limits = limits
        self._crawl = crawl
        self._closing = closing
        self._wake = wake
        self._on_close = on_close
        self._slots = slots
        self._engine = engine
        self._page_leaving = page_leaving or (lambda request: None)
        self._origins: dict[str, _Origin] = {}
        # Where held requests live: memory until the spider opens and ``open`` gives the
        # crawl's own place (JOBDIR, the fleet's Redis).
        self._place = held if held is not None else MemoryHeld()
        #: Origins whose held requests go to the scheduler on the next tick: restored from an
        #: earlier run or adopted from a dead fleet process (back through the gate, not counted
        #: as released), or released but not taken by the scheduler (``unsent``).
        self._pending: set[str] = set()
        self._unsent: set[str] = set()
        #: Requests put aside for the job's next run (given up, held too long).
        self._kept = 0
        #: What each request let go after waiting here waited for last, and for how long since
        #: it was first held (for the compliance record).
        self._waited: WeakKeyDictionary[Request, tuple[str, float]] = WeakKeyDictionary()
        #: Origins given up and counted, until their requests are let through again: what
        #: arrives for one meanwhile is given up on the next tick, not counted a second time.
        self._given_up: set[str] = set()
        #: The scheduler's dupefilter's ``request_seen`` (given by ``open``).
        self._seen: Callable[[Request], object] | None = None
        self._opened = False
        # Other fleet processes held requests when the crawl was last idle (``pending_elsewhere``).
        self._elsewhere = False
        # Asked to close (``let_go``); the place closed and the closing line said (``close``).
        self._closed = False
        self._place_closed = False
        self._tick = task.LoopingCall(self.tick)
        self._tick.clock = cast(Any, clock)

    def open(self, held: HeldRequests, seen: Callable[[Request], object] | None = None) -> None:
        """Use ``held`` (opened when the spider opens); what an earlier run left there goes
        back to the scheduler, through the gate again, on the next reactor turn. ``seen``: the
        scheduler's dupefilter's ``request_seen``, given each of those the dupefilter saw
        before it was held, before the spider's first request reaches it."""
        self._place = held
        self._seen = seen
        self._opened = True
        if (count := len(held)) and not self._pending:  # pending already: adopted, counted as such
            self._events.restored(count)
        if count and seen is not None:
            for request in held.peek():
                self._file(request)
        self._pending.update(held.origins())
        if self._pending:
            self._clock.callLater(0, self._send_pending)

    def first_through(self) -> bool:
        """May an unknown origin's first request go on unresolved? Once the spider opened,
        where held requests live in memory only (``HeldRequests.next_run`` None)."""
        return self._opened and self._place.next_run is None

    def adopted(self, available: dict[str, int]) -> None:
        """Requests became this process's to release (a dead fleet process's, or left in the
        store by a failed ``take``): through this process's own gate."""
        self._pending.update(available)
        self._clock.callLater(0, self._send_pending)

    def pending_elsewhere(self) -> bool:
        """Do other fleet processes hold requests that may come to this one? Asked when the
        crawl is idle: while they do, the tick runs and then wakes the engine to ask again, so
        this process closes within a tick of their last one going, not at Scrapy's next idle
        check (every 5 s)."""
        self._elsewhere = bool(getattr(self._place, "pending_elsewhere", lambda: False)())
        if self._elsewhere:
            self._start_tick()
        return self._elsewhere

    def wanted(self, origin: str) -> bool:
        """Do requests (held, or waiting in place) wait for ``origin``?"""
        return (self._origins.get(origin) or _Origin()).waiting()

    def waiting(self, origin: str) -> Waiting:
        """What decides how long the crawl waits for ``origin`` (for the log): since when
        its oldest request waits."""
        waits = self._origins.get(origin) or _Origin()
        since = min([since for since, _ in waits.held[:1] + waits.waiters[:1]], default=None)
        return Waiting(self._limits, self._timeout, since, self._resolver.started)

    def say_waiting(self, origin: str) -> None:
        """Requests wait for ``origin``'s robots.txt: say why (once per origin). An origin
        still being fetched for the first time is not announced (the usual case)."""
        if (state := self._resolver.peek(origin)) is not None:
            self._events.holding(state, self.waiting(origin))

    def busy(self) -> bool:
        """Does anything wait here: a held request, one in place, one for a slot's place (all
        outside ``Downloader.active``, where the engine looks for work in progress)?"""
        if self._closed:
            return False
        held = len(self._place) or self._pending or self._unsent
        in_slot = self._slots is not None and self._slots.busy()
        return bool(held) or in_slot or any(waits.waiters for waits in self._origins.values())

    def hold(self, origin: str, request: Request, until: Awaited) -> None:
        """Keep ``request`` until ``until`` says so (the resolver of ``origin``'s robots.txt, or
        of a usage document the gate needs, or the pauses); then it goes back through the
        gate."""
        if self._place_closed:
            self._drop(origin, [request], [], self._admission.closing(origin, until))
            return
        self._place.add(origin, request)
        self._origins.setdefault(origin, _Origin()).held.append((self._clock.seconds(), until.name))
        self._events.count(HELD)
        self._interested(origin, until, request)

    def wait(self, origin: str, request: Request | None = None, *, held: bool = False) -> _Waiter:
        """A Deferred fired with the origin's state once it serves (or failed). ``held``: the
        request is one the crawl holds (an origin's first, waiting at the final gate after its
        robots.txt failed), counted as held and released as those outside the scheduler are."""
        waiter: _Waiter = Deferred()
        if self._closed:
            self._drop(origin, [], [waiter], self._admission.closing(origin))
            return waiter
        if held:
            self._events.count(HELD)
            waiter.addCallback(_after, self._events.count, RELEASED)
        self._origins.setdefault(origin, _Origin()).waiters.append((self._clock.seconds(), waiter))
        self._interested(origin, self._resolver, request)
        return waiter

    def _interested(self, origin: str, awaited: Awaited, trigger: Request | None) -> None:
        """Requests of ``origin`` wait for ``awaited``: ask it once (per origin and thing); the
        tick runs while anything waits. Once closed, nothing is released any more (``close``
        says what stays held)."""
        self._start_tick()
        waits = self._origins.setdefault(origin, _Origin())
        if self._closed or awaited.name in waits.interest:
            return
        found = waits.interest[awaited.name] = awaited.wait(origin, trigger)
        # Withdrawn (cancelled) or ended by the close: the requests it covered are gone already.
        found.addCallbacks(self._known, lambda failure: None, callbackArgs=(origin, awaited))

    def _known(self, result: Any, origin: str, awaited: Awaited) -> None:
        waits = self._origins.get(origin)
        if waits is None or waits.interest.pop(awaited.name, None) is None:
            return
        if awaited is self._resolver:
            # Waiters resume in process_request, which asks nothing of the resolver.
            waiters, waits.waiters = waits.waiters, []
            for _since, waiter in waiters:
                waiter.callback(result)
        if result is not None and hasattr(awaited, "reinstate"):
            waits.known[cast("Resolver[Any]", awaited)] = result
        # Sending the held requests re-enters the gate, which must not run inside the
        # completion of what fired this.
        self._clock.callLater(0, self._release, origin)

    def _release(self, origin: str) -> None:
        if self._closed:
            return
        self._admission.restore(self._origins.get(origin, _Origin()).known)
        self._send(origin, released=True)

    def _forget(self, origin: str, *, keep: bool = False) -> None:
        """Nothing waits for ``origin`` any more: withdraw the interest registered for it and
        (unless ``keep``: requests may be held again at once) its row."""
        waits = self._origins.get(origin)
        if waits is None or waits.waiting():
            return
        interest, waits.interest = waits.interest, {}
        if not keep:
            del self._origins[origin]
        for found in interest.values():
            found.cancel()

    def _send(self, origin: str, *, released: bool) -> None:
        """Send ``origin``'s held requests to the scheduler one by one; one not taken is held
        again, and tried again on the next tick. ``released``: what they waited for is known
        (counted as released when they go); one that still waits for something else (a usage
        document after robots.txt, its route's pause) stays held for it, keeping the time it
        was first held. Else they come back from an earlier run or another process and pass
        the gate again (held again if need be)."""
        if self._closed:
            return
        waits = self._origins.setdefault(origin, _Origin())
        times, waits.held = waits.held, []
        self._forget(origin, keep=True)
        self._pending.discard(origin)
        self._unsent.discard(origin)
        if released:
            self._given_up.discard(origin)
        now = self._clock.seconds()
        sent = 0
        for index, request in enumerate(self._place.take(origin)):
            try:
                # A released one is judged again: what it still waits for, if anything.
                awaited = self._admission.awaited(request, origin, now) if released else None
            except IgnoreRequest:
                # Dropped as the gate would drop it (its errback, counted): released.
                sent += 1
                continue
            if awaited is not None:
                self._place.add(origin, request)
                waits.held.append((times[index][0] if index < len(times) else now, awaited.name))
                self._interested(origin, awaited, request)
                continue
            if not released:
                # Restored (filed at ``open`` already) or adopted from another process.
                self._file(request)
            elif index < len(times):
                since, what = times[index]
                self._waited[request] = (what, now - since)
            try:
                self._crawl(request)
                sent += 1
            except Exception as exc:
                self._events.release_failed(request, exc)
                # Held again (durably, where the place is), sent again on the next tick.
                self._place.add(origin, request)
                (self._unsent if released else self._pending).add(origin)
                self._start_tick()
        if sent and released:
            self._events.count(RELEASED, sent)
        self._forget(origin)

    def waited(self, request: Request) -> tuple[str, float] | None:
        """What ``request`` waited for here last (``Awaited.name``: "robots.txt", "pause", a
        usage document), and how long it was held in all; None if it was not held."""
        return self._waited.get(request)

    def _send_pending(self) -> None:
        for released, origins in ((True, self._unsent), (False, self._pending)):
            for origin in sorted(origins):
                self._send(origin, released=released)

    def watch_slots(self) -> None:
        """A request waits for a place in its download slot: the tick runs while any does
        (the crawl closed already: its wait ends now)."""
        self._start_tick()
        if self._closed and self._slots is not None:
            self._slots.let_go()

    def tick(self) -> None:
        """While anything waits: notice a close being asked, retry unsent requests, end the
        waits that are over (``give_up``), sweep the download slots."""
        if self._closing():
            self.let_go()
            return
        self._send_pending()
        dropped = self.give_up()
        if self._slots is not None:
            self._slots.sweep()
        if not self.busy():
            if self._tick.running:
                self._tick.stop()
            elsewhere, self._elsewhere = self._elsewhere, False
            if dropped or elsewhere:
                # Nothing waits here any more: the crawl may be over now (or asks the fleet
                # again), not at the engine's next idle check (every 5 s).
                self._wake()

    def give_up(self) -> int:
        """Once per origin: end the waits over REP_HOLD_TIMEOUT (``Admission.deadline``), and
        every wait for an origin the admission gives up now (``Admission.given_up``; not while
        restored or adopted requests are still to be sent). On every tick and when the crawl is
        idle, so a site answering "come back later" at once cannot keep a busy crawl waiting;
        returns how many requests this run let go."""
        if self._closed:
            return 0
        dropped = 0
        now = self._clock.seconds()
        for origin in sorted(self._origins):
            if (waits := self._origins.get(origin)) is None or not waits.waiting():
                continue
            old, waited_for, expired = waits.expired(self._admission.deadline(origin, now))
            if old:
                # The place's oldest (``take`` returns them first; a take that failed returns
                # them later, through ``adopted``).
                held = self._place.take(origin)
                for request in held[old:]:
                    self._place.add(origin, request)
                why = self._admission.timed_out(origin, waited_for)
                dropped += self._stop(origin, held[:old], [], why)
            if expired:
                why = self._admission.timed_out(origin, {self._resolver.name})
                dropped += self._stop(origin, [], expired, why)
            if waits.waiting() and not self._pending:
                given_up = self._admission.given_up(origin)
                if given_up is None:
                    self._given_up.discard(origin)
                else:
                    if origin not in self._given_up:
                        self._given_up.add(origin)
                        self._events.gave_up(given_up[0])
                    _all, _waited_for, waiters = waits.expired(float("inf"))  # every wait ends
                    dropped += self._stop(origin, self._place.take(origin), waiters, given_up)
            self._forget(origin)
        return dropped

    def _stop(
        self, origin: str, held: list[Request], waiters: list[_Waiter], why: tuple[DropReason, str]
    ) -> int:
        """This run waits no longer for ``held`` and ``waiters`` (returns how many): the
        durable place keeps the held ones for the next run (SPEC C4); the rest are dropped
        with ``why``, the admission's reason and words (``timed_out``, ``given_up``)."""
        reason, words = why
        lost = self._place.put_aside(origin, held) if held else []
        kept = len(held) - len(lost)
        self._kept += kept
        if kept:
            self._events.kept(origin, kept, words, self._place.next_run)
            gone = set(map(id, lost))
            self._drops.kept([r for r in held if id(r) not in gone], Why(reason, words, origin))
        rule = words if self._place.next_run is not None else words + _KEEP_HINT
        self._drop(origin, lost, waiters, Why(reason, f"{origin}: {words}", origin, rule=rule))
        return len(held) + len(waiters)

    def let_go(self) -> None:
        """The crawl is asked to close: let every waiting request go now and release nothing
        more, then ``on_close`` (may be called again). Held requests stay in the place, as
        do those held from now on, until ``close``."""
        if self._closed:
            return
        self._closed = True
        if self._tick.running:
            self._tick.stop()
        if self._slots is not None:
            self._slots.let_go()
        for origin, waits in list(self._origins.items()):
            waiters, waits.waiters = waits.waiters, []
            interest, waits.interest = waits.interest, {}
            why = self._admission.closing(origin)
            self._drop(origin, [], [waiter for _since, waiter in waiters], why)
            for found in interest.values():
                found.cancel()
        self._on_close()

    def _drop(self, origin: str, requests: list[Request], waiters: list[_Waiter], why: Why) -> None:
        """Requests of ``origin`` (held, or waiting in place: ``waiters``) this run lets go:
        dropped through the drop path (counted, logged, in the closing summary), each waiter
        failing with ``why``: the admission's ``closing`` when the crawl closes (or a request
        is held after the place closed), else why ``_stop`` stopped waiting."""
        self._drops.drop(origin, requests, why, waiters=len(waiters))
        for waiter in waiters:
            waiter.errback(why.exception())

    def close(self) -> None:
        """The spider closed (nothing is in progress any more): say what stays held, kept
        for the next run where the place is durable, else not downloaded, as Scrapy leaves
        the requests in its scheduler; then close the place (may be called again)."""
        self.let_go()
        if self._place_closed:
            return
        # How many held requests wait for what (robots.txt, a usage document, a pause).
        waited_for = Counter(what for waits in self._origins.values() for _, what in waits.held)
        self._origins = {}
        self._place_closed = True
        self._drops.held_at_close(self._place.peek, kept=self._place.next_run is not None)
        if self._place.next_run is None:
            self._events.closed_with_held(len(self._place), waited_for)
        else:
            # Durable ones stay (the place counts and logs those it had only in memory).
            persisted = len(self._place) - self._place.in_memory()
            self._events.closed_keeping(persisted, self._kept, self._place.next_run, waited_for)
        self._place.close()

    def _file(self, request: Request) -> None:
        """If the dupefilter saw ``request`` before it was held (``SEEN_META``), file its
        fingerprint with this crawl's dupefilter: the spider's own copy (a start request yielded
        again by a resumed job) is then filtered as a duplicate, while this one
        (``dont_filter``) goes. Counted when the dupefilter did not have it (lost in a
        ``kill -9``, or another process's)."""
        if self._seen is None or request.meta.get(SEEN_META) != seen_mark(request):
            return
        try:
            if not self._seen(request):
                self._events.count(HELD_REFILED)
        except Exception as exc:  # a dupefilter whose backend is down (scrapy-redis's)
            self._events.not_filed(request, exc)

    def _start_tick(self) -> None:
        if not self._tick.running and not self._closed:
            # Often enough to notice a close within a second, and to expire on time.
            self._tick.start(min(1.0, max(0.05, self._timeout / 4)), now=False)


def _after(result: _T, call: Callable[..., object], *args: Any) -> _T:
    """A Deferred's callback: ``call(*args)``, then ``result`` goes on unchanged."""
    call(*args)
    return result

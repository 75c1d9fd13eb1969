"""``Holds``: the waiting room. Requests the admission told to wait, until what they wait for
(robots.txt, a usage document, their route's pause) is known; expired, given up, let go on close.

- *held* requests take no slot anywhere and live in a ``HeldRequests`` place (memory, JOBDIR,
  the fleet's Redis: durable from the moment they are held). Released, each asks the admission
  again: it stays held for what it still needs, or goes to the scheduler (``crawl``).
- *waiters*: requests waiting in process_request (``engine.download`` callers, an origin's first
  request), a Deferred each.

Interest is registered, not called back into (one Deferred per origin and thing awaited,
cancelled when nothing waits: an origin nobody waits for is not retried); requests are sent on
the next reactor turn, never inside the completion that released them. At REP_HOLD_TIMEOUT or
a give-up (checked on every tick) a durable place keeps held requests for the next run;
otherwise they are dropped through the drop path. A request the dupefilter saw before it was
held carries ``SEEN_META``: a run that restores it files it with its dupefilter first (after a
``kill -9`` the JOBDIR dupefilter lost it). Each held request is counted once per fate
(README, ``robotstxt/held``).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from scrapy.exceptions import IgnoreRequest
from twisted.internet import task
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from scrapy_rep.core.stats import HELD, HELD_REFILED, RELEASED
from scrapy_rep.crawl._admission import SEEN_META, seen_mark
from scrapy_rep.crawl._events import Waiting, Why
from scrapy_rep.storage.held import HeldRequests, MemoryHeld

if TYPE_CHECKING:
    from scrapy.http import Request

    from scrapy_rep.core.clock import Clock
    from scrapy_rep.core.policy import Limits
    from scrapy_rep.core.robots_file import RobotsTxt
    from scrapy_rep.crawl._admission import Admission, Awaited
    from scrapy_rep.crawl._cache import OriginState
    from scrapy_rep.crawl._drops import Drops
    from scrapy_rep.crawl._events import Events
    from scrapy_rep.crawl._resolver import Resolver
    from scrapy_rep.crawl.exceptions import DropReason

__all__ = ["Holds", "SlotWaits"]


class SlotWaits(Protocol):
    """The requests waiting for a place in their download slot (``_room.Slots``): swept and,
    at the close, let go on the room's one tick."""

    def sweep(self) -> None: ...
    def let_go(self) -> None: ...
    def busy(self) -> bool: ...


T = TypeVar("T")


class Holds:
    def __init__(
        self,
        *,
        clock: Clock,
        events: Events,
        drops: Drops,
        resolver: Resolver[RobotsTxt],
        hold_timeout: float,
        limits: Limits,
        crawl: Callable[[Request], object],
        closing: Callable[[], bool],
        wake: Callable[[], None] = lambda: None,
        on_close: Callable[[], None] = lambda: None,
        held: HeldRequests | None = None,
        admission: Admission,
        slots: SlotWaits | None = None,
    ) -> None:
        """``admission`` says what a released request still waits for; ``slots``: the
        requests waiting for a place in their download slot (the tick sweeps the slots and
        lets them go at the close, ``watch_slots``); ``crawl`` sends a
        request to the scheduler (``engine.crawl``); ``closing`` says
        whether the crawl is asked to close; ``wake`` tells the engine that nothing waits any
        more (it may close now rather than at its next idle check); ``on_close`` closes what
        else waits for the crawl (called once, when everything here was let go)."""
        self._clock = clock
        self._events = events
        self._drops = drops
        self._resolver = resolver
        self._admission = admission
        self._slots = slots
        self._timeout = hold_timeout
        self._limits = limits
        self._crawl = crawl
        self._closing = closing
        self._wake = wake
        self._on_close = on_close
        # Per (origin, what): the Deferred of the interest registered for it.
        self._interest: dict[tuple[str, str], Deferred[Any]] = {}
        # Per origin, the states its held requests were released by (robots.txt's, a usage
        # document's), by name: each release puts them back in their caches first.
        self._known_states: dict[str, dict[str, tuple[Any, OriginState[Any]]]] = {}
        # Memory until the spider opens and ``open`` gives the crawl's own place.
        self._held: HeldRequests = held if held is not None else MemoryHeld()
        # Per origin: when each of its held requests was held (oldest first) and what it waits
        # for (its ``Awaited.name``: the words of a timeout and of the closing line).
        self._since: dict[str, list[tuple[float, str]]] = {}
        self._waiting: dict[str, list[tuple[Deferred[OriginState[RobotsTxt]], float]]] = {}
        # Origins whose held requests go to the scheduler on the next tick: restored from an
        # earlier run or adopted from a dead fleet process (back through the gate, not counted
        # as released), or released but not taken by the scheduler (``_unsent``).
        self._pending: set[str] = set()
        self._unsent: set[str] = set()
        # Requests put aside for the job's next run (given up, held too long).
        self._kept = 0
        # The scheduler's dupefilter's ``request_seen`` (given by ``open``).
        self._seen: Callable[[Request], object] | None = None
        self._opened = False
        # Asked to close (``let_go``); the place closed and the closing line said (``close``).
        self._closed = False
        self._place_closed = False
        self._tick = task.LoopingCall(self.tick)
        self._tick.clock = cast(Any, clock)

    def open(self, held: HeldRequests, seen: Callable[[Request], object] | None = None) -> None:
        """Use ``held`` (opened when the spider opens); what an earlier run left there goes
        back to the scheduler, through the gate again, on the next reactor turn.

        ``seen``: the scheduler's dupefilter's ``request_seen``. Every one of those requests
        the dupefilter saw before it was held (``SEEN_META``) is filed with it now, before the
        spider's first request reaches it."""
        self._held = held
        self._seen = seen
        self._opened = True
        count = len(held)
        if count and not self._pending:  # pending already: adopted, counted as such
            self._events.restored(count)
        if count and seen is not None:
            for request in held.peek():
                _file(self._seen, request, self._events)
        self._pending.update(held.origins())
        if self._pending:
            self._clock.callLater(0, self._send_pending)

    def first_through(self) -> bool:
        """May an unknown origin's first request go on unresolved? Once the spider opened,
        where held requests live in memory only (``HeldRequests.next_run`` None)."""
        return self._opened and self._held.next_run is None

    def adopted(self, available: dict[str, int]) -> None:
        """Requests became this process's to release (a dead fleet process's, or left in the
        store by a failed ``take``): through this process's own gate."""
        self._pending.update(available)
        self._clock.callLater(0, self._send_pending)

    def wanted(self, origin: str) -> bool:
        """Do requests (held, or waiting in process_request) wait for ``origin``?"""
        return bool(self._since.get(origin) or self._waiting.get(origin))

    def waiting_since(self, origin: str) -> float | None:
        """When the oldest request still waiting for ``origin`` (held, or in process_request)
        began to wait; None when none does."""
        held = [since for since, _what in self._since.get(origin, ())[:1]]
        waiters = [since for _waiter, since in self._waiting.get(origin, ())[:1]]
        return min([*held, *waiters], default=None)

    def waiting(self, origin: str) -> Waiting:
        """What decides how long the crawl waits for ``origin`` (for the log)."""
        since = self.waiting_since(origin)
        return Waiting(self._limits, self._timeout, since, self._resolver.started)

    def say_waiting(self, origin: str) -> None:
        """Requests wait for ``origin``'s robots.txt: say why (once per origin). An origin
        still being fetched for the first time is not announced (the usual case)."""
        state = self._resolver.peek(origin)
        if state is not None:
            self._events.holding(state, self.waiting(origin))

    def busy(self) -> bool:
        if self._closed:
            return False
        return bool(len(self._held) or self._waiting or self._pending or self._unsent)

    def pending_elsewhere(self) -> bool:
        """Do other fleet processes hold requests that may come to this one?"""
        elsewhere: Callable[[], bool] | None = getattr(self._held, "pending_elsewhere", None)
        return elsewhere is not None and elsewhere()

    def hold(self, origin: str, request: Request, until: Awaited | None = None) -> None:
        """Keep ``request`` until ``origin``'s robots.txt serves or, given ``until`` (the
        resolver of a usage document the gate needs, or the pauses, asked once per origin),
        until that says so; then it goes back through the gate."""
        awaited = until or self._resolver
        if self._place_closed:
            self._drops.drop(origin, [request], self._admission.closing(origin, awaited))
            return
        self._held.add(origin, request)
        self._since.setdefault(origin, []).append((self._clock.seconds(), awaited.name))
        self._events.count(HELD)
        if self._closed:
            # The crawl closes: nothing is released any more; ``close`` says what stays held
            # (kept for the next run where the place is durable).
            return
        self._interested(origin, awaited, request)
        self._start_tick()

    def wait(
        self, origin: str, request: Request | None = None, *, held: bool = False
    ) -> Deferred[OriginState[RobotsTxt]]:
        """A Deferred fired with the origin's state once it serves (or failed). ``held``: the
        request is one the crawl holds (an origin's first, waiting at the final gate after its
        robots.txt failed), counted as held and released as those outside the scheduler are."""
        waiter: Deferred[OriginState[RobotsTxt]] = Deferred()
        if self._closed:
            self._fail_at_close(origin, [waiter])
            return waiter
        if held:
            self._events.count(HELD)
            waiter.addCallback(self._count_released)
        self._waiting.setdefault(origin, []).append((waiter, self._clock.seconds()))
        self._interested(origin, self._resolver, request)
        self._start_tick()
        return waiter

    def _count_released(self, state: T) -> T:
        self._events.count(RELEASED)
        return state

    def _interested(self, origin: str, awaited: Awaited, trigger: Request | None) -> None:
        """Register interest in what ``awaited`` says of ``origin`` (one per origin and
        thing)."""
        what = awaited.name
        if (origin, what) in self._interest:
            return
        found = awaited.wait(origin, trigger)
        self._interest[origin, what] = found
        found.addCallbacks(self._known, _cancelled, callbackArgs=(origin, awaited))

    def _known(self, result: Any, origin: str, awaited: Awaited) -> None:
        what = awaited.name
        if self._interest.get((origin, what)) is None:
            return
        del self._interest[origin, what]
        if awaited is self._resolver:
            # Waiters resume in process_request, which asks nothing of the resolver.
            state = cast("OriginState[RobotsTxt]", result)
            for waiter, _since in self._waiting.pop(origin, []):
                waiter.callback(state)
        if result is not None and hasattr(awaited, "reinstate"):
            self._known_states.setdefault(origin, {})[what] = (awaited, result)
        # Held requests on the next turn: sending them re-enters the gate, which must not
        # run inside the completion of what fired this.
        self._clock.callLater(0, self._release, origin)

    def _release(self, origin: str) -> None:
        """What ``origin``'s held requests waited for is known: back to the scheduler, each
        that needs nothing more (the others stay held for what they still need)."""
        if self._closed:
            return
        # The states that released them serve their admission, even if the origin caches
        # evicted them meanwhile (caches smaller than the origins in flight would otherwise
        # release and hold them again for ever).
        for awaited, state in self._known_states.get(origin, {}).values():
            awaited.reinstate(state)
        self._send(origin, released=True)
        if not self.wanted(origin):
            self._known_states.pop(origin, None)

    def _forget(self, origin: str) -> None:
        """Nothing waits for ``origin`` any more: withdraw the interest registered for it."""
        if self.wanted(origin):
            return
        for key in [key for key in self._interest if key[0] == origin]:
            self._interest.pop(key).cancel()

    def _send(self, origin: str, *, released: bool) -> None:
        """Take ``origin``'s held requests and send them to the scheduler one by one.

        ``released``: what they waited for is known (counted as released when they go); one
        that still waits for something else (a usage document after robots.txt, its route's
        pause) stays held for it, as the one hold it is. Else they come back from an earlier
        run or another process and pass the gate again (held again if need be).
        """
        if self._closed:
            return
        times = self._since.pop(origin, [])
        self._forget(origin)
        released = released or origin in self._unsent
        self._pending.discard(origin)
        self._unsent.discard(origin)
        sent = 0
        now = self._clock.seconds()
        for index, request in enumerate(self._held.take(origin)):
            if not released:
                # Restored (filed at ``open`` already) or adopted from another process.
                _file(self._seen, request, self._events)
            else:
                try:
                    awaited = self._admission.awaited(request, origin, now)
                except IgnoreRequest:
                    # Dropped as the gate would drop it (its errback, counted): released.
                    sent += 1
                    continue
                if awaited is not None:
                    since = times[index][0] if index < len(times) else now
                    self._held.add(origin, request)
                    self._since.setdefault(origin, []).append((since, awaited.name))
                    self._interested(origin, awaited, request)
                    continue
            try:
                self._crawl(request)
            except Exception as exc:
                self._events.release_failed(request, exc)
                # Held again (durably, where the place is): tried again on the next tick.
                self._held.add(origin, request)
                (self._unsent if released else self._pending).add(origin)
                self._start_tick()
            else:
                sent += 1
        if sent and released:
            self._events.count(RELEASED, sent)

    def _send_pending(self) -> None:
        for origin in sorted(self._unsent):
            self._send(origin, released=True)
        for origin in sorted(self._pending):
            self._send(origin, released=False)

    def watch_slots(self) -> None:
        """A request waits for a place in its download slot: the tick runs while any does
        (the crawl closed already: its wait ends now)."""
        if self._closed:
            assert self._slots is not None
            self._slots.let_go()
        else:
            self._start_tick()

    def tick(self) -> None:
        """The room's one tick, while anything waits: notice a close being asked, retry
        unsent requests, expire old ones, give origins up, sweep the download slots."""
        if self._closing():
            self.let_go()
            return
        self._send_pending()
        dropped = self.expire() + self.give_up()
        slots = self._slots
        if slots is not None:
            slots.sweep()
        if not self.busy() and not (slots is not None and slots.busy()):
            if self._tick.running:
                self._tick.stop()
            if dropped:
                # Nothing waits any more: the crawl may be over now, not at the engine's next
                # idle check (every 5 s).
                self._wake()

    def expire(self) -> int:
        """Stop waiting for what waited longer than REP_HOLD_TIMEOUT: kept for the next run
        where the place is durable, else dropped (with a stat and a logged reason); return how
        many this run let go."""
        if self._closed:
            return 0
        dropped = 0
        now = self._clock.seconds()
        for origin in list(self._since):
            times = self._since[origin]
            old = bisect.bisect_right(times, self._admission.deadline(origin, now), key=_held_at)
            if not old:
                continue
            waited_for = {what for _since, what in times[:old]}
            if old == len(times):
                del self._since[origin]
            else:
                self._since[origin] = times[old:]
            # ``take`` returns oldest first: the first ``old`` are the expired ones. (A take
            # that failed returns them later, through ``adopted``: they pass the gate again.)
            requests = self._held.take(origin)
            for request in requests[old:]:
                self._held.add(origin, request)
            expired = requests[:old]
            if expired:
                dropped += len(expired)
                why = self._admission.timed_out(origin, waited_for)
                self._stop_waiting(origin, expired, [], *why)
            self._forget(origin)
        for origin in list(self._waiting):
            waiters = _take_older(self._waiting, origin, self._admission.deadline(origin, now))
            if waiters:
                dropped += len(waiters)
                why = self._admission.timed_out(origin, {self._resolver.name})
                self._stop_waiting(origin, [], waiters, *why)
                self._forget(origin)
        return dropped

    def give_up(self) -> int:
        """Stop waiting for each origin that may be given up now (``Resolver.given_up``,
        ``Pauses.given_up``) rather than at REP_HOLD_TIMEOUT, whatever the rest of the crawl
        does: asked on every tick (and when the crawl is idle), so a site answering at once
        with "come back later" cannot keep a busy crawl waiting for it. Return how many
        requests this let go."""
        if self._pending or self._closed:
            return 0
        dropped = 0
        for origin in sorted({*self._since, *self._waiting}):
            given_up = self._admission.given_up(origin)
            if given_up is None:
                continue
            reason, why = given_up
            self._events.gave_up(reason)
            self._since.pop(origin, None)
            waiters = [waiter for waiter, _since in self._waiting.pop(origin, [])]
            held = self._held.take(origin)
            dropped += len(held) + len(waiters)
            self._stop_waiting(origin, held, waiters, reason, why)
            self._forget(origin)
        return dropped

    def _stop_waiting(
        self,
        origin: str,
        held: list[Request],
        waiters: list[Deferred[OriginState[RobotsTxt]]],
        reason: DropReason,
        why: str,
    ) -> None:
        """This run waits no longer for ``held`` and ``waiters``: the durable place keeps the
        held ones for the next run (SPEC C4); the rest are dropped with ``why`` and
        ``reason``."""
        lost = self._held.put_aside(origin, held) if held else []
        kept = len(held) - len(lost)
        self._kept += kept
        next_run = self._held.next_run
        if kept:
            self._events.kept(origin, kept, why, next_run)
        hint = (
            ""
            if next_run is not None
            else ("; set JOBDIR, or a Redis REP_STORE, to keep such requests for the next run")
        )
        drop = Why(
            reason,
            f"{origin}: {why}",
            origin,
            rule=why + hint,
        )
        self._drops.drop(origin, lost, drop, waiters=len(waiters))
        for waiter in waiters:
            waiter.errback(drop.exception())

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
        waiting, self._waiting = self._waiting, {}
        for origin, waiters in waiting.items():
            self._fail_at_close(origin, [waiter for waiter, _since in waiters])
        self._pending, self._unsent = set(), set()
        interest, self._interest = self._interest, {}
        for known in interest.values():
            known.cancel()
        self._on_close()

    def close(self) -> None:
        """The spider closed (nothing is in progress any more): say what stays held, kept
        for the next run where the place is durable, else not downloaded, as Scrapy leaves
        the requests in its scheduler; then close the place (may be called again)."""
        self.let_go()
        if self._place_closed:
            return
        self._place_closed = True
        waited_for = _waited_for(self._since)
        self._since = {}
        if self._held.next_run is None:
            self._events.closed_with_held(len(self._held), waited_for)
        else:
            # Durable ones stay (the place counts and logs those it had only in memory).
            persisted = len(self._held) - self._held.in_memory()
            self._events.closed_keeping(persisted, self._kept, self._held.next_run, waited_for)
        self._held.close()

    def _fail_at_close(self, origin: str, waiters: list[Deferred[OriginState[RobotsTxt]]]) -> None:
        """``engine.download`` callers (or requests at the final gate) still waiting for
        ``origin`` when the crawl closes: dropped through the drop path (counted, logged, in
        the closing summary), each failing with the reason ``closing``."""
        why = self._admission.closing(origin)
        self._drops.drop(origin, [], why, waiters=len(waiters))
        for waiter in waiters:
            waiter.errback(why.exception())

    def _start_tick(self) -> None:
        if not self._tick.running and not self._closed:
            # Often enough to notice a close within a second, and to expire on time.
            self._tick.start(min(1.0, max(0.05, self._timeout / 4)), now=False)


def _file(seen: Callable[[Request], object] | None, request: Request, events: Events) -> None:
    """If the dupefilter saw ``request`` before it was held (``SEEN_META``), file its
    fingerprint with this crawl's dupefilter (``seen``): the spider's own copy (a start request
    yielded again by a resumed job) is then filtered as a duplicate, while this one
    (``dont_filter``) goes. Counted when the dupefilter did not have it (lost in a ``kill -9``,
    or another process's)."""
    if seen is None or request.meta.get(SEEN_META) != seen_mark(request):
        return
    try:
        known = seen(request)
    except Exception as exc:  # a dupefilter whose backend is down (scrapy-redis's)
        events.not_filed(request, exc)
        return
    if not known:
        events.count(HELD_REFILED)


def _waited_for(since: dict[str, list[tuple[float, str]]]) -> dict[str, int]:
    """How many held requests wait for what (robots.txt, a usage document, a pause)."""
    total: dict[str, int] = {}
    for times in since.values():
        for _since, what in times:
            total[what] = total.get(what, 0) + 1
    return total


def _held_at(item: tuple[float, str]) -> float:
    return item[0]


def _cancelled(failure: Failure) -> None:
    """An interest withdrawn (``CancelledError``) or ended by the crawl closing: nothing to
    do, the requests it covered were sent, given up or let go already."""


def _take_older(table: dict[str, list[tuple[T, float]]], origin: str, deadline: float) -> list[T]:
    """Take ``origin``'s items waiting since ``deadline`` or before out of ``table``."""
    items = table[origin]
    kept = [(item, since) for item, since in items if since > deadline]
    gone = [item for item, since in items if since <= deadline]
    if kept:
        table[origin] = kept
    else:
        del table[origin]
    return gone

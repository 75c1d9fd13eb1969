"""Requests waiting for an origin's robots.txt: hold, wait, release, expire, let go on close.

Two kinds wait here (SPEC B2: an origin whose robots.txt is unknown or unreachable is
disallowed for now, so nothing of it is downloaded):

- *held* requests, taken by the gate before they reached the scheduler: they take no slot
  anywhere and are sent back to the scheduler (``crawl``) when their origin is resolved;
- *waiters*: ``engine.download`` callers waiting in process_request (a Deferred each).

Both are dropped, with a stat and a logged reason, after REP_HOLD_TIMEOUT. When the crawl is
asked to close, everything is let go at once: waiters fail with ``IgnoreRequest``, held
requests go to the ``HoldJournal`` (JOBDIR) or are counted as dropped. Re-scheduling is done
one request at a time: one that fails (a scheduler backend down) stays and is tried again on
the next tick, so no request is lost and no error escapes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from scrapy.exceptions import IgnoreRequest
from twisted.internet import task
from twisted.internet.defer import Deferred

from scrapy_rep._events import HELD, RELEASED

if TYPE_CHECKING:
    from scrapy.http import Request

    from scrapy_rep._cache import OriginState
    from scrapy_rep._clock import Clock
    from scrapy_rep._events import Events

__all__ = ["HoldJournal", "Holds"]

T = TypeVar("T")


class HoldJournal(Protocol):
    """Where held requests outlive the process (the JOBDIR file today, ``_jobdir.py``).

    A disk- or Redis-queue-backed journal slots in here: it may write each request as it is
    held, as long as ``save`` and ``restore`` keep their meaning.
    """

    #: Where requests are kept, for log lines.
    location: str

    def save(self, requests: list[Request]) -> list[Request]:
        """Keep ``requests`` for the next run; returns those that could not be kept."""

    def restore(self) -> list[Request]:
        """The requests kept by an earlier run (and forget them)."""


class Holds:
    def __init__(
        self,
        *,
        clock: Clock,
        events: Events,
        hold_timeout: float,
        crawl: Callable[[Request], object],
        journal: HoldJournal | None,
        drop_reason: Callable[[str], str],
        close_requested: Callable[[], bool],
        on_close_requested: Callable[[], None],
    ) -> None:
        self._clock = clock
        self._events = events
        self._timeout = hold_timeout
        self._crawl = crawl
        self._journal = journal
        self._drop_reason = drop_reason
        self._close_requested = close_requested
        self._on_close_requested = on_close_requested
        # Per origin: (request, held since).
        self._held: dict[str, list[tuple[Request, float]]] = {}
        self._waiting: dict[str, list[tuple[Deferred[OriginState], float]]] = {}
        # Released requests the scheduler did not take yet (re-sent on every tick).
        self._unsent: list[Request] = []
        self._closed = False
        self._tick = task.LoopingCall(self.tick)
        self._tick.clock = cast(Any, clock)

    def wanted(self, origin: str) -> bool:
        """Do requests (held, or waiting in process_request) wait for ``origin``?"""
        return bool(self._held.get(origin) or self._waiting.get(origin))

    def busy(self) -> bool:
        return bool(self._held or self._waiting or self._unsent)

    def hold(self, origin: str, request: Request) -> None:
        self._held.setdefault(origin, []).append((request, self._clock.seconds()))
        self._events.count(HELD)
        self._start_tick()

    def wait(self, origin: str) -> Deferred[OriginState]:
        """A Deferred fired with the origin's state once it is known (or failed)."""
        waiter: Deferred[OriginState] = Deferred()
        if self._closed:
            waiter.errback(IgnoreRequest(self._closing_reason(origin)))
            return waiter
        self._waiting.setdefault(origin, []).append((waiter, self._clock.seconds()))
        self._start_tick()
        return waiter

    def release(self, origin: str, state: OriginState) -> None:
        """``origin`` is resolved: waiters get its state, held requests go to the scheduler."""
        held = self._held.pop(origin, [])
        for waiter, _since in self._waiting.pop(origin, []):
            waiter.callback(state)
        self._unsent.extend(request for request, _since in held)
        self._send()

    def _send(self) -> None:
        unsent, self._unsent = self._unsent, []
        sent = 0
        for request in unsent:
            try:
                self._crawl(request)
            except Exception as exc:
                self._events.release_failed(request, exc)
                self._unsent.append(request)
                self._start_tick()
            else:
                sent += 1
        if sent:
            self._events.count(RELEASED, sent)

    def resend(self, requests: list[Request]) -> None:
        """Send requests restored from an earlier run to the scheduler (as released ones)."""
        self._unsent.extend(requests)
        self._send()

    def tick(self) -> None:
        """Periodically: notice a close being asked, retry unsent requests, expire old ones."""
        if self._close_requested():
            self._on_close_requested()
            return
        if self._unsent:
            self._send()
        self.expire()
        if not self.busy() and self._tick.running:
            self._tick.stop()

    def expire(self) -> None:
        """Drop what waited longer than REP_HOLD_TIMEOUT (with a stat and a logged reason)."""
        deadline = self._clock.seconds() - self._timeout
        for origin in list(self._held):
            gone = _take_older(self._held, origin, deadline)
            if gone:
                self._events.dropped(origin, len(gone), self._drop_reason(origin))
        for origin in list(self._waiting):
            waiters = _take_older(self._waiting, origin, deadline)
            if waiters:
                reason = self._drop_reason(origin)
                self._events.dropped(origin, len(waiters), reason)
                for waiter in waiters:
                    waiter.errback(IgnoreRequest(reason))

    def give_up(self, reason: Callable[[str], str | None]) -> None:
        """The crawl has nothing else to do: if every origin still waited for has a give-up
        ``reason`` (``Resolver.given_up``), drop its requests now instead of at the timeout.
        """
        if self._unsent:
            return
        reasons = {origin: reason(origin) for origin in {*self._held, *self._waiting}}
        if not reasons or None in reasons.values():
            return
        for origin, why in reasons.items():
            assert why is not None
            held = self._held.pop(origin, [])
            waiters = self._waiting.pop(origin, [])
            self._events.gave_up(origin, len(held) + len(waiters), why)
            for waiter, _since in waiters:
                waiter.errback(IgnoreRequest(why))

    def let_go(self) -> None:
        """The crawl closes: let every waiting request go now (may be called again)."""
        self._closed = True
        if self._tick.running:
            self._tick.stop()
        waiting, self._waiting = self._waiting, {}
        for origin, waiters in waiting.items():
            for waiter, _since in waiters:
                waiter.errback(IgnoreRequest(self._closing_reason(origin)))
        held = [request for items in self._held.values() for request, _since in items]
        held += self._unsent
        self._held, self._unsent = {}, []
        if not held:
            return
        lost = self._journal.save(held) if self._journal is not None else held
        self._events.closed_with_held(
            len(lost),
            len(held) - len(lost),
            self._journal.location if self._journal is not None else None,
            jobdir=self._journal is not None,
        )

    def _closing_reason(self, origin: str) -> str:
        return f"robots.txt of {origin} not known when the crawl closed"

    def _start_tick(self) -> None:
        if not self._tick.running and not self._closed:
            # Often enough to notice a close within a second, and to expire on time.
            self._tick.start(min(1.0, max(0.05, self._timeout / 4)), now=False)


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

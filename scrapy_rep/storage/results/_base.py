"""The robots.txt-results contract shared by the crawl's resolver and every store.

A store keeps, per normalised origin (SPEC B1), one ``StoredRobots``: a JSON-able ``meta``
dict written and read by the crawl (``scrapy_rep.core.policy.Entry.to_meta``: status,
fetched-at, expires-at, last-good-copy and unreachable-since information) and the raw
robots.txt body (at most 500 KiB, or None for "no robots.txt"): in this process's memory
(``_memory``), in SQLite (``_sqlite``) or in a fleet's Redis (``_redis``). A persistent store
stamps each record with ``policy.FORMAT_VERSION``, never interprets ``meta`` beyond storing it
as JSON, and never unpickles anything.

Every method returns a Deferred so that a store may do blocking I/O in a thread; the
in-memory store answers synchronously (already-fired Deferreds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from twisted.internet.defer import Deferred


class StoreUnavailable(Exception):
    """A store call failed for a reason outside this process: server down or slow, file locked.

    Every backend method's Deferred fails with this (never with a driver's own error class) so
    the middleware can catch one type, warn once and carry on with its in-process state.
    """


@dataclass(frozen=True)
class StoredRobots:
    meta: dict[str, Any] = field(default_factory=dict)
    body: bytes | None = None


@dataclass(frozen=True)
class StoredPause:
    """An origin paused because its pages said "slow down" (SPEC H), as the store shares it
    with the fleet: how long the pause has left as a time-to-live, so that the clocks of
    different hosts never matter."""

    #: Seconds left of the pause; 0 once it is over and a probe is due.
    remaining: float
    #: Pauses in a row (the next one, without Retry-After, lasts twice as long).
    failures: int
    #: What paused it, in words ("HTTP 503 with Retry-After: 4 at /page/3").
    reason: str


#: How long a pause nobody ends is kept (its probe never came back: every process died).
PAUSE_RECORD_TTL = 86400.0


class RobotsStore(Protocol):
    def get(self, origin: str) -> Deferred[StoredRobots | None]:
        """The entry for ``origin``, or None when there is none (or it is unreadable)."""

    def put(self, origin: str, entry: StoredRobots) -> Deferred[None]:
        """Replace the entry for ``origin``."""

    def acquire_lease(self, origin: str, owner: str, ttl: float) -> Deferred[bool]:
        """Try to become the one fetcher of ``origin``'s robots.txt for ``ttl`` seconds.

        True when ``owner`` holds the lease (newly or already). A lease whose
        holder died expires after ``ttl`` and can then be taken by another owner.
        """

    def release_lease(self, origin: str, owner: str) -> Deferred[None]:
        """Give the lease up, if ``owner`` still holds it."""

    def set_pause(self, origin: str, seconds: float, failures: int, reason: str) -> Deferred[None]:
        """Pause ``origin`` for ``seconds`` from now (``failures`` in a row, for ``reason``);
        the record stays (remaining 0) until ``clear_pause``, or ``PAUSE_RECORD_TTL``."""

    def clear_pause(self, origin: str) -> Deferred[None]:
        """``origin`` answers again: no pause."""

    def pauses(self) -> Deferred[tuple[int, dict[str, StoredPause]]]:
        """Every pause kept, with ``pause_version``'s number at the time of reading."""

    def pause_version(self) -> Deferred[int]:
        """A number that changes whenever a pause is set or cleared (cheap to poll)."""

    def close(self) -> Deferred[None]:
        """Release connections/files. The store is not used afterwards."""

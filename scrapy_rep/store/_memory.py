"""The default store: a dict in this process, nothing to set up."""

from __future__ import annotations

import time

from twisted.internet.defer import Deferred, succeed

from scrapy_rep.store._base import StoredRobots


class MemoryStore:
    def __init__(self) -> None:
        self._entries: dict[str, StoredRobots] = {}
        self._leases: dict[str, tuple[str, float]] = {}

    def get(self, origin: str) -> Deferred[StoredRobots | None]:
        return succeed(self._entries.get(origin))

    def put(self, origin: str, entry: StoredRobots) -> Deferred[None]:
        self._entries[origin] = entry
        return succeed(None)

    def acquire_lease(self, origin: str, owner: str, ttl: float) -> Deferred[bool]:
        now = time.monotonic()
        holder = self._leases.get(origin)
        if holder is None or holder[0] == owner or holder[1] <= now:
            self._leases[origin] = (owner, now + ttl)
            return succeed(True)
        return succeed(False)

    def release_lease(self, origin: str, owner: str) -> Deferred[None]:
        if self._leases.get(origin, ("", 0.0))[0] == owner:
            del self._leases[origin]
        return succeed(None)

    def close(self) -> Deferred[None]:
        return succeed(None)

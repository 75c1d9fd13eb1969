"""The default store: a bounded dict in this process, nothing to set up.

Holds at most ``size`` origins (REP_MEMORY_STORE_SIZE): the least recently used entry goes
first, and an entry not written for ``entry_ttl`` seconds counts as gone. An evicted origin is
fetched again when next needed, so a broad crawl's memory stays flat however many sites it
meets.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable
from typing import cast

from twisted.internet.defer import Deferred, succeed

from scrapy_rep.core.lru import LRU
from scrapy_rep.core.policy import FORMAT_VERSION
from scrapy_rep.storage.options import DEFAULT_ENTRY_TTL, DEFAULT_MEMORY_STORE_SIZE
from scrapy_rep.storage.results._base import PAUSE_RECORD_TTL, StoredPause, StoredRobots
from scrapy_rep.storage.results._codec import decode, encode_meta

#: Bodies above this size are kept zlib-compressed: the parsed robots.txt is what the crawl
#: reads; the body is read back only to parse it again (an LRU eviction) or to hand a copy to
#: the spider, and a broad crawl keeps one per site (a 3 KiB median body compresses ~4x).
_COMPRESS_ABOVE = 512

#: What is kept per origin: (the meta as JSON, written at, the body, whether it is
#: compressed). Strings and numbers only, as the persistent stores keep them: the meta is
#: read back just as rarely as the body, and the cyclic GC stops tracking such a tuple, where
#: the meta's dicts and lists would be walked by every full collection of a broad crawl.
_Kept = tuple[str, float, bytes | None, bool]


class MemoryStore:
    def __init__(
        self,
        *,
        size: int = DEFAULT_MEMORY_STORE_SIZE,
        entry_ttl: float = DEFAULT_ENTRY_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # ``clock``: a Clock's ``seconds`` (tests give a task.Clock's). A crawl opens its store
        # from the settings alone, with no clock: entry ages are then this process's monotonic
        # seconds, which nothing outside the store compares with.
        self._size = size
        self._entry_ttl = entry_ttl
        self._now = clock
        self._entries: LRU[str, _Kept] = LRU(size)
        self._leases: dict[str, tuple[str, float]] = {}
        # origin -> (pause over at, failures, reason, record kept until), and their version.
        self._pauses: dict[str, tuple[float, int, str, float]] = {}
        self._pause_version = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, origin: str) -> Deferred[StoredRobots | None]:
        item = self._entries.get(origin)
        if item is None:
            return succeed(None)
        meta, written, body, packed = item
        if written + self._entry_ttl <= self._now():
            self._entries.pop(origin)
            return succeed(None)
        if packed:
            body = zlib.decompress(cast(bytes, body))
        return succeed(decode(FORMAT_VERSION, meta, body, origin))

    def put(self, origin: str, entry: StoredRobots) -> Deferred[None]:
        body, packed = entry.body, False
        if body is not None and len(body) > _COMPRESS_ABOVE:
            body, packed = zlib.compress(body, 1), True
        self._entries.put(origin, (encode_meta(entry.meta), self._now(), body, packed))
        return succeed(None)

    def acquire_lease(self, origin: str, owner: str, ttl: float) -> Deferred[bool]:
        now = self._now()
        holder = self._leases.get(origin)
        if holder is None or holder[0] == owner or holder[1] <= now:
            # Taking a lease we hold renews it.
            self._leases[origin] = (owner, now + ttl)
            if len(self._leases) > self._size:
                self._leases = {k: v for k, v in self._leases.items() if v[1] > now}
            return succeed(True)
        return succeed(False)

    def release_lease(self, origin: str, owner: str) -> Deferred[None]:
        if self._leases.get(origin, ("", 0.0))[0] == owner:
            del self._leases[origin]
        return succeed(None)

    def set_pause(self, origin: str, seconds: float, failures: int, reason: str) -> Deferred[None]:
        now = self._now()
        self._pauses[origin] = (now + seconds, failures, reason, now + PAUSE_RECORD_TTL)
        self._pause_version += 1
        return succeed(None)

    def clear_pause(self, origin: str) -> Deferred[None]:
        if self._pauses.pop(origin, None) is not None:
            self._pause_version += 1
        return succeed(None)

    def pauses(self) -> Deferred[tuple[int, dict[str, StoredPause]]]:
        now = self._now()
        self._pauses = {o: p for o, p in self._pauses.items() if p[3] > now}
        found = {
            origin: StoredPause(max(0.0, until - now), failures, reason)
            for origin, (until, failures, reason, _kept) in self._pauses.items()
        }
        return succeed((self._pause_version, found))

    def pause_version(self) -> Deferred[int]:
        return succeed(self._pause_version)

    def close(self) -> Deferred[None]:
        return succeed(None)

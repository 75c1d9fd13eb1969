"""A set in bounded memory: the least recently seen members are forgotten first.

Used for the disallowed requests already reported, by request fingerprint (the gate runs on
``request_scheduled``, before the scheduler's dupefilter: a disallowed URL linked from every
page would otherwise be counted and logged every time it is seen, where Scrapy's own
middleware, after the dupefilter, sees it once), and for the origins whose waiting requests
were announced.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

from scrapy_rep.core.lru import LRU

__all__ = ["SEEN_SIZE", "BoundedSet"]

#: Members remembered: for 20-byte SHA-1 fingerprints, about 150 bytes each with the dict's
#: overhead, so about 10 MB at most.
SEEN_SIZE = 65536

K = TypeVar("K", bound=Hashable)


class BoundedSet(Generic[K]):
    """``add`` says whether a member is new; the oldest are forgotten beyond ``size``."""

    __slots__ = ("_seen",)

    def __init__(self, size: int = SEEN_SIZE) -> None:
        self._seen: LRU[K, bool] = LRU(size)

    def add(self, member: K) -> bool:
        """Remember ``member``; True if it was not remembered already."""
        if self._seen.get(member) is not None:
            return False
        self._seen.put(member, True)
        return True

    def discard(self, member: K) -> None:
        self._seen.pop(member)

    def __len__(self) -> int:
        return len(self._seen)

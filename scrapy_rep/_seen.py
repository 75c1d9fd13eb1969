"""The disallowed requests already reported, by request fingerprint, in bounded memory.

The gate runs on ``request_scheduled``, before the scheduler's dupefilter: a disallowed URL
linked from every page would otherwise be counted and logged every time it is seen, where
Scrapy's own middleware (after the dupefilter) sees it once.
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["SEEN_SIZE", "SeenFingerprints"]

#: Fingerprints remembered (least recently seen forgotten first): 20-byte SHA-1 digests, about
#: 150 bytes each with the dict's overhead, so about 10 MB at most.
SEEN_SIZE = 65536


class SeenFingerprints:
    """A bounded set: ``add`` says whether a fingerprint is new; the oldest are forgotten."""

    def __init__(self, size: int = SEEN_SIZE) -> None:
        self._size = size
        self._seen: OrderedDict[bytes, None] = OrderedDict()

    def add(self, fingerprint: bytes) -> bool:
        """Remember ``fingerprint``; True if it was not remembered already."""
        seen = self._seen
        if fingerprint in seen:
            seen.move_to_end(fingerprint)
            return False
        seen[fingerprint] = None
        if len(seen) > self._size:
            seen.popitem(last=False)
        return True

    def __len__(self) -> int:
        return len(self._seen)

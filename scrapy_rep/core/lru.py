"""``LRU``: a mapping in bounded memory, the least recently used entries forgotten first.

The one such helper of the package: the crawl's parsed documents per origin, the memory store,
and the bounded sets of what was reported already (``seen.BoundedSet``) all keep their entries
in one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar, overload

__all__ = ["LRU"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
D = TypeVar("D")


class LRU(Generic[K, V]):
    """At most ``size`` entries; ``get`` and ``put`` make an entry the most recently used,
    ``peek`` does not."""

    __slots__ = ("_entries", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[K]:
        return iter(self._entries)

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: D) -> V | D: ...
    def get(self, key: K, default: object = None) -> object:
        entries = self._entries
        try:
            value = entries[key]
        except KeyError:
            return default
        entries.move_to_end(key)
        return value

    def peek(self, key: K) -> V | None:
        return self._entries.get(key)

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` as the most recently used; forget the least recently used beyond
        ``size``."""
        entries = self._entries
        entries[key] = value
        entries.move_to_end(key)
        if len(entries) > self.size:
            entries.popitem(last=False)

    def pop(self, key: K) -> V | None:
        return self._entries.pop(key, None)

"""Held requests in this process's memory: the default place, nothing to set up.

``Spill`` keeps requests with their sequence numbers, so that a durable place merges what it
could not write (not serialisable, backend down) with what it stored, oldest first.
``MemoryHeld`` is a spill and nothing else: everything it holds is lost with the process.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.http import Request


class Spill:
    def __init__(self) -> None:
        self._held: dict[str, list[tuple[int, Request]]] = {}
        self._count = 0

    def add(self, origin: str, seq: int, request: Request) -> None:
        self._held.setdefault(origin, []).append((seq, request))
        self._count += 1

    def merge(self, origin: str, durable: list[tuple[int, Request]]) -> list[Request]:
        """``durable`` (in sequence order) and the spilled requests of ``origin``, oldest first."""
        spilled = self._held.pop(origin, [])
        self._count -= len(spilled)
        if not spilled or not durable:
            return [request for _seq, request in spilled or durable]
        merged = heapq.merge(durable, spilled, key=lambda item: item[0])
        return [request for _seq, request in merged]

    def origins(self) -> set[str]:
        return set(self._held)

    def peek(self) -> list[Request]:
        return [request for held in self._held.values() for _seq, request in held]

    def __len__(self) -> int:
        return self._count


class MemoryHeld:
    next_run: str | None = None

    def __init__(self) -> None:
        self._spill = Spill()
        self._seq = 0

    def add(self, origin: str, request: Request) -> None:
        self._seq += 1
        self._spill.add(origin, self._seq, request)

    def take(self, origin: str) -> list[Request]:
        return self._spill.merge(origin, [])

    def origins(self) -> list[str]:
        return sorted(self._spill.origins())

    def peek(self) -> list[Request]:
        return self._spill.peek()

    def put_aside(self, origin: str, requests: list[Request]) -> list[Request]:
        return requests  # memory dies with the process: nothing can wait for the next run

    def __len__(self) -> int:
        return len(self._spill)

    def in_memory(self) -> int:
        return len(self._spill)

    def close(self) -> None:
        """Nothing to let go: what is still held dies with the process (the holds count it
        as dropped when the crawl closes without a durable place)."""

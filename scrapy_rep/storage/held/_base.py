"""The held-requests contract, the in-memory implementation, the spill of the durable ones."""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from scrapy.http import Request


class HeldRequests(Protocol):
    """Where requests held for an origin's robots.txt live until released."""

    def add(self, origin: str, request: Request) -> None:
        """Keep ``request`` for ``origin``; durable (if the implementation is) when it returns."""

    def take(self, origin: str) -> list[Request]:
        """Remove and return ``origin``'s requests, oldest first."""

    def origins(self) -> list[str]:
        """Origins that have requests (read at resume and after adoption)."""

    def put_aside(self, origin: str, requests: list[Request]) -> list[Request]:
        """Keep ``requests`` (taken for ``origin``) for the job's next run, out of this run's
        way; return those that cannot be kept (they are dropped)."""

    @property
    def next_run(self) -> str | None:
        """Where requests put aside wait and how they come back, for the log; None when
        nothing can be put aside (memory)."""

    def __len__(self) -> int:
        """Requests held for this run (not those put aside)."""

    def in_memory(self) -> int:
        """Of those, how many are in this process's memory only (lost with it)."""

    def close(self) -> None:
        """Let files/connections go; what is still held stays where it is durable."""


class MemoryHeld:
    """Held requests in this process's memory: lost with the process."""

    next_run: str | None = None

    def __init__(self) -> None:
        self._held: dict[str, list[Request]] = {}
        self._count = 0

    def add(self, origin: str, request: Request) -> None:
        self._held.setdefault(origin, []).append(request)
        self._count += 1

    def take(self, origin: str) -> list[Request]:
        requests = self._held.pop(origin, [])
        self._count -= len(requests)
        return requests

    def origins(self) -> list[str]:
        return list(self._held)

    def put_aside(self, origin: str, requests: list[Request]) -> list[Request]:
        return requests  # memory dies with the process: nothing can wait for the next run

    def __len__(self) -> int:
        return self._count

    def in_memory(self) -> int:
        return self._count

    def close(self) -> None:
        """Nothing to let go: what is still held dies with the process (the holds module
        counts it as dropped when it closes without a durable place)."""


class Spill:
    """Requests a durable implementation could not write (not serialisable, backend down),
    kept in memory with their sequence numbers so ``take`` still returns oldest first."""

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
        if not spilled:
            return [request for _seq, request in durable]
        merged = heapq.merge(durable, spilled, key=lambda item: item[0])
        return [request for _seq, request in merged]

    def origins(self) -> set[str]:
        return set(self._held)

    def __len__(self) -> int:
        return self._count

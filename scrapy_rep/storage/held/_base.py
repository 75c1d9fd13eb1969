"""The held-requests contract shared by the crawl's holds and every place requests are held.

A place keeps, per normalised origin (SPEC B1), the requests held until that origin's
robots.txt is known, oldest first: in this process's memory (``_memory``), in JOBDIR
(``_jobdir``) or in a fleet's Redis (``_redis``). A durable place keeps each request from the
moment ``add`` returns until ``take`` removes it, and what it cannot write in memory (a
``Spill``), so that ``take`` still returns every request.

Every method is synchronous: held requests are written from the reactor thread, as Scrapy's
scheduler writes its own queues.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from scrapy.http import Request


class HeldRequests(Protocol):
    def add(self, origin: str, request: Request) -> None:
        """Keep ``request`` for ``origin``; durable (if the place is) when it returns."""

    def take(self, origin: str) -> list[Request]:
        """Remove and return ``origin``'s requests, oldest first."""

    def origins(self) -> list[str]:
        """Origins that have requests (read at resume and after adoption)."""

    def peek(self) -> list[Request]:
        """Every request held for this run, taking none (read when the spider opens: what an
        earlier run or a dead fleet process left). One that cannot be read back is left out
        here; ``take`` reports it."""

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

"""The origins this process knows: parsed robots.txt with their serving decision, in an LRU.

Also the two small caches of the hot path (request -> origin key) and what the middleware
reports about an origin (``OriginReport``).
"""

from __future__ import annotations

import itertools
import math
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import ParseResult, SplitResult

from scrapy_rep.core.origin import origin_from_parts
from scrapy_rep.core.policy import Entry, Limits, Serving, serving
from scrapy_rep.core.robots_file import RobotsTxt

__all__ = ["RUN", "OriginCache", "OriginKeys", "OriginReport", "OriginState"]

#: This process's tag in state generations (see ``OriginState.generation``).
RUN = int.from_bytes(os.urandom(4), "big") | 1

#: Bound of the (scheme, netloc) -> origin map: past it, the map starts again (cheap to rebuild).
ORIGIN_KEYS_SIZE = 65536


@dataclass(frozen=True)
class OriginReport:
    """What the middleware knows about one origin's robots.txt (``RobotsTxtMiddleware.resolve``)."""

    origin: str
    """The normalised origin (SPEC B1), e.g. ``https://example.com``."""
    outcome: str
    """"ok" (rules apply), "no_robots" (4xx: everything allowed), "unreachable" (429/5xx/network
    error and no usable copy: the origin is disallowed for now) or "allow_all" (unreachable for
    longer than REP_UNREACHABLE_ALLOW_AFTER: everything allowed)."""
    robots: RobotsTxt | None
    """The parsed rules when ``outcome`` is "ok", else None."""
    status: int | None
    """HTTP status of the copy in use (of the last attempt when none is)."""
    redirects: list[str]
    """URLs of the redirects followed to reach robots.txt."""
    truncated: bool
    """True when the body was cut at 500 KiB (SPEC B4)."""
    fetched_at: float | None
    """Epoch seconds of the fetch that produced the copy in use."""
    expires_at: float | None
    """Epoch seconds of the next fetch (None: never)."""
    error: str | None
    """What went wrong on the last attempt, if anything."""
    stale: bool = False
    """An old copy serving while robots.txt cannot be refreshed (SPEC B3)."""
    crawl_delay: float | None = None
    """Crawl-delay for the crawler's tokens, when REP_CRAWL_DELAY is on."""


class OriginState:
    """An origin's entry as the hot path uses it: parsed, with its serving decision."""

    __slots__ = ("crawl_delay", "entry", "generation", "origin", "robots", "serving")

    # Every installed state gets a new number: a request the gate allowed under the same state
    # needs no second match in process_request. The high bits name this process, so numbers
    # stored in requests of an earlier run (JOBDIR) are recognised as such.
    _generations = itertools.count((RUN << 32) + 1)

    def __init__(
        self,
        origin: str,
        entry: Entry,
        robots: RobotsTxt | None,
        serving_: Serving,
        crawl_delay: float | None,
    ) -> None:
        self.origin = origin
        self.entry = entry
        self.robots = robots
        self.serving = serving_
        self.crawl_delay = crawl_delay
        self.generation = next(self._generations)

    def report(self) -> OriginReport:
        entry, good = self.entry, self.entry.good
        shown = good if good is not None and self.serving.outcome in ("ok", "no_robots") else None
        return OriginReport(
            origin=self.origin,
            outcome=self.serving.outcome,
            robots=self.robots if self.serving.kind == "rules" else None,
            status=shown.status if shown is not None else entry.status,
            redirects=list(shown.redirects if shown is not None else entry.redirects),
            truncated=shown.truncated if shown is not None else entry.truncated,
            fetched_at=shown.fetched_at if shown is not None else entry.fetched_at,
            expires_at=None if math.isinf(self.serving.refresh_at) else self.serving.refresh_at,
            error=entry.error,
            stale=self.serving.stale,
            crawl_delay=self.crawl_delay,
        )


class OriginCache:
    """Parsed robots.txt per origin, least recently used evicted past ``size`` (SPEC B3 cache)."""

    def __init__(
        self,
        limits: Limits,
        size: int,
        crawl_delay: Callable[[RobotsTxt], float | None] | None,
    ) -> None:
        self._limits = limits
        self._size = size
        self._crawl_delay = crawl_delay
        self._states: OrderedDict[str, OriginState] = OrderedDict()

    def __len__(self) -> int:
        return len(self._states)

    def peek(self, origin: str) -> OriginState | None:
        """The state without touching its LRU position."""
        return self._states.get(origin)

    def get(self, origin: str, now: float) -> OriginState | None:
        """The state, most recently used now, its serving decision renewed when it lapsed."""
        state = self._states.get(origin)
        if state is None:
            return None
        self._states.move_to_end(origin)
        if now >= state.serving.valid_until:
            state = self.install(origin, state.entry, state.robots, now)
        return state

    def parse(
        self, entry: Entry, body: bytes | None, previous: OriginState | None
    ) -> RobotsTxt | None:
        """The rules of ``entry``'s good copy; parsed again only when the copy changed."""
        good = entry.good
        if good is None or good.outcome != "ok":
            return None
        if (
            previous is not None
            and previous.robots is not None
            and previous.entry.good is not None
            and previous.entry.good.fetched_at == good.fetched_at
        ):
            return previous.robots
        return RobotsTxt.parse(body or b"")

    def reinstate(self, state: OriginState) -> None:
        """Put an evicted ``state`` back as it was (same generation), most recently used."""
        self._keep(state)

    def install(
        self, origin: str, entry: Entry, robots: RobotsTxt | None, now: float
    ) -> OriginState:
        """Put the origin's state in (evicting the least recently used)."""
        decision = serving(entry, now, self._limits)
        delay = None
        if self._crawl_delay is not None and robots is not None and decision.kind == "rules":
            delay = self._crawl_delay(robots)
        state = OriginState(origin, entry, robots, decision, delay)
        self._keep(state)
        return state

    def _keep(self, state: OriginState) -> None:
        self._states[state.origin] = state
        self._states.move_to_end(state.origin)
        while len(self._states) > self._size:
            self._states.popitem(last=False)


class OriginKeys:
    """(scheme, netloc) -> normalised origin (SPEC B1), bounded (``ORIGIN_KEYS_SIZE``)."""

    def __init__(self, size: int = ORIGIN_KEYS_SIZE) -> None:
        self._size = size
        self._keys: dict[tuple[str, str], str | None] = {}

    def origin(self, parts: SplitResult | ParseResult) -> str | None:
        key = (parts.scheme, parts.netloc)
        try:
            return self._keys[key]
        except KeyError:
            pass
        found = origin_from_parts(parts)
        if len(self._keys) >= self._size:
            self._keys.clear()
        self._keys[key] = found
        return found

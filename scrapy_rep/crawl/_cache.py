"""The origins this process knows, per document (robots.txt, tdmrep.json…): the parsed
document with its serving decision, in an LRU.

Also what differs between the documents a crawl resolves (``DocumentKind``), the small cache
of the hot path (request -> origin key) and what the middleware reports about an origin
(``OriginReport``).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import ParseResult, SplitResult

from scrapy_rep.core.lru import LRU
from scrapy_rep.core.origin import origin_from_parts
from scrapy_rep.core.policy import Entry, Limits, Serving, serving
from scrapy_rep.core.robots_file import RobotsTxt
from scrapy_rep.core.sources import UsageDocument
from scrapy_rep.core.stats import ROBOTSTXT_FETCH, FetchStats

__all__ = [
    "ROBOTS",
    "DocumentKind",
    "OriginCache",
    "OriginKeys",
    "OriginReport",
    "OriginState",
    "usage_kind",
]

D = TypeVar("D")


@dataclass(frozen=True)
class DocumentKind(Generic[D]):
    """What differs between the per-origin documents a crawl resolves; the rest (store,
    leases, lifetimes, backoff, single flight) is the same ``Resolver``."""

    name: str
    #: Where the document lives on an origin.
    path: str
    #: Before the origin in the document's store key (robots.txt's has none: its entries
    #: predate the others).
    key_prefix: str
    stats: FetchStats
    #: A 2xx body, read (never raises).
    parse: Callable[[bytes], D]
    #: SPEC B2: robots.txt that cannot be fetched holds the origin's requests; a usage
    #: document that cannot be fetched states nothing (its waiters go on at once).
    holds: bool


#: robots.txt (SPEC B).
ROBOTS: DocumentKind[RobotsTxt] = DocumentKind(
    "robots.txt", "/robots.txt", "", ROBOTSTXT_FETCH, RobotsTxt.parse, holds=True
)


def usage_kind(document: UsageDocument) -> DocumentKind[object]:
    """A usage document (tdmrep.json, a REP_USAGE_SOURCES entry) as a kind a crawl resolves."""
    prefix = document.stats_prefix
    return DocumentKind(
        document.name, document.path, f"{prefix}:", FetchStats(prefix), document.parse, False
    )


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
    """The parsed rules when ``outcome`` is "ok", else None (for another document, the
    document read)."""
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
    failures: int = 0
    """robots.txt attempts that failed in a row (429, 5xx, network errors; SPEC B2), the last
    one included; 0 when the last attempt got an answer. While it fails, ``expires_at`` is
    the next attempt."""


# Every installed state gets a new number: a request the gate allowed under the same state
# needs no second match in process_request. The high bits name this process (a random tag,
# never 0), so numbers stored in requests of an earlier run (JOBDIR) are recognised as such.
_generations = itertools.count(((int.from_bytes(os.urandom(4), "big") | 1) << 32) + 1)


# eq=False: a state equals itself only (each installed one is a generation of its own);
# repr=False: its document may be a large file.
@dataclass(eq=False, repr=False, slots=True)
class OriginState(Generic[D]):
    """An origin's entry as the hot path uses it: its document read, with its serving
    decision."""

    origin: str
    entry: Entry
    document: D | None
    serving: Serving
    crawl_delay: float | None
    #: What the requests it lets go were judged by, for the record (``_admission``): the
    #: hash of the copy read, or the serving's word when there is no document.
    content: str
    #: What the compliance record says the state rests on (``_record.Recorder.evidence``: the
    #: record of the answer or copy it was read from); None without a record.
    evidence: dict[str, Any] | None = None
    generation: int = field(init=False, default_factory=_generations.__next__)
    #: The admission token of the newest generation it was combined in (``_admission``).
    admitted: Any = field(init=False, default=None)

    def report(self) -> OriginReport:
        entry, good = self.entry, self.entry.good
        # The good copy in use, else the last attempt.
        shown = good if good is not None and self.serving.outcome in ("ok", "no_robots") else entry
        document = self.document if self.serving.kind == "rules" else None
        return OriginReport(
            origin=self.origin,
            outcome=self.serving.outcome,
            robots=document if isinstance(document, RobotsTxt) else None,
            status=shown.status,
            redirects=list(shown.redirects),
            truncated=shown.truncated,
            fetched_at=shown.fetched_at,
            expires_at=None if math.isinf(self.serving.refresh_at) else self.serving.refresh_at,
            error=entry.error,
            stale=self.serving.stale,
            crawl_delay=self.crawl_delay,
            failures=entry.failures,
        )


class OriginCache(Generic[D]):
    """One kind of document per origin, least recently used evicted past ``size`` (SPEC B3
    cache)."""

    def __init__(
        self,
        kind: DocumentKind[D],
        limits: Limits,
        size: int,
        crawl_delay: Callable[[D], float | None] | None = None,
        evidence: Callable[[str, Entry, bytes | None], dict[str, Any]] | None = None,
    ) -> None:
        """``evidence(url, entry, body)``: what a state read from ``body`` rests on, for the
        compliance record (``_record.Recorder.evidence``); None: no record."""
        self.kind = kind
        self._limits = limits
        self._crawl_delay = crawl_delay
        self._evidence = evidence
        self._states: LRU[str, OriginState[D]] = LRU(size)

    def __len__(self) -> int:
        return len(self._states)

    def peek(self, origin: str) -> OriginState[D] | None:
        """The state without touching its LRU position."""
        return self._states.peek(origin)

    def get(self, origin: str, now: float) -> OriginState[D] | None:
        """The state, most recently used now, its serving decision renewed when it lapsed."""
        state = self._states.get(origin)
        if state is not None and now >= state.serving.valid_until:
            return self.install(
                origin, state.entry, state.document, now, state.content, state.evidence
            )
        return state

    def parse(self, entry: Entry, body: bytes | None, previous: OriginState[D] | None) -> D | None:
        """The document of ``entry``'s good copy; read again only when the copy changed."""
        good = entry.good
        if good is None or good.outcome != "ok":
            return None
        if previous is not None and previous.document is not None:
            if (known := previous.entry.good) is not None and known.fetched_at == good.fetched_at:
                return previous.document
        return self.kind.parse(body or b"")

    def reinstate(self, state: OriginState[D]) -> None:
        """Put an evicted ``state`` back as it was (same generation), most recently used."""
        self._states.put(state.origin, state)

    def read(
        self,
        origin: str,
        entry: Entry,
        body: bytes | None,
        previous: OriginState[D] | None,
        now: float,
    ) -> OriginState[D]:
        """Install the state of ``entry`` with ``body`` (its good copy's, if any), read."""
        document = self.parse(entry, body, previous)
        if previous is not None and document is previous.document:
            # The same copy rests on the same record; no copy: on this answer's.
            evidence = previous.evidence if document is not None else self._evident(origin, entry)
            return self.install(origin, entry, document, now, previous.content, evidence)
        # A short hash naming the copy's bytes (in admission tokens): 16 hex digits of BLAKE2b.
        content = hashlib.blake2b(body or b"", digest_size=8).hexdigest()
        evidence = self._evident(origin, entry, body if document is not None else None)
        return self.install(origin, entry, document, now, content, evidence)

    def _evident(
        self, origin: str, entry: Entry, body: bytes | None = None
    ) -> dict[str, Any] | None:
        if self._evidence is None:
            return None
        return self._evidence(origin + self.kind.path, entry, body)

    def install(
        self,
        origin: str,
        entry: Entry,
        document: D | None,
        now: float,
        content: str | None = None,
        evidence: dict[str, Any] | None = None,
    ) -> OriginState[D]:
        """Put the origin's state in (evicting the least recently used)."""
        decision = serving(entry, now, self._limits)
        delay = None
        if self._crawl_delay is not None and document is not None and decision.kind == "rules":
            delay = self._crawl_delay(document)
        # A state without a document is judged by the serving's word.
        content = content if document is not None and content else decision.outcome
        state = OriginState(origin, entry, document, decision, delay, content, evidence)
        self._states.put(origin, state)
        return state


class OriginKeys:
    """(scheme, netloc) -> normalised origin (SPEC B1), bounded (``ORIGIN_KEYS_SIZE``)."""

    def __init__(self) -> None:
        self._keys: dict[tuple[str, str], str | None] = {}

    def origin(self, parts: SplitResult | ParseResult) -> str | None:
        key = (parts.scheme, parts.netloc)
        try:
            return self._keys[key]  # one lookup on the hot path
        except KeyError:
            pass
        if len(self._keys) >= ORIGIN_KEYS_SIZE:
            self._keys.clear()
        found = self._keys[key] = origin_from_parts(parts)
        return found

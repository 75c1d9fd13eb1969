"""Each origin's ``/.well-known/tdmrep.json`` (SPEC F2), fetched only when a declared purpose
needs it.

The same machinery as robots.txt: fetched through the engine by a ``Fetcher`` (redirects,
size and decoding limits, stats under ``tdmrep/``), statuses and lifetimes by ``_policy``
(a 4xx = no file, 429/5xx/network = unknown until the backoff's next attempt, Cache-Control
within the robots.txt bounds), kept in the robots.txt store under ``tdmrep:<origin>`` and in an
LRU here, one fetch per origin at a time. Unlike robots.txt, an unreachable file holds nothing
back: it states no reservation (unknown, which ``REP_USAGE_STRICT`` may refuse).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import IgnoreRequest
from twisted.internet.defer import Deferred, inlineCallbacks, maybeDeferred, succeed

from scrapy_rep.core.policy import Entry, Limits, record, serving
from scrapy_rep.core.tdmrep import TdmFile
from scrapy_rep.storage.results import RobotsStore, StoredRobots

if TYPE_CHECKING:
    from scrapy.http import Request

    from scrapy_rep.core.clock import Clock
    from scrapy_rep.crawl._resolver import FetcherLike

__all__ = ["TDMREP_PATH", "TdmFiles"]

logger = logging.getLogger("scrapy_rep.crawl.robotstxt_middleware")

TDMREP_PATH = "/.well-known/tdmrep.json"
_KEY = "tdmrep:"
_NO_FILE = TdmFile(())


class TdmFiles:
    """Known tdmrep.json files per origin; ``known(origin)`` is a Deferred of one (fetched
    if need be; cancel it to stop waiting)."""

    def __init__(
        self,
        *,
        clock: Clock,
        store: RobotsStore,
        fetcher: FetcherLike,
        limits: Limits,
        size: int = 4096,
    ) -> None:
        self._clock = clock
        self._store = store
        self._fetcher = fetcher
        self._limits = limits
        self._size = size
        # origin -> (file, valid until)
        self._known: OrderedDict[str, tuple[TdmFile, float]] = OrderedDict()
        # Origins being fetched, with the Deferreds waiting for their file.
        self._fetching: dict[str, list[Deferred[TdmFile]]] = {}
        self._closing = False

    def get(self, origin: str) -> TdmFile | None:
        """The origin's file while it is fresh (no rules when there is none, or it is
        unreachable); None when it must be fetched first (``demand``)."""
        known = self._known.get(origin)
        if known is None or self._clock.seconds() >= known[1]:
            return None
        self._known.move_to_end(origin)
        return known[0]

    def _demand(self, origin: str, via: Request | None) -> None:
        """Fetch the origin's file (once at a time)."""
        if origin in self._fetching or self._closing:
            return
        self._fetching[origin] = []
        self._resolve(origin, via).addBoth(self._done, origin)

    def known(self, origin: str, via: Request | None = None) -> Deferred[TdmFile]:
        """The origin's file, fetched first if need be, the way ``via`` (the request it is
        needed for) goes (fails with IgnoreRequest on close)."""
        found = self.get(origin)
        if found is not None:
            return succeed(found)
        waiter: Deferred[TdmFile] = Deferred()
        if self._closing:
            waiter.errback(IgnoreRequest(f"{origin}: tdmrep.json not known when the crawl closed"))
            return waiter
        self._demand(origin, via)
        self._fetching[origin].append(waiter)
        return waiter

    def busy(self) -> bool:
        return bool(self._fetching)

    def close(self) -> None:
        self._closing = True
        fetching, self._fetching = self._fetching, {}
        for origin, waiters in fetching.items():
            for waiter in waiters:
                waiter.errback(
                    IgnoreRequest(f"{origin}: tdmrep.json not known when the crawl closed")
                )

    def _done(self, result: object, origin: str) -> None:
        waiters = self._fetching.pop(origin, [])
        if not isinstance(result, TdmFile):  # a store or fetch error: unknown for one delay
            logger.error("Resolving %s of %s failed: %s", TDMREP_PATH, origin, result)
            result = _NO_FILE
            self._install(origin, result, self._limits.retry_delay)
        if self._closing:
            return
        for waiter in waiters:
            waiter.callback(result)

    @inlineCallbacks
    def _resolve(self, origin: str, via: Request | None) -> Generator[Deferred[Any], Any, TdmFile]:
        key = _KEY + origin
        stored = yield maybeDeferred(self._store.get, key).addErrback(lambda _failure: None)
        entry = Entry.from_meta(stored.meta) if stored is not None else None
        now = self._clock.seconds()
        if entry is None or now >= serving(entry, now, self._limits).refresh_at:
            fetch, body = yield self._fetcher.fetch(origin + TDMREP_PATH, via)
            now = self._clock.seconds()
            new = record(entry, fetch, now, self._limits)
            if fetch.outcome == "unreachable" and stored is not None:
                body = stored.body
            put = maybeDeferred(self._store.put, key, StoredRobots(new.to_meta(), body))
            yield put.addErrback(lambda _failure: None)
            entry, stored = new, StoredRobots(new.to_meta(), body)
        decision = serving(entry, now, self._limits)
        body = stored.body if stored is not None else None
        if decision.kind == "rules" and body is not None:
            found = TdmFile.parse(body)
        elif decision.kind == "hold":
            found = TdmFile((), f"unreachable ({entry.error or f'status {entry.status}'})")
        else:
            found = _NO_FILE
        self._install(origin, found, decision.refresh_at - now)
        if found.rules:
            logger.info("%s of %s: %d rule(s)", TDMREP_PATH, origin, len(found.rules))
        return found

    def _install(self, origin: str, found: TdmFile, lifetime: float) -> None:
        # At least a second: a file that expires as it arrives would be fetched in a loop.
        self._known[origin] = (found, self._clock.seconds() + max(lifetime, 1.0))
        self._known.move_to_end(origin)
        while len(self._known) > self._size:
            self._known.popitem(last=False)

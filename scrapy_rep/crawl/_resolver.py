"""Resolving an origin's document — robots.txt, tdmrep.json, any usage document: store read,
fetch lease, fetch, record, store write, retries.

One ``Resolver`` per kind of document (``_cache.DocumentKind``: where it lives, how it is read,
its stats, whether a failure holds the origin); everything else is the same for all of them:
the store shared by a fleet, a lease so that the fleet fetches each origin's document once, a
warning when the store goes away, lifetimes and backoff (``core.policy``), single flight.

A service: ``wait(origin)`` is a Deferred of the origin's state once it serves (robots.txt:
rules, or everything allowed; a usage document: once fetched, whatever the answer); cancelling
it withdraws the interest, and an origin nobody waits for is not retried. ``state`` answers at
once from what is known, ``report`` and ``resolve`` make one attempt (the explain command; an
origin's first request at the final gate), ``room(limit)`` waits while ``limit`` origins are
being resolved or claimed (the start-request intake), ``claim`` lets an unknown origin's first
request go on to the scheduler unresolved. A new state
installed is handed to ``announce`` (to be logged and signalled); nothing is called back
otherwise. When a document is fetched: ``_decide`` says now or at ``refresh_at`` (SPEC B3
refresh, B2 backoff and Retry-After through ``policy.serving``); beside it only ``report``
(asked explicitly: one attempt now) and a resolution that failed outright (again after
REP_RETRY_DELAY) start one. Time comes from the clock it is given.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from scrapy.http import Request, Response, TextResponse
from twisted.internet import task
from twisted.internet.defer import Deferred, fail, inlineCallbacks, maybeDeferred, succeed
from twisted.python.failure import Failure

from scrapy_rep.core.policy import Entry, Fetch, given_up, record, retry_delay, serving
from scrapy_rep.core.proxy import proxy_name
from scrapy_rep.crawl._events import give_up_reason, guarded, withdraw
from scrapy_rep.storage.results import RobotsStore, StoredRobots

if TYPE_CHECKING:
    from scrapy_rep.core.clock import Clock, DelayedCall
    from scrapy_rep.crawl._cache import OriginCache, OriginReport, OriginState
    from scrapy_rep.crawl._events import Events
    from scrapy_rep.crawl._settings import MiddlewareSettings

__all__ = ["COPY_FLAG", "Announce", "FetcherLike", "Resolver"]

#: Flag of a response answering a spider's own robots.txt request from the crawl's copy.
COPY_FLAG = "robotstxt_copy"

D = TypeVar("D")

#: How long a claim counts for ``room`` if its request never reaches the final gate (dropped
#: before it by another downloader middleware, or taken by another process of a fleet sharing
#: the scheduler queue): it then gives its place back.
CLAIM_TTL = 30.0

#: Told of each new state installed: (state, previous, now, trigger, from_store). ``trigger``:
#: the request that made the origin be resolved (None: none known); ``from_store``: read from
#: the store, not fetched by this process.
Announce = Callable[
    ["OriginState[Any]", "OriginState[Any] | None", float, "Request | None", bool], None
]


class FetcherLike(Protocol):
    """``scrapy_rep.crawl._fetch.Fetcher``'s interface: one robots.txt fetch, redirects followed."""

    def fetch(self, url: str, via: Request | None = None) -> Deferred[tuple[Fetch, bytes | None]]:
        """Fetch ``url`` the way ``via`` (the request it is needed for) goes; never fails."""


class ClosingError(Exception):
    """A resolution given up because the crawl closes."""


class Resolver(Generic[D]):
    def __init__(
        self,
        *,
        clock: Clock,
        store: RobotsStore,
        fetcher: FetcherLike,
        cache: OriginCache[D],
        events: Events,
        config: MiddlewareSettings,
        owner: str,
        announce: Announce,
    ) -> None:
        """``cache``: the states of the kind of document resolved (``cache.kind``);
        ``config``: the retry schedule and caching limits (SPEC B2, B3) and the fetch leases'."""
        self._clock = clock
        self._store = store
        self._fetcher = fetcher
        self._cache = cache
        self.kind = cache.kind
        #: The document's name (``robots.txt``): what requests held for it wait for.
        self.name = cache.kind.name
        self._events = events
        self._config = config
        self._owner = owner
        self._announce = announce
        # Per origin, the Deferreds of those waiting for it to serve (``wait``).
        self._waiters: dict[str, list[Deferred[OriginState[D]]]] = {}
        # Waiting for room (``room``), with the limit each waits below.
        self._room: list[tuple[int, Deferred[None]]] = []
        # The request that made each origin being resolved be fetched (robots_parsed names
        # it), kept until the origin is answered.
        self._triggers: dict[str, Request | None] = {}
        # Per origin waited for, one waiting request per way there (its proxy, or none): a
        # fetch that gets no answer one way is tried the others' ways before it counts.
        self._ways: dict[str, weakref.WeakValueDictionary[str, Request]] = {}
        # Origins being resolved, with the Deferreds waiting for that resolution.
        self._resolving: dict[str, list[Deferred[OriginState[D]]]] = {}
        # When the fetch in flight of an origin began (until its answer is stored).
        self._fetching: dict[str, float] = {}
        # Unknown origins whose first request went on to the scheduler unresolved (``claim``),
        # with when, oldest first: each resolves when that request reaches the final gate.
        self._claims: dict[str, float] = {}
        self._retries: dict[str, DelayedCall] = {}
        # Per origin, resolutions in a row that failed outright (an error of ours, or of the
        # store): they count toward giving the origin up, as failed fetches do.
        self._broken: dict[str, int] = {}
        self._closing = False
        # Failures recorded before this run (a resumed job, a long-lived store) are not this
        # run's to give up on: it makes an attempt of its own first.
        self.started = clock.seconds()

    def busy(self) -> bool:
        return bool(self._resolving)

    def fetch_started(self, origin: str) -> float | None:
        """When the fetch of ``origin``'s document in flight began (by this process), or None:
        what it answers may yet serve the requests waiting for it."""
        return self._fetching.get(origin)

    def serves(self, state: OriginState[D]) -> bool:
        """Can requests go on with ``state``? robots.txt: not while it holds the origin (SPEC
        B2); a usage document: always, a failure stating nothing."""
        return not self.kind.holds or state.serving.kind != "hold"

    def room(self, limit: int) -> Deferred[None] | None:
        """None while fewer than ``limit`` origins are being resolved or claimed, else a
        Deferred fired once fewer are (or the crawl closes): start requests are taken lazily
        meanwhile (``StartIntakeMiddleware``), as a held request takes no downloader place."""
        if self._closing or self._busy_origins() < max(1, limit):
            return None
        waiter: Deferred[None] = Deferred()
        self._room.append((max(1, limit), waiter))
        return waiter

    def _busy_origins(self) -> int:
        claims, expired = self._claims, self._clock.seconds() - CLAIM_TTL
        while claims and next(iter(claims.values())) < expired:
            del claims[next(iter(claims))]
        return len(self._resolving) + len(claims)

    def _wake_room(self) -> None:
        waiting, self._room = self._room, []
        busy = self._busy_origins()
        for limit, waiter in waiting:
            if self._closing or busy < limit:
                waiter.callback(None)
            else:
                self._room.append((limit, waiter))

    def claim(self, origin: str, now: float) -> bool:
        """Let the first request of ``origin`` — unknown here, not being resolved, not
        waiting for a retry, not claimed — go on to the scheduler unresolved: True when it
        may. Its resolution starts when it reaches the final gate (``resolve``), where it
        waits off the downloader's places and goes the moment robots.txt is known, as with
        Scrapy's own middleware but without holding a place meanwhile (SPEC C4)."""
        if self._closing or origin in self._resolving or origin in self._retries:
            return False
        if now < self._claims.get(origin, -math.inf) + CLAIM_TTL:
            return False
        self._claims.pop(origin, None)
        self._claims[origin] = now
        return True

    def unclaim(self, origin: str) -> None:
        """The claimed request reached the final gate, or was dropped on its way."""
        if self._claims.pop(origin, None) is not None:
            self._wake_room()

    def reinstate(self, state: OriginState[D]) -> None:
        """Make ``state`` the origin's current one again if the cache evicted it (and
        nothing newer was installed since)."""
        if self._cache.peek(state.origin) is None:
            self._cache.reinstate(state)

    def waiting(self, origin: str, request: Request) -> None:
        """``request`` waits for ``origin``'s document: its way there (its proxy, or none) is
        one a fetch may take (``_fetch``)."""
        way, ways = _way(request), self._ways.get(origin)
        if ways is None:
            if way == _way(self._triggers.get(origin)):
                return  # the common case, one way (no proxy): nothing to keep
            ways = self._ways[origin] = weakref.WeakValueDictionary()
        ways.setdefault(way, request)

    def peek(self, origin: str) -> OriginState[D] | None:
        """The origin's state if known here, without side effects."""
        return self._cache.peek(origin)

    def wait(self, origin: str, trigger: Request | None) -> Deferred[OriginState[D]]:
        """The origin's state once it serves (fetched now, or when its backoff allows, and
        retried while someone waits). Cancel the Deferred to stop waiting."""
        now = self._clock.seconds()
        state = self._cache.get(origin, now)
        if state is not None and self.serves(state) and now < state.serving.refresh_at:
            return succeed(state)
        waiter: Deferred[OriginState[D]] = Deferred(lambda d: withdraw(self._waiters, origin, d))
        self._waiters.setdefault(origin, []).append(waiter)
        self._decide(origin, now, trigger)
        return waiter

    def given_up(self, origin: str) -> str | None:
        """Why the crawl may stop waiting for ``origin`` (``policy.given_up``), or None.

        Only once the latest failure is this run's own (fetched since this process started,
        by it or, with a shared store, by a fleet member): the attempt already scheduled at
        the stored ``retry_at`` is made first, and if it succeeds the requests are crawled.
        """
        if origin in self._resolving:
            return None
        broken = self._broken.get(origin, 0)
        if 0 < self._config.limits.give_up_after <= broken:
            return give_up_reason(broken, f"resolving {self.kind.name} failed")
        state = self._cache.peek(origin)
        if state is not None and state.entry.fetched_at >= self.started:
            if given_up(state.entry, self._clock.seconds(), self._config.limits):
                return give_up_reason(state.entry.failures, state.entry.error, state.entry.status)
        return None

    def state(self, origin: str, now: float, trigger: Request | None) -> OriginState[D] | None:
        """The origin's state if known here; starts a refresh when one is due."""
        state = self._cache.get(origin, now)
        if state is not None and now >= state.serving.refresh_at:
            self._decide(origin, now, trigger)
        return state

    def _decide(self, origin: str, now: float, trigger: Request | None) -> None:
        """Fetch robots.txt now, or when? (``report`` and a failed resolution aside.)

        Unknown origin, or its ``refresh_at`` passed (copy expired, SPEC B3; backoff or
        Retry-After over, SPEC B2): fetch now. Otherwise at ``refresh_at`` (only requests
        waiting get here: ``state`` calls it once ``refresh_at`` has passed).
        """
        if self._closing or origin in self._resolving:
            return
        if trigger is not None:
            self._triggers.setdefault(origin, trigger)
        state = self._cache.peek(origin)
        refresh_at = 0.0 if state is None else state.serving.refresh_at
        if now >= refresh_at:
            self._start(origin)
        else:
            self._schedule_retry(origin, refresh_at - now)

    def copy(self, state: OriginState[D], request: Request) -> Deferred[Response | None]:
        """The copy ``state`` serves, as the answer to ``request`` (a spider's own request for
        the document, ``COPY_FLAG``): a 2xx with its body from the store, a 4xx without one;
        None when there is no such copy (unreachable with no good copy, a redirect chain not
        followed, the store lost it)."""
        good = state.entry.good
        if good is None or (status := good.status) is None:
            return succeed(None)
        url = good.redirects[-1] if good.redirects else state.origin + self.kind.path
        if good.outcome == "no_robots":
            return succeed(_answer(request, status, url, None) if 400 <= status < 500 else None)

        def body(loaded: tuple[StoredRobots | None, Entry | None]) -> Response | None:
            stored, entry = loaded
            if stored is None or stored.body is None or entry is None or entry.good != good:
                return None
            return _answer(request, status, url, stored.body)

        return self._load(state.origin).addCallback(body)

    def report(self, origin: str, trigger: Request) -> Deferred[OriginReport]:
        """Resolve ``origin`` (one fetch at most) and report it (the explain command)."""
        return self.resolve(origin, trigger).addCallback(lambda state: state.report())

    def resolve(self, origin: str, trigger: Request) -> Deferred[OriginState[D]]:
        """The origin's state, resolved now if it does not serve (one fetch at most)."""
        state = self.state(origin, self._clock.seconds(), trigger)
        if state is None or not self.serves(state):
            # Asked explicitly: one attempt now, even during a backoff.
            self._triggers.setdefault(origin, trigger)
            self._start(origin)
        if origin in self._resolving:
            listener: Deferred[OriginState[D]] = Deferred()
            self._resolving[origin].append(listener)
            return listener
        known = self._cache.peek(origin)  # answered at once (known, or from the store)
        if known is None:
            return fail(RuntimeError(f"{self.name} of {origin} could not be resolved"))
        return succeed(known)

    def close(self) -> None:
        self._closing = True
        self._wake_room()
        # A retry pending is in _retries until it runs: every one there is active.
        for call in self._retries.values():
            call.cancel()
        self._retries.clear()

    def _start(self, origin: str) -> None:
        if origin in self._resolving or self._closing:
            return
        self._claims.pop(origin, None)
        call = self._retries.pop(origin, None)
        if call is not None:
            call.cancel()
        self._resolving[origin] = []
        self._resolve(origin).addBoth(self._resolved, origin)

    def _resolved(self, result: OriginState[D] | Failure, origin: str) -> None:
        reports = self._resolving.pop(origin, [])
        self._wake_room()
        if isinstance(result, Failure):
            broken = self._broken[origin] = self._broken.get(origin, 0) + 1
            if not isinstance(result.value, ClosingError):
                self._events.resolve_failed(self.kind.name, origin, result, first=broken == 1)
            for report in reports:
                report.errback(result)
            if self._waiters.get(origin):
                # Backs off as failed fetches do (REP_RETRY_DELAY, doubling).
                self._schedule_retry(origin, retry_delay(broken, None, None, self._config.limits))
            return
        self._broken.pop(origin, None)
        for report in reports:
            report.callback(result)
        # Closing: the waiters are left unanswered (and ``_decide`` starts nothing).
        if self.serves(result) and not self._closing:
            for waiter in self._waiters.pop(origin, []):
                waiter.callback(result)
        elif self._waiters.get(origin):
            self._decide(origin, self._clock.seconds(), None)

    def _schedule_retry(self, origin: str, delay: float) -> None:
        if self._closing or origin in self._retries:
            return
        self._retries[origin] = self._clock.callLater(max(0.0, delay), self._retry, origin)

    def _retry(self, origin: str) -> None:
        self._retries.pop(origin, None)
        if self._waiters.get(origin):
            self._start(origin)

    @inlineCallbacks
    def _resolve(self, origin: str) -> Generator[Deferred[Any], Any, OriginState[D]]:
        """The origin's state: from the store if fresh there, else fetched (one fetcher)."""
        stored, entry = yield self._load(origin)
        if entry is None and (known := self._cache.peek(origin)) is not None:
            # The store lost the entry or cannot answer: this process's copy counts.
            entry = known.entry
        now = self._clock.seconds()
        fresh = entry is not None and now < serving(entry, now, self._config.limits).refresh_at
        if stored is not None and fresh:
            return self._install(origin, entry, stored.body, now, from_store=True)
        # The newest fetch known here: a later one in the store was made by another process.
        seen = -math.inf if entry is None else entry.fetched_at
        while True:
            leased = yield self._lease(origin)
            # Read again after every lease attempt, taken or not: another process may have
            # stored a newer answer and released its lease between our read and our attempt
            # (double-checked locking), and then fetching again would be a second fetch.
            latest, latest_entry = yield self._load(origin)
            if latest_entry is not None and latest_entry.fetched_at > seen:
                if leased:
                    yield self._call(self._store.release_lease, origin, self._owner)
                now = self._clock.seconds()
                return self._install(origin, latest_entry, latest.body, now, from_store=True)
            if leased:
                break
            if self._closing:
                raise ClosingError("crawl closing")
            # Another process is fetching it: wait for its entry to appear, or for its
            # lease to lapse (a dead holder's lease lapses after REP_LEASE_TTL).
            yield task.deferLater(cast(Any, self._clock), self._config.lease_poll_interval)
        # Renew the lease while the fetch runs, so a short TTL never lapses under a live
        # holder, and a killed holder blocks the origin for one TTL at most.
        renewal = task.LoopingCall(self._lease, origin)
        renewal.clock = cast(Any, self._clock)
        renewal.start(self._config.lease_ttl / 3, now=False)
        try:
            if entry is not None and entry.good is not None:
                self._events.count(self.kind.stats.refresh)
            url = origin + self.kind.path
            self._fetching[origin] = self._clock.seconds()
            try:
                fetch, body = yield self._fetch(origin, url)
            except Exception as exc:
                # What the site sent broke something of ours (or of a middleware): a failed
                # fetch of that origin, counted and backed off like any other, never a loop.
                self._events.fetch_broke(self.kind.name, origin, exc)
                fetch, body = Fetch("unreachable", error=f"internal error: {exc!r}"[:300]), None
            now = self._clock.seconds()
            new = record(entry, fetch, now, self._config.limits)
            if fetch.outcome == "unreachable":
                body = stored.body if stored is not None and new.good is not None else None
            # A good copy known only in memory has no body to store with it.
            if not (new.good is not None and new.good.outcome == "ok" and body is None):
                yield self._call(self._store.put, origin, StoredRobots(new.to_meta(), body))
        finally:
            self._fetching.pop(origin, None)
            renewal.stop()
            yield self._call(self._store.release_lease, origin, self._owner)
        return self._install(origin, new, body, now, from_store=False)

    @inlineCallbacks
    def _fetch(self, origin: str, url: str) -> Generator[Deferred[Any], Any, tuple[Fetch, Any]]:
        """One fetch of ``url``, the way the request it is made for goes. A failing route is
        not a failing site: when that way gets no answer from the site (``unreachable``: a
        proxy's 5xx or its own error, a timeout), each other way a waiting request goes is
        tried at once, and only a failure on every way counts against the origin. The requests
        of a way that failed then meet its failures at the page level (SPEC H6: their route
        pauses, and is given up)."""
        via = self._triggers.get(origin)
        tried: set[str] = set()
        while True:
            fetch, body = yield self._fetcher.fetch(url, via)
            if fetch.outcome != "unreachable" or self._closing:
                return fetch, body
            tried.add(_way(via))
            ways = self._ways.get(origin)
            others = () if ways is None else list(ways.items())
            other = next((r for way, r in others if way not in tried), None)
            if other is None:
                return fetch, body
            self._events.count(self.kind.stats.other_way)
            self._events.way_failed(self.name, origin, _way(via), fetch.error or fetch.status)
            via = self._triggers[origin] = other

    def _install(
        self, origin: str, entry: Entry, body: bytes | None, now: float, *, from_store: bool
    ) -> OriginState[D]:
        """Install the state of ``entry`` (read from the store, or fetched by this process),
        and announce it unless the store's entry is the one this process already has."""
        if from_store:
            self._events.count(self.kind.stats.store_hit)
        previous = self._cache.peek(origin)
        state = self._cache.read(origin, entry, body, previous, now)
        if not from_store or previous is None or previous.entry.fetched_at != entry.fetched_at:
            # The request that triggered this resolution; forgotten once the origin is answered.
            triggers = self._triggers
            trigger = triggers.pop(origin, None) if self.serves(state) else triggers.get(origin)
            self._announce(state, previous, now, trigger, from_store)
        if self._ways and self.serves(state):
            self._ways.pop(origin, None)
        return state

    def _load(self, origin: str) -> Deferred[tuple[StoredRobots | None, Entry | None]]:
        return self._call(self._store.get, origin).addCallback(
            lambda stored: (stored, None if stored is None else Entry.from_meta(stored.meta))
        )

    def _lease(self, origin: str) -> Deferred[bool]:
        # A store that cannot answer must not stop the crawl: fetch ourselves. Taking a lease
        # we hold renews it (every store's acquire_lease extends its owner's lease).
        return self._call(
            self._store.acquire_lease, origin, self._owner, self._config.lease_ttl, default=True
        )

    def _call(
        self, method: Callable[..., Any], origin: str, *args: Any, default: Any = None
    ) -> Deferred[Any]:
        """The store's ``method`` for the origin's key (its document's, and its lease's), or
        ``default`` when the store fails."""
        key = self.kind.key_prefix + origin
        return guarded(self._events, maybeDeferred(method, key, *args), default)


def _way(request: Request | None) -> str:
    """The way ``request`` goes to its origin: its proxy (credentials left out), or ""."""
    proxy = None if request is None else request.meta.get("proxy")
    return proxy_name(proxy) if proxy else ""


def _answer(request: Request, status: int, url: str, body: bytes | None) -> Response:
    """The crawl's copy of robots.txt, as the answer to a spider's own request for it."""
    # HttpCacheMiddleware stores what passes its process_response: not this copy.
    request.meta["dont_cache"] = True
    if body is None:
        return Response(url, status=status, request=request, flags=[COPY_FLAG])
    # SPEC A1: the body is read as UTF-8, whatever the server declared.
    utf8 = {b"Content-Type": b"text/plain; charset=utf-8"}
    return TextResponse(
        url, status=status, headers=utf8, body=body, request=request, flags=[COPY_FLAG]
    )

"""``Pauses``: origins whose pages said "slow down" (SPEC H) — a 503, a 429, or several distinct
pages answering another 5xx, or nothing at all, in a row (``core.pause``).

A paused origin's requests are held as requests for an unknown robots.txt are (``Room``,
outside the downloader's slots, durable where the crawl is): the one that got the answer
(``RobotsTxtGuard`` hands it back before RetryMiddleware or the HTTP cache see the answer), the
ones waiting in its download slot (``evict``) and every new one (the gates ask ``admit``). The
pause lasts ``Retry-After`` or a backoff that doubles (``core.pause.pause_seconds``); then
**one** request probes the origin: an answer resumes it, another "slow down" (or no answer)
pauses it again, twice as long (a pause no answer started or lengthened: jittered).

With a shared store (SQLite, Redis) the pause is the fleet's: each pause is written there as a
time-to-live (``set_pause``), every process polls the store's pause version and follows what
the others found (live, not only when it next meets the origin), and a lease decides which
process sends the one probe (``probe:<origin>``). A resumed JOBDIR job reads its pauses back at
startup. A pause is its own state: robots.txt stays whatever it is.

What pauses is a *route* (``route``): the origin, or the origin through one proxy. An answer
through a proxy (``meta["proxy"]``) may be the proxy's own, even without a ``Proxy-Status``
saying so (SPEC H4 covers the answers that do): it pauses that proxy's way to the origin
only, so requests that go directly or through another proxy of a rotating pool go on. A site
that really says "slow down" says it on every route, and each pauses.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import task
from twisted.internet.defer import Deferred, maybeDeferred, succeed

from scrapy_rep.core.pause import Struggle, page_answer, pause_seconds
from scrapy_rep.core.proxy import proxy_name
from scrapy_rep.core.stats import PAUSE_EXTENDED, PAUSE_PROBES, PAUSED
from scrapy_rep.crawl._events import Events, guarded, withdraw

if TYPE_CHECKING:
    from scrapy.http import Request

    from scrapy_rep.core.clock import Clock, DelayedCall
    from scrapy_rep.crawl._settings import MiddlewareSettings
    from scrapy_rep.storage.results import RobotsStore, StoredPause

__all__ = ["DONT_PAUSE_META", "PROBE_META", "Pauses", "exempt", "route"]

#: Meta key of the one request sent to a paused route once its pause is over. Its value names
#: the request's URL and the route it probes (``"<url> probes <route>"``): the mark must cross
#: the scheduler (JOBDIR's and scrapy-redis's queues hand out new request objects) and reach
#: another process of a fleet, so it is bound to the request's URL, not to the object; a copy
#: on another request probes nothing (``Pauses.probing``).
PROBE_META = "rep_pause_probe"
_PROBES = " probes "
#: Meta key a request sets to neither pause its origin nor be held by a pause (an API or
#: proxy whose own 429/503 says nothing of the site, SPEC H4).
DONT_PAUSE_META = "rep_dont_pause"


#: Routes whose pages' failures in a row are counted at once (``Pauses._page_failed``).
STRUGGLES_KEPT = 10_000


def exempt(request: Request) -> bool:
    """SPEC H4: is ``request`` outside the pauses (marked ``rep_dont_pause``, or not obeying
    robots.txt)? It neither waits for a pause nor pauses its site by its answer."""
    return bool(request.meta.get(DONT_PAUSE_META) or request.meta.get("dont_obey_robotstxt"))


def route(origin: str, request: Request) -> str:
    """The way ``request`` reaches ``origin``: the origin itself, or ``"<origin> via <proxy>"``
    when it goes through a proxy (credentials left out)."""
    proxy = request.meta.get("proxy")
    return origin if not proxy else f"{origin} via {proxy_name(proxy)}"


def _probed_route(request: Request) -> str | None:
    """The route ``request`` was sent to probe (``PROBE_META``), if the mark is its own."""
    mark = request.meta.get(PROBE_META)
    if not isinstance(mark, str):
        return None
    url, found, key = mark.partition(_PROBES)
    return key if found and url == request.url else None


def _origin_of(key: str) -> str:
    return key.partition(" via ")[0]


@dataclass
class _Pause:
    until: float
    failures: int
    reason: str
    #: When this process first saw the origin paused (its give-up counts from then).
    since: float
    #: When the probe went out (None: no probe in flight).
    probe_at: float | None = None
    #: The probe may go: the pause is over and, in a fleet, this process holds the probe lease.
    may_probe: bool = False
    #: The store has this pause (written, or read from it): missing from it later = resumed.
    stored: bool = False


class Pauses:
    #: Its name for the ``Room`` (what held requests wait for).
    name = "pause"

    def __init__(
        self,
        *,
        clock: Clock,
        store: RobotsStore,
        events: Events,
        config: MiddlewareSettings,
        probe_timeout: float,
        owner: str,
        shared: bool,
        evict: Callable[[str], None],
        draw: Callable[[], float] = random.random,
    ) -> None:
        """``config``: REP_PAUSE_DELAY, REP_PAUSE_MAX_DELAY, REP_PAUSE_GIVE_UP_AFTER and how
        often a shared store is polled; ``shared``: the store is a fleet's or a job's (SQLite,
        Redis), so pauses are read back and polled; ``evict(origin)``: send back the origin's
        requests waiting in the download slots; ``draw``: a number in [0, 1) for the jitter."""
        self._clock = clock
        self._draw = draw
        self._store = store
        self._events = events
        self._config = config
        self._probe_timeout = probe_timeout
        self._owner = owner
        self._shared = shared
        #: Sends back the requests of a route that pauses waiting in the download slots.
        self._evict = evict
        #: Paused routes (``route``): the gates' fast path reads this dict.
        self.paused: dict[str, _Pause] = {}
        #: Per origin, its paused routes (``given_up`` and ``why`` are asked by origin).
        self._routes: dict[str, set[str]] = {}
        #: Routes whose pages answered 5xx (or nothing) since their last answer (SPEC H1).
        self.struggles: dict[str, Struggle] = {}
        self._waiters: dict[str, list[Deferred[None]]] = {}
        self._timers: dict[str, DelayedCall] = {}
        self._version: int | None = None
        self._polling = False
        self._poll = task.LoopingCall(self._poll_store)
        self._poll.clock = cast(Any, clock)
        self._closed = False

    def open(self) -> Deferred[None]:
        """Read the store's pauses (a resumed job, a fleet) and follow its changes. Fired once
        the first read is done (or failed): the spider opens after it, so that no request
        goes to an origin the store says is paused before this process knows it."""
        if not self._shared:
            return succeed(None)
        self._poll.start(self._config.lease_poll_interval, now=False)
        return self._poll_store()

    def close(self) -> None:
        self._closed = True
        if self._poll.running:
            self._poll.stop()
        for key in list(self._timers):
            self._cancel(key)
        # Each cancelled waiter withdraws itself from ``_waiters``.
        for waiter in [w for waiting in self._waiters.values() for w in waiting]:
            waiter.cancel()

    # -- the gates ---------------------------------------------------------------------------

    def quiet(self, request: Request) -> bool:
        """Nothing to learn from an answer to ``request`` that is not a "slow down": no route
        struggling (SPEC H1), and it is no probe."""
        return not self.struggles and not self.probing(request)

    def probing(self, request: Request) -> bool:
        """Is ``request`` a route's probe (``PROBE_META`` made for its URL)?"""
        return _probed_route(request) is not None

    def not_probed(self, request: Request) -> None:
        """``request`` probes nothing: its answer said nothing of the site (a proxy's own), or
        it goes back to the gate."""
        request.meta.pop(PROBE_META, None)

    def admit(self, key: str, request: Request, now: float) -> bool:
        """May ``request``, by route ``key``, go now? Yes if the route is not paused, or as the
        one probe of a route whose pause is over (then marked ``PROBE_META``); False: hold it
        until ``wait`` fires."""
        pause = self.paused.get(key)
        if pause is None:
            return True
        probe_out = pause.probe_at is not None and now < pause.probe_at + self._probe_timeout
        if now < pause.until or not pause.may_probe or probe_out:
            return False
        pause.probe_at = now
        self._events.count(PAUSE_PROBES)
        # A probe dropped on its way (or never answered) must not keep the origin shut: after
        # the timeout the next request may probe.
        self._timers[key] = self._clock.callLater(self._probe_timeout, self._wake, key)
        request.meta[PROBE_META] = f"{request.url}{_PROBES}{key}"
        return True

    def wait(self, origin: str, trigger: Request | None = None) -> Deferred[None]:
        """Fired when a request of ``origin`` (by ``trigger``'s route) may go: its probe may,
        or the route is resumed."""
        key = origin if trigger is None else route(origin, trigger)
        pause = self.paused.get(key)
        if pause is None or (pause.may_probe and pause.probe_at is None and not self._closed):
            return succeed(None)
        waiter: Deferred[None] = Deferred(lambda d: withdraw(self._waiters, key, d))
        self._waiters.setdefault(key, []).append(waiter)
        return waiter

    def given_up(self, origin: str) -> str | None:
        """Why the crawl may stop waiting for ``origin`` (a route of it paused for longer than
        REP_PAUSE_GIVE_UP_AFTER), or None."""
        give_up_after = self._config.pause_give_up_after
        now = self._clock.seconds()
        for key in self._routes.get(origin, ()):
            pause = self.paused[key]
            paused_for = now - pause.since
            if 0 < give_up_after <= paused_for:  # 0: never given up
                return (
                    f"its pages have asked to slow down for {paused_for:.0f}s ({pause.reason}), "
                    f"longer than REP_PAUSE_GIVE_UP_AFTER={give_up_after:g}s"
                )
        return None

    def why(self, origin: str) -> str | None:
        """What keeps a route of ``origin`` paused, in words, or None."""
        return next((self.paused[key].reason for key in self._routes.get(origin, ())), None)

    # -- answers -----------------------------------------------------------------------------

    def answered(self, key: str, request: Request, status: int, retry_after: float | None) -> bool:
        """A page answered ``status`` by route ``key``: True when the route pauses for it (the
        request is then sent again after the pause, SPEC H3)."""
        probe = self._probed(key, request)
        answer = page_answer(status)
        path = _path(request)
        if answer == "ok":
            self.struggles.pop(key, None)
            if probe:
                self._resume(key, f"{path} answered HTTP {status}")
            return False
        if answer == "error":
            struggles, pages = self._page_failed(key, request)
            if not struggles and not probe:
                return False
            reason = (
                f"{pages} different pages answered HTTP 5xx in a row "
                f"(the last: HTTP {status} at {path})"
            )
        else:
            after = f" with Retry-After {retry_after:g}s" if retry_after is not None else ""
            reason = f"HTTP {status}{after} at {path}"
        self._failed(key, retry_after, reason, probe)
        return True

    def unanswered(self, key: str, request: Request, failure: str, counts: bool) -> bool:
        """``request`` got no answer by route ``key`` (``failure``, in words): True when it is
        to be sent again after the route's pause (SPEC H3). A probe that got none keeps the
        route paused, longer. ``counts``: the site gave no answer (``core.pause.no_answer``),
        which counts as a 5xx does (SPEC H1); such a request sent before the route paused is
        held with the others, its retries not spent."""
        if self._probed(key, request):
            self._failed(key, None, f"{failure} at {_path(request)}", probe=True, jitter=True)
            return True
        if not counts:
            return False
        if key in self.paused:
            return True
        struggles, pages = self._page_failed(key, request)
        if not struggles:
            return False
        last = f"{failure} at {_path(request)}"
        reason = f"{pages} different pages failed in a row (the last: {last})"
        self._failed(key, None, reason, probe=False, jitter=True)
        return True

    def _page_failed(self, key: str, request: Request) -> tuple[bool, int]:
        """``request``'s page failed by route ``key`` (a 5xx, or no answer): does the route
        struggle now (SPEC H1), and how many distinct pages failed in a row there? A page is its
        path: one script failing whatever its query (/search?q=1, ?q=2, ...) is one broken
        page, not a struggling server. The routes counted are bounded: in a broad crawl many
        sites fail a page or two (a timeout) and never answer again; past ``STRUGGLES_KEPT``
        the one whose count began first is forgotten."""
        struggles = self.struggles
        if (struggle := struggles.get(key)) is None:
            if len(struggles) >= STRUGGLES_KEPT:
                del struggles[next(iter(struggles))]
            struggle = struggles[key] = Struggle()
        return struggle.failed(urlparse_cached(request).path), len(struggle)

    def _probed(self, key: str, request: Request) -> bool:
        """Was ``request``, answered by route ``key``, that route's probe? A probe that went
        another way (a rotating proxy gave it another one) said nothing of the route it was to
        probe: that route's next request may probe it."""
        probed = _probed_route(request)
        if probed is None:
            return False
        request.meta.pop(PROBE_META, None)
        if probed != key:
            pause = self.paused.get(probed)
            if pause is not None and pause.probe_at is not None:
                pause.probe_at = None
                self._wake(probed)
        return probed == key

    def _failed(
        self, key: str, retry_after: float | None, reason: str, probe: bool, jitter: bool = False
    ) -> None:
        now = self._clock.seconds()
        pause = self.paused.get(key)
        if pause is not None and not probe:
            # Sent before the pause began: the pause stands as it is.
            return
        failures = 1 if pause is None else pause.failures + 1
        config = self._config
        # SPEC H2: a site that gives no answer is probed at jittered times (``JITTER``).
        spread = self._draw() if jitter else 0.0
        seconds = pause_seconds(
            failures, retry_after, config.pause_delay, config.pause_max_delay, spread
        )
        self._events.count(PAUSED if pause is None else PAUSE_EXTENDED)
        if pause is None:
            pause = self._add(key, _Pause(now + seconds, failures, reason, since=now))
            self._evict(key)
        else:
            pause.until, pause.failures, pause.reason = now + seconds, failures, reason
            pause.probe_at, pause.may_probe = None, False
        self._events.paused(key, seconds, reason, first=failures == 1)
        self._schedule(key, seconds)
        written = self._store_call(self._store.set_pause, key, seconds, failures, reason)
        written.addCallback(self._written, key, pause)

    def _add(self, key: str, pause: _Pause) -> _Pause:
        self.paused[key] = pause
        self._routes.setdefault(_origin_of(key), set()).add(key)
        return pause

    def _written(self, done: object, key: str, pause: _Pause) -> None:
        if done is not _FAILED and self.paused.get(key) is pause:
            pause.stored = True

    def _resume(self, key: str, why: str, *, here: bool = True) -> None:
        """Route ``key`` answers again (``why``): its requests go. ``here``: this process saw
        it (then the fleet is told, and the probe lease let go)."""
        pause = self.paused.pop(key, None)
        if pause is None:
            return
        origin = _origin_of(key)
        routes = self._routes[origin]
        routes.remove(key)
        if not routes:
            del self._routes[origin]
        self._cancel(key)
        self._events.resumed(key, self._clock.seconds() - pause.since, why)
        if here:
            self._store_call(self._store.clear_pause, key)
            self._store_call(self._store.release_lease, f"probe:{key}", self._owner)
        self._wake(key)

    def _cancel(self, key: str) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None and timer.active():
            timer.cancel()

    def _schedule(self, origin: str, seconds: float) -> None:
        self._cancel(origin)
        if not self._closed:
            self._timers[origin] = self._clock.callLater(max(0.0, seconds), self._over, origin)

    def _over(self, origin: str) -> None:
        """The pause is over: one probe may go (in a fleet, if this process gets the lease)."""
        self._timers.pop(origin, None)
        pause = self.paused.get(origin)
        if pause is None or self._closed:
            return
        lease = (self._store.acquire_lease, f"probe:{origin}", self._owner, self._probe_timeout)
        claim = self._store_call(*lease) if self._shared else succeed(True)
        claim.addCallback(lambda taken: self._may_probe(origin, pause, taken is True))

    def _may_probe(self, origin: str, pause: _Pause, taken: bool) -> None:
        if not taken or self.paused.get(origin) is not pause:
            return  # another process probes; its outcome comes through the store
        pause.may_probe = True
        self._wake(origin)

    def _wake(self, origin: str) -> None:
        for waiter in self._waiters.pop(origin, []):
            waiter.callback(None)

    # -- the fleet ---------------------------------------------------------------------------

    def _poll_store(self) -> Deferred[None]:
        if self._polling or self._closed:
            return succeed(None)
        self._polling = True
        version = self._store_call(self._store.pause_version)
        return version.addCallback(self._changed).addBoth(self._polled)

    def _changed(self, version: object) -> Deferred[None] | None:
        if version is _FAILED or version == self._version:
            return None
        return self._store_call(self._store.pauses).addCallback(self._merge)

    def _polled(self, result: object) -> None:
        self._polling = False

    def _merge(self, read: object) -> None:
        """Follow the store: pauses another process (or an earlier run) found, extended or
        ended."""
        if read is _FAILED or self._closed:
            return
        self._version, stored = cast("tuple[int, dict[str, StoredPause]]", read)
        now = self._clock.seconds()
        for origin, found in stored.items():
            pause = self.paused.get(origin)
            until = now + found.remaining
            if pause is None:
                pause = self._add(origin, _Pause(until, found.failures, found.reason, now))
                self._events.paused_elsewhere(origin, found.remaining, found.reason)
                self._evict(origin)
                self._schedule(origin, found.remaining)
            elif found.failures > pause.failures or until > pause.until + 0.05:
                pause.until, pause.failures, pause.reason = until, found.failures, found.reason
                pause.probe_at, pause.may_probe = None, False
                self._schedule(origin, found.remaining)
            elif found.remaining == 0 and not pause.may_probe and origin not in self._timers:
                self._over(origin)  # another prober's lease may have lapsed: try again
            pause.stored = True
        for origin in [o for o, pause in self.paused.items() if pause.stored and o not in stored]:
            self._resume(origin, "resumed by another process", here=False)

    def _store_call(self, call: Callable[..., Deferred[Any]], *args: object) -> Deferred[Any]:
        """The store's answer, or ``_FAILED`` when it cannot give one (warned once per outage:
        this process then pauses on its own)."""
        return guarded(self._events, maybeDeferred(call, *args), _FAILED)


#: What ``Pauses._store_call`` gives for a store call that failed.
_FAILED = object()


def _path(request: Request) -> str:
    """The request's URL without its origin, as log lines show it."""
    url = request.url
    start = url.find("/", url.find("//") + 2)
    return url[start:] if start > 0 else "/"

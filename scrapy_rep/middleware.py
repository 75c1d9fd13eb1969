"""``RobotsTxtMiddleware``: Google's robots.txt rules for a Scrapy crawl, without stalls.

Enable with::

    ROBOTSTXT_OBEY = True
    DOWNLOADER_MIDDLEWARES = {
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
        "scrapy_rep.RobotsTxtMiddleware": 100,
        "scrapy_rep.RobotsTxtGuard": 950,
    }

How a request travels:

- **Gate** (``request_scheduled`` handler). Origin (SPEC B1) known: a disallowed
  request is dropped before it reaches the scheduler (``IgnoreRequest``; stat
  ``robotstxt/forbidden_before_schedule``). Origin unknown or unreachable: the
  request is *held* here, outside scheduler and downloader (no slot is taken, so
  one slow robots.txt cannot stall other origins), the origin's robots.txt fetch
  starts, and when it is answered the held requests are sent to ``engine.crawl``
  again and pass the gate once more. Held requests have not been seen by the
  dupefilter yet.
- **Final gate** (``process_request``): robots.txt may have changed since the
  request was scheduled; requests that never were scheduled (``engine.download``
  callers) are checked here too, waiting for an unknown origin.

Public API for tools (``scrapy robots``)::

    middleware.resolve(url: str) -> Deferred[OriginReport]

fetches (or takes from cache/store) the robots.txt of ``url``'s origin, after
one fetch attempt at most, and reports it. ``OriginReport`` fields: ``origin``
(normalised str), ``outcome`` ("ok": rules apply; "no_robots": 4xx, everything
allowed; "unreachable": 429/5xx/network error and no usable copy, origin
disallowed for now; "allow_all": unreachable for longer than
REP_UNREACHABLE_ALLOW_AFTER, everything allowed), ``robots`` (RobotsTxt | None),
``status`` (int | None), ``redirects`` (list[str], URLs followed), ``truncated``
(bool), ``fetched_at`` and ``expires_at`` (epoch floats | None; expires_at is when
it is fetched again), ``error`` (str | None: what went wrong on the last
attempt), ``stale`` (bool: an old copy serving while robots.txt cannot be
refreshed), ``crawl_delay`` (float | None, for the crawler's tokens).

State per origin lives in a ``RobotsStore`` (REP_STORE); its ``meta`` layout is
``scrapy_rep._policy.Entry.to_meta``. Parsed robots.txt are kept in a bounded
in-process LRU (REP_PARSED_CACHE_SIZE), so known origins never wait on the store.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import pickle
import time
import uuid
from collections import OrderedDict
from collections.abc import Coroutine, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from scrapy import signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest, NotConfigured
from scrapy.http import Request
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.request import request_from_dict
from twisted.internet import task
from twisted.internet.defer import Deferred, fail, inlineCallbacks, maybeDeferred, succeed
from twisted.python.failure import Failure

from scrapy_rep._fetch import Fetcher
from scrapy_rep._origin import origin as url_origin
from scrapy_rep._origin import origin_from_parts, robots_url
from scrapy_rep._policy import Entry, Limits, Serving, record, serving
from scrapy_rep._settings import MiddlewareSettings
from scrapy_rep.adapter import configured_tokens, crawler_tokens
from scrapy_rep.robotstxt import RobotsTxt
from scrapy_rep.store import RobotsStore, StoredRobots
from scrapy_rep.store._settings import store_from_settings

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

__all__ = ["OriginReport", "RobotsTxtMiddleware"]

_T = TypeVar("_T")

logger = logging.getLogger(__name__)

#: Meta key set on requests the gate let through to the scheduler: the
#: generation of the origin state that allowed them (see ``_State.generation``).
_GATED = "_robotstxt_gated"
#: This process's tag in state generations (see ``_State``).
_RUN = int.from_bytes(os.urandom(4), "big") | 1
#: File in JOBDIR holding the requests held when the crawl stopped.
HELD_FILE = "robotstxt-held.pickle"


@dataclass(frozen=True)
class OriginReport:
    """What the middleware knows about one origin's robots.txt (see module docstring)."""

    origin: str
    outcome: str
    robots: RobotsTxt | None
    status: int | None
    redirects: list[str]
    truncated: bool
    fetched_at: float | None
    expires_at: float | None
    error: str | None
    stale: bool = False
    crawl_delay: float | None = None


class _State:
    """An origin's entry as the hot path uses it: parsed, with its serving decision."""

    __slots__ = ("crawl_delay", "entry", "generation", "origin", "robots", "serving")

    # Every installed state gets a new number: a request the gate allowed under
    # the same state needs no second match in process_request. The high bits
    # name this process, so numbers stored in requests of an earlier run
    # (JOBDIR) are recognised as such.
    _generations = itertools.count((_RUN << 32) + 1)

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


class RobotsTxtMiddleware:
    """Downloader middleware + request_scheduled gate; see the module docstring."""

    def __init__(self, crawler: Crawler, config: MiddlewareSettings, store: RobotsStore) -> None:
        self.crawler = crawler
        self._config = config
        self._limits: Limits = config.limits
        self._store = store
        self._stats: StatsCollector = crawler.stats
        self._fetcher = Fetcher(crawler)
        self._owner = uuid.uuid4().hex
        settings = crawler.settings
        self._fixed_tokens = configured_tokens(settings)
        self._default_tokens = crawler_tokens(settings, None)
        self._header_tokens: dict[bytes, tuple[str, ...]] = {}
        self._origins: dict[tuple[str, str], str | None] = {}
        self._cache: OrderedDict[str, _State] = OrderedDict()
        # Requests parked by the gate, per origin: (request, parked at).
        self._held: dict[str, list[tuple[Request, float]]] = {}
        # process_request calls waiting for an origin: (Deferred, since).
        self._waiting: dict[str, list[tuple[Deferred[_State], float]]] = {}
        # Origins being resolved, with the Deferreds waiting for that resolution.
        self._resolving: dict[str, list[Deferred[_State]]] = {}
        self._retry_calls: dict[str, Any] = {}
        self._expiry = task.LoopingCall(self._expire_held)
        self._closing = False
        self._store_down = False
        self._jobdir = settings.get("JOBDIR") or None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsTxtMiddleware:
        settings = crawler.settings
        if not settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured("ROBOTSTXT_OBEY is False")
        config = MiddlewareSettings.from_settings(settings)
        limits = config.limits
        store = store_from_settings(
            settings, keep_for=max(limits.stale_max_age, limits.unreachable_allow_after)
        )
        from scrapy_rep._checks import warn_about_tokens

        warn_about_tokens(crawler)
        middleware = cls(crawler, config, store)
        crawler.signals.connect(middleware._on_scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(middleware._on_idle, signal=signals.spider_idle)
        crawler.signals.connect(middleware._on_opened, signal=signals.spider_opened)
        crawler.signals.connect(middleware._on_closed, signal=signals.spider_closed)
        return middleware

    # -- the hot path ---------------------------------------------------------

    def _on_scheduled(self, request: Request, spider: Spider | None = None) -> None:
        """The gate: drop disallowed requests, hold those whose origin is unknown."""
        meta = request.meta
        if meta.get("dont_obey_robotstxt"):
            return
        origin = self._origin_of(request)
        if origin is None:
            return
        now = time.time()
        state = self._usable(origin, now)
        if state is None or state.serving.kind == "hold":
            self._hold(origin, request, now)
            raise IgnoreRequest("held until robots.txt is known")
        if state.serving.kind == "rules" and not self._allowed(state, request):
            self._stats.inc_value("robotstxt/forbidden_before_schedule")
            self._log_forbidden(state, request, "before scheduling")
            raise IgnoreRequest("Forbidden by robots.txt")
        meta[_GATED] = state.generation

    def process_request(
        self, request: Request, spider: Spider | None = None
    ) -> Coroutine[Any, Any, None] | Request | None:
        """The final gate, just before download."""
        if request.meta.get("dont_obey_robotstxt"):
            return None
        origin = self._origin_of(request)
        if origin is None:
            return None
        now = time.time()
        state = self._usable(origin, now)
        gated = request.meta.get(_GATED)
        if state is not None and state.serving.kind != "hold":
            if gated == state.generation:
                if state.crawl_delay is not None:
                    self._apply_crawl_delay(request, state.crawl_delay)
                return None
            self._check(state, request)
            return None
        if state is None and isinstance(gated, int) and gated >> 32 == _RUN:
            # The gate allowed it in this process and the origin's state was
            # evicted from the LRU since: nothing newer is known here.
            return None
        if gated is not None:
            # It passed the gate but its origin is not known any more (or not yet,
            # after a JOBDIR resume): back to the gate, which holds it without a
            # downloader slot. The dupefilter already saw it once.
            request.dont_filter = True
            del request.meta[_GATED]
            self._stats.inc_value("robotstxt/rescheduled")
            return request
        waiter: Deferred[_State] = Deferred()
        self._waiting.setdefault(origin, []).append((waiter, now))
        self._start_expiry()
        self._demand(origin, now)
        return self._check_later(waiter, request)

    async def _check_later(self, waiter: Deferred[_State], request: Request) -> None:
        state = await maybe_deferred_to_future(waiter)
        self._check(state, request)

    def _check(self, state: _State, request: Request) -> None:
        if state.crawl_delay is not None:
            self._apply_crawl_delay(request, state.crawl_delay)
        if state.serving.kind == "rules" and not self._allowed(state, request):
            self._stats.inc_value("robotstxt/forbidden")
            self._log_forbidden(state, request, "before download")
            raise IgnoreRequest("Forbidden by robots.txt")

    def _origin_of(self, request: Request) -> str | None:
        parts = urlparse_cached(request)
        key = (parts.scheme, parts.netloc)
        try:
            return self._origins[key]
        except KeyError:
            pass
        origin = origin_from_parts(parts)
        if len(self._origins) >= 65536:
            self._origins.clear()
        self._origins[key] = origin
        return origin

    def _tokens(self, request: Request) -> tuple[str, ...]:
        if self._fixed_tokens is not None:
            return self._fixed_tokens
        header = request.headers.get(b"User-Agent")
        if not header:
            return self._default_tokens
        tokens = self._header_tokens.get(header)
        if tokens is None:
            tokens = crawler_tokens(self.crawler.settings, header)
            if len(self._header_tokens) < 256:
                self._header_tokens[header] = tokens
        return tokens

    def _allowed(self, state: _State, request: Request) -> bool:
        assert state.robots is not None
        return state.robots.allowed(request.url, self._tokens(request))

    def _usable(self, origin: str, now: float) -> _State | None:
        """The origin's state if known in this process; starts a refresh when due."""
        state = self._cache.get(origin)
        if state is None:
            return None
        self._cache.move_to_end(origin)
        if now >= state.serving.valid_until:
            state = self._install(origin, state.entry, state.robots, now)
        if now >= state.serving.refresh_at and origin not in self._resolving:
            self._start(origin)
        return state

    def _log_forbidden(self, state: _State, request: Request, when: str) -> None:
        if not logger.isEnabledFor(logging.DEBUG):
            return
        assert state.robots is not None
        decision = state.robots.decide(request.url, self._tokens(request))
        rule = decision.rule
        where = ""
        if rule is not None:
            where = f"{'Allow' if rule.allow else 'Disallow'}: {rule.pattern} (line {rule.line})"
        logger.debug(
            "Forbidden by robots.txt %s: %s (%s; %s)",
            when,
            request,
            where,
            decision.reason,
            extra={"spider": self.crawler.spider},
        )

    def _apply_crawl_delay(self, request: Request, delay: float) -> None:
        # Any: the slot-key method changed name (and arguments) in Scrapy 2.12.
        downloader: Any = self.crawler.engine.downloader
        getter = getattr(downloader, "get_slot_key", None)
        if getter is not None:  # Scrapy >= 2.12
            key = getter(request)
        else:
            key = downloader._get_slot_key(request, self.crawler.spider)
        slot = downloader.slots.get(key)
        if slot is not None and slot.delay < delay:
            slot.delay = delay
            self._stats.inc_value("robotstxt/crawl_delay_applied")

    # -- holding --------------------------------------------------------------

    def _hold(self, origin: str, request: Request, now: float) -> None:
        self._held.setdefault(origin, []).append((request, now))
        self._stats.inc_value("robotstxt/held")
        self._start_expiry()
        self._demand(origin, now)

    def _demand(self, origin: str, now: float) -> None:
        """A request waits for ``origin``: fetch now, or when its backoff allows."""
        if origin in self._resolving or origin in self._retry_calls:
            return
        state = self._cache.get(origin)
        if state is None or now >= state.serving.refresh_at:
            self._start(origin)
        else:
            self._schedule_retry(origin, state.serving.refresh_at - now)

    def _release(self, origin: str) -> None:
        held = self._held.pop(origin, [])
        waiting = self._waiting.pop(origin, [])
        state = self._cache[origin]
        if held:
            self._stats.inc_value("robotstxt/released", len(held))
            engine = self.crawler.engine
            for request, _since in held:
                assert engine is not None
                engine.crawl(request)
        for waiter, _since in waiting:
            waiter.callback(state)

    def _start_expiry(self) -> None:
        if not self._expiry.running and not self._closing:
            interval = min(1.0, max(0.05, self._config.hold_timeout / 4))
            self._expiry.start(interval, now=False)

    def _expire_held(self) -> None:
        """Drop requests held longer than REP_HOLD_TIMEOUT (with a stat and a log line)."""
        deadline = time.time() - self._config.hold_timeout
        for requests in self._expire(self._held, deadline).values():
            for request in requests:
                logger.debug("Dropped %s: robots.txt of its origin unreachable", request)
        for origin, waiters in self._expire(self._waiting, deadline).items():
            for waiter in waiters:
                waiter.errback(IgnoreRequest(self._drop_reason(origin)))
        if not self._held and not self._waiting and self._expiry.running:
            self._expiry.stop()

    def _expire(
        self, table: dict[str, list[tuple[_T, float]]], deadline: float
    ) -> dict[str, list[_T]]:
        """Take the items waiting since before ``deadline`` out of ``table``, per origin
        (counted and logged as dropped)."""
        expired: dict[str, list[_T]] = {}
        for origin in list(table):
            kept = [(item, since) for item, since in table[origin] if since > deadline]
            gone = [item for item, since in table[origin] if since <= deadline]
            if not gone:
                continue
            self._log_dropped(origin, len(gone))
            if kept:
                table[origin] = kept
            else:
                del table[origin]
            expired[origin] = gone
        return expired

    def _drop_reason(self, origin: str) -> str:
        state = self._cache.get(origin)
        error = state.entry.error if state is not None else None
        return (
            f"robots.txt of {origin} could not be fetched within REP_HOLD_TIMEOUT="
            f"{self._config.hold_timeout:g}s ({error or 'no answer yet'})"
        )

    def _log_dropped(self, origin: str, count: int) -> None:
        self._stats.inc_value("robotstxt/held_dropped", count)
        logger.warning(
            "Dropped %d request(s) for %s: %s",
            count,
            origin,
            self._drop_reason(origin),
            extra={"spider": self.crawler.spider},
        )

    # -- resolving ------------------------------------------------------------

    def resolve(self, url: str) -> Deferred[OriginReport]:
        """Resolve the robots.txt of ``url``'s origin (one fetch at most) and report it."""
        origin = url_origin(url)
        if origin is None:
            raise ValueError(f"robots.txt does not apply to {url!r} (http, https and ftp only)")
        state = self._usable(origin, time.time())
        if state is None or state.serving.kind == "hold":
            self._start(origin)
        listeners = self._resolving.get(origin)
        if listeners is None:  # answered at once (known, or from the store)
            known = self._cache.get(origin)
            if known is None:
                return fail(RuntimeError(f"robots.txt of {origin} could not be resolved"))
            return succeed(known.report())
        listener: Deferred[_State] = Deferred()
        listeners.append(listener)
        return listener.addCallback(_State.report)

    def _start(self, origin: str) -> None:
        """Resolve ``origin`` unless that is already under way."""
        if origin in self._resolving:
            return
        call = self._retry_calls.pop(origin, None)
        if call is not None and call.active():
            call.cancel()
        self._resolving[origin] = []
        self._resolve(origin).addBoth(self._resolved, origin)

    def _resolved(self, result: Any, origin: str) -> None:
        listeners = self._resolving.pop(origin, [])
        if not isinstance(result, _State):
            logger.error(
                "Resolving robots.txt of %s failed: %s",
                origin,
                result,
                extra={"spider": self.crawler.spider},
            )
            for listener in listeners:
                listener.errback(result)
            if self._wanted(origin):
                self._schedule_retry(origin, self._limits.retry_delay)
            return
        state = result
        for listener in listeners:
            listener.callback(state)
        if self._closing:
            return
        if state.serving.kind != "hold":
            self._release(origin)
        elif self._wanted(origin):
            self._schedule_retry(origin, max(0.0, state.serving.refresh_at - time.time()))

    def _schedule_retry(self, origin: str, delay: float) -> None:
        if self._closing or origin in self._retry_calls:
            return
        self._retry_calls[origin] = _reactor().callLater(delay, self._retry, origin)

    def _retry(self, origin: str) -> None:
        self._retry_calls.pop(origin, None)
        if self._wanted(origin):
            self._start(origin)

    def _wanted(self, origin: str) -> bool:
        """Do requests (held by the gate, or waiting in process_request) wait for ``origin``?"""
        return bool(self._held.get(origin) or self._waiting.get(origin))

    @inlineCallbacks
    def _resolve(self, origin: str) -> Generator[Deferred[Any], Any, _State]:
        """The origin's state: from the store if fresh there, else fetched (one fetcher)."""
        stored, entry = yield self._load(origin)
        known = self._cache.get(origin)
        if entry is None and known is not None:
            # The store lost the entry or cannot answer: this process's copy counts.
            entry = known.entry
        now = time.time()
        if (
            stored is not None
            and entry is not None
            and now < serving(entry, now, self._limits).refresh_at
        ):
            self._stats.inc_value("robotstxt/store_hit")
            return self._from_store(origin, entry, stored, now)
        leased = yield self._lease(origin)
        while True:
            # Read again after every lease attempt, taken or not: another process may have
            # stored a newer answer and released its lease between our read and our attempt
            # (double-checked locking), and then fetching again would be a second fetch.
            latest, latest_entry = yield self._load(origin)
            if latest_entry is not None and (
                entry is None or latest_entry.fetched_at > entry.fetched_at
            ):
                if leased:
                    yield self._release_lease(origin)
                self._stats.inc_value("robotstxt/store_hit")
                return self._from_store(origin, latest_entry, latest, time.time())
            if leased:
                break
            if self._closing:
                raise IgnoreRequest("crawl closing")
            # Another process is fetching it: wait for its entry to appear, or for its
            # lease to lapse.
            yield task.deferLater(_reactor(), self._config.lease_poll_interval, lambda: None)
            leased = yield self._lease(origin)
        try:
            if entry is not None and entry.good is not None:
                self._stats.inc_value("robotstxt/refresh")
            fetch, body = yield self._fetcher.fetch(robots_url(origin))
            now = time.time()
            new = record(entry, fetch, now, self._limits)
            if fetch.outcome == "unreachable":
                body = stored.body if stored is not None and new.good is not None else None
            # A good copy known only in memory has no body to store with it.
            if not (new.good is not None and new.good.outcome == "ok" and body is None):
                entry_ = StoredRobots(new.to_meta(), body)
                yield self._guard(maybeDeferred(self._store.put, origin, entry_), None)
        finally:
            yield self._release_lease(origin)
        previous = self._cache.get(origin)
        robots = self._parse(new, body, previous)
        state = self._install(origin, new, robots, now)
        self._announce(origin, state, previous)
        return state

    def _load(self, origin: str) -> Deferred[tuple[StoredRobots | None, Entry | None]]:
        def parse(stored: StoredRobots | None) -> tuple[StoredRobots | None, Entry | None]:
            if stored is None:
                return None, None
            return stored, Entry.from_meta(stored.meta)

        return self._guard(maybeDeferred(self._store.get, origin), None).addCallback(parse)

    def _lease(self, origin: str) -> Deferred[bool]:
        # A store that cannot answer must not stop the crawl: fetch ourselves.
        call = maybeDeferred(self._store.acquire_lease, origin, self._owner, self._config.lease_ttl)
        return self._guard(call, True)

    def _release_lease(self, origin: str) -> Deferred[None]:
        return self._guard(maybeDeferred(self._store.release_lease, origin, self._owner), None)

    def _guard(self, call: Deferred[_T], default: _T) -> Deferred[_T]:
        """``call``'s result, or ``default`` when the store fails (warned once per outage)."""

        def succeeded(result: _T) -> _T:
            if self._store_down:
                self._store_down = False
                logger.info("robots.txt store is available again")
            return result

        def failed(failure: Failure) -> _T:
            self._stats.inc_value("robotstxt/store_error")
            if not self._store_down:
                self._store_down = True
                logger.warning(
                    "robots.txt store unavailable (%s): going on with this process's own "
                    "state until it answers again",
                    failure.getErrorMessage(),
                    extra={"spider": self.crawler.spider},
                )
            return default

        return call.addCallbacks(succeeded, failed)

    def _from_store(
        self, origin: str, entry: Entry, stored: StoredRobots | None, now: float
    ) -> _State:
        previous = self._cache.get(origin)
        body = stored.body if stored is not None else None
        state = self._install(origin, entry, self._parse(entry, body, previous), now)
        if previous is None or previous.entry.fetched_at != entry.fetched_at:
            self._announce(origin, state, previous)
        return state

    def _parse(self, entry: Entry, body: bytes | None, previous: _State | None) -> RobotsTxt | None:
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

    def _install(self, origin: str, entry: Entry, robots: RobotsTxt | None, now: float) -> _State:
        """Put the origin's state into the LRU (evicting the least recently used)."""
        decision = serving(entry, now, self._limits)
        delay = None
        if self._config.crawl_delay and robots is not None and decision.kind == "rules":
            delay = robots.crawl_delay(self._default_tokens)
        state = _State(origin, entry, robots, decision, delay)
        self._cache[origin] = state
        self._cache.move_to_end(origin)
        while len(self._cache) > self._config.parsed_cache_size:
            self._cache.popitem(last=False)
        return state

    def _announce(self, origin: str, state: _State, previous: _State | None) -> None:
        """Log (and signal) a freshly resolved robots.txt."""
        entry, decision = state.entry, state.serving
        spider = self.crawler.spider
        failing = entry.outcome == "unreachable"
        was_failing = previous is not None and previous.entry.outcome == "unreachable"
        if failing and not was_failing:
            self._stats.inc_value("robotstxt/unreachable")
            logger.warning(
                "robots.txt of %s is unreachable (%s): %s",
                origin,
                entry.error,
                "serving the last good copy"
                if decision.stale and decision.kind != "hold"
                else "holding its requests"
                if decision.kind == "hold"
                else "unreachable too long, assuming no restrictions",
                extra={"spider": spider},
            )
        elif was_failing and not failing:
            self._stats.inc_value("robotstxt/recovered")
            logger.warning("robots.txt of %s is reachable again", origin, extra={"spider": spider})
        if failing and decision.stale:
            self._stats.inc_value("robotstxt/stale_served")
        lifetime = decision.refresh_at - time.time()
        logger.info(
            "robots.txt of %s: %s (%s, %d rules%s%s%s), next fetch in %s",
            origin,
            decision.outcome,
            entry.error if failing and entry.error else f"status {entry.status}",
            state.robots.rule_count if state.robots is not None else 0,
            f", {len(entry.redirects)} redirects" if entry.redirects else "",
            ", truncated" if entry.truncated else "",
            ", serving the last good copy" if failing and decision.stale else "",
            _duration(lifetime),
            extra={"spider": spider},
        )
        if state.robots is not None and (previous is None or previous.robots is not state.robots):
            self._send_parsed(origin, state.robots)

    def _send_parsed(self, origin: str, robots: RobotsTxt) -> None:
        signal = getattr(signals, "robots_parsed", None)
        if signal is None:  # Scrapy < 2.12 has no such signal
            return
        from scrapy_rep.adapter import RobotParser

        parser = RobotParser(b"", self._fixed_tokens)
        parser.robots = robots
        self.crawler.signals.send_catch_log(
            signal=signal, robotparser=parser, request=Request(robots_url(origin))
        )

    # -- crawl lifecycle ------------------------------------------------------

    def _on_idle(self, spider: Spider | None = None) -> None:
        if self._held or self._waiting or self._resolving:
            raise DontCloseSpider

    def _on_opened(self, spider: Spider) -> None:
        if self._jobdir is None:
            return
        path = Path(self._jobdir) / HELD_FILE
        if not path.exists():
            return
        with path.open("rb") as file:
            saved = pickle.load(file)  # our own JOBDIR file, as Scrapy's disk queues
        path.unlink()
        requests = []
        for data in saved:
            try:
                requests.append(request_from_dict(pickle.loads(data), spider=spider))
            except Exception as exc:  # e.g. its callback no longer exists on the spider
                self._stats.inc_value("robotstxt/held_dropped_on_close")
                logger.warning(
                    "A request held for robots.txt when the job stopped cannot be restored: %s",
                    exc,
                    extra={"spider": spider},
                )
        self._stats.inc_value("robotstxt/held_restored", len(requests))
        logger.info(
            "Resuming %d request(s) held for robots.txt when the job stopped",
            len(requests),
            extra={"spider": spider},
        )
        _reactor().callLater(0, self._reinject, requests)

    def _reinject(self, requests: list[Request]) -> None:
        engine = self.crawler.engine
        assert engine is not None
        for request in requests:
            engine.crawl(request)

    async def _on_closed(self, spider: Spider, reason: str = "") -> None:
        self._closing = True
        if self._expiry.running:
            self._expiry.stop()
        for call in self._retry_calls.values():
            if call.active():
                call.cancel()
        self._retry_calls.clear()
        held = [request for items in self._held.values() for request, _since in items]
        self._held.clear()
        if held:
            self._save_held(held, spider)
        await maybe_deferred_to_future(self._guard(maybeDeferred(self._store.close), None))

    def _save_held(self, held: list[Request], spider: Spider) -> None:
        saved: list[bytes] = []
        lost = 0
        if self._jobdir is not None:
            for request in held:
                try:
                    saved.append(pickle.dumps(request.to_dict(spider=spider), protocol=4))
                except Exception as exc:  # as Scrapy's disk queues: not serialisable
                    lost += 1
                    logger.warning(
                        "Held request %s cannot be saved to JOBDIR: %s",
                        request,
                        exc,
                        extra={"spider": spider},
                    )
        else:
            lost = len(held)
        if lost:
            self._stats.inc_value("robotstxt/held_dropped_on_close", lost)
            logger.warning(
                "Crawl closed with %d request(s) held for robots.txt; they were not downloaded%s",
                lost,
                "" if self._jobdir else " (set JOBDIR to resume them with the job)",
                extra={"spider": spider},
            )
        if not saved:
            return
        path = Path(self._jobdir or ".") / HELD_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as file:
            pickle.dump(saved, file, protocol=4)
        self._stats.inc_value("robotstxt/held_persisted", len(saved))
        logger.info(
            "Saved %d request(s) held for robots.txt to %s; they resume with the job",
            len(saved),
            path,
            extra={"spider": spider},
        )


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


def _duration(seconds: float) -> str:
    if math.isinf(seconds):
        return "never"
    if seconds >= 3600:
        return f"{seconds / 3600:.3g}h"
    if seconds >= 60:
        return f"{seconds / 60:.3g}m"
    return f"{max(seconds, 0.0):.3g}s"

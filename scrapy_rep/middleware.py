"""``RobotsTxtMiddleware``: Google's robots.txt rules for a Scrapy crawl, without stalls.

Enable with ``ADDONS = {"scrapy_rep.Addon": 0}``, or by hand: ``ROBOTSTXT_OBEY = True`` and, in
DOWNLOADER_MIDDLEWARES, Scrapy's robots.txt middleware set to None,
``"scrapy_rep.RobotsTxtMiddleware": 100`` and ``"scrapy_rep.RobotsTxtGuard": 950``.

The façade wiring the parts to Scrapy (README "How it is built"); each part has one job and
takes its time from the clock it is given: ``_cache`` (known origins, LRU), ``_resolver``
(store, lease, fetch, retries; the one place deciding "fetch now?"), ``_holds`` (requests
waiting for robots.txt), ``_held`` (where held requests live: memory, JOBDIR, the fleet's
Redis), ``_events`` (stats and log lines), ``_compat`` (Scrapy-version differences),
``_settings`` (every REP_* setting).

How a request travels:

- **Gate** (``request_scheduled`` handler). Origin (SPEC B1) known: a disallowed request is
  dropped before it reaches the scheduler (``IgnoreRequest``). Origin unknown or unreachable:
  the request is *held* outside scheduler and downloader (no slot taken, so one slow
  robots.txt cannot stall other origins) and sent to ``engine.crawl`` again once its
  robots.txt is answered, to pass the gate once more. Held requests have not been seen by
  the dupefilter yet.
- **Final gate** (``process_request``): robots.txt may have changed since the request was
  scheduled; requests that never were scheduled (``engine.download`` callers) and requests
  another fleet process (or an earlier run) allowed are checked here too, waiting for an
  unknown origin outside ``Downloader.active``. On Scrapy >= 2.14 it is ``async def`` like
  Scrapy's own; before, it returns None or a Deferred like Scrapy's own.

Public API for tools (``scrapy robots``) and subclasses: ``middleware.resolve(url) ->
Deferred[OriginReport]`` and, as Scrapy's middleware has, ``robot_parser(request)``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest, NotConfigured
from scrapy.http import Request
from scrapy.settings import default_settings
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import load_object
from scrapy.utils.request import fingerprint as _scrapy_fingerprint
from twisted.internet.defer import Deferred, maybeDeferred

from scrapy_rep import _compat
from scrapy_rep._cache import RUN, OriginCache, OriginKeys, OriginReport, OriginState
from scrapy_rep._checks import settings_tokens
from scrapy_rep._events import (
    CRAWL_DELAY_APPLIED,
    FORBIDDEN_BEFORE_DOWNLOAD,
    FORBIDDEN_BEFORE_SCHEDULE,
    FORBIDDEN_DUPLICATE,
    RESCHEDULED,
    Events,
)
from scrapy_rep._fetch import Fetcher
from scrapy_rep._held import open_held
from scrapy_rep._holds import Holds
from scrapy_rep._origin import origin as url_origin
from scrapy_rep._resolver import Resolver
from scrapy_rep._seen import SeenFingerprints
from scrapy_rep._settings import MiddlewareSettings
from scrapy_rep.adapter import RobotParser
from scrapy_rep.robotstxt import RobotsTxt
from scrapy_rep.store import RobotsStore
from scrapy_rep.store._open import open_configured

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

    from scrapy_rep._clock import Clock

__all__ = ["OriginReport", "RobotsTxtMiddleware"]

#: Meta key set on requests the gate let through to the scheduler: the generation of the
#: origin state that allowed them (see ``OriginState.generation``).
_GATED = "_robotstxt_gated"
#: The parser ROBOTSTXT_PARSER may name with this middleware (the add-on sets it).
_PARSER = "scrapy_rep.RobotParser"
#: Rules that allow nothing: what an unreachable origin's requests get for now (SPEC B2).
_DISALLOW_ALL = RobotsTxt.parse(b"User-agent: *\nDisallow: /\n")


class RobotsTxtMiddleware:
    """Downloader middleware + request_scheduled gate; see the module docstring."""

    def __init__(
        self,
        crawler: Crawler,
        config: MiddlewareSettings,
        store: RobotsStore,
        clock: Clock | None = None,
    ) -> None:
        if clock is None:
            from twisted.internet import reactor as clock
        assert clock is not None
        self.crawler = crawler
        self._clock = clock
        self._store = store
        # REP_USER_AGENTS > ROBOTSTXT_USER_AGENT > User-Agent (SPEC C1, C2), decided in one place.
        self._tokens = settings_tokens(crawler.settings, crawler)
        self._keys = OriginKeys()
        self._events = Events(crawler.stats, lambda: crawler.spider)
        # Disallowed requests counted and logged already (the gate runs before the dupefilter).
        self._reported = SeenFingerprints()
        fingerprinter = getattr(crawler, "request_fingerprinter", None)
        self._fingerprint: Callable[[Request], bytes] = (
            fingerprinter.fingerprint if fingerprinter is not None else _scrapy_fingerprint
        )
        # Origins whose waiting requests were announced (``_holding``), until answered.
        self._hold_announced: set[str] = set()
        crawl_delay = self._crawl_delay_of if config.crawl_delay else None
        self._cache = OriginCache(config.limits, config.parsed_cache_size, crawl_delay)
        self._config = config
        self._hold_timeout = config.hold_timeout
        self._holds = Holds(
            clock=clock,
            events=self._events,
            hold_timeout=config.hold_timeout,
            crawl=self._crawl,
            drop_reason=self._drop_reason,
            close_requested=lambda: _compat.close_requested(crawler.engine),
            on_close_requested=self._let_go,
        )
        self._resolver = Resolver(
            clock=clock,
            store=store,
            fetcher=Fetcher(crawler),
            cache=self._cache,
            events=self._events,
            limits=config.limits,
            lease_ttl=config.lease_ttl,
            lease_poll_interval=config.lease_poll_interval,
            owner=uuid.uuid4().hex,
            wanted=self._holds.wanted,
            resolved=self._holds.release,
            announce=self._announce,
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsTxtMiddleware:
        settings = crawler.settings
        if not settings.getbool("ROBOTSTXT_OBEY"):
            # No message, as Scrapy's own middleware: Scrapy logs "Disabled …" at WARNING for a
            # NotConfigured with one, on every run of a project that does not obey robots.txt.
            raise NotConfigured
        _check_parser_setting(settings.get("ROBOTSTXT_PARSER"))
        config = MiddlewareSettings.from_settings(settings)
        store = open_configured(config.store)
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
        origin = self._keys.origin(urlparse_cached(request))
        if origin is None:
            return
        state = self._resolver.state(origin, self._clock.seconds(), request)
        if state is None or state.serving.kind == "hold":
            self._holds.hold(origin, request)
            self._waits(origin, state, request)
            raise IgnoreRequest("held until robots.txt is known")
        if state.serving.kind == "rules" and not self._allowed(state, request):
            # Like the dupefilter this gate runs before: a request seen before is not counted
            # or logged again (issue 11.3), unless it would pass the dupefilter (dont_filter).
            if request.dont_filter or self._reported.add(self._fingerprint(request)):
                self._events.forbidden(
                    FORBIDDEN_BEFORE_SCHEDULE, request, lambda: self._explain(state, request)
                )
            else:
                self._events.count(FORBIDDEN_DUPLICATE)
            raise IgnoreRequest("Forbidden by robots.txt")
        meta[_GATED] = state.generation

    if _compat.ASYNC_MIDDLEWARE:

        async def process_request(
            self, request: Request, spider: Spider | None = None
        ) -> Request | None:
            """The final gate, just before download (awaitable, as Scrapy >= 2.14's own)."""
            result = self._final_gate(request)
            if result is None or isinstance(result, Request):
                return result
            await result
            return None

    else:

        def process_request(  # type: ignore[misc]
            self, request: Request, spider: Spider | None = None
        ) -> Deferred[None] | Request | None:
            """The final gate, just before download (None or a Deferred, as Scrapy 2.11's own)."""
            result = self._final_gate(request)
            if result is None or isinstance(result, Request):
                return result
            waited: Deferred[None] = deferred_from_coro(result)
            return waited

    def _final_gate(self, request: Request) -> Coroutine[Any, Any, None] | Request | None:
        """None (download it), a Request (to the gate again), or a wait for robots.txt."""
        if request.meta.get("dont_obey_robotstxt"):
            return None
        origin = self._keys.origin(urlparse_cached(request))
        if origin is None:
            return None
        state = self._resolver.state(origin, self._clock.seconds(), request)
        gated = request.meta.get(_GATED)
        if state is not None and state.serving.kind != "hold":
            if gated == state.generation:
                if state.crawl_delay is not None:
                    self._apply_crawl_delay(request, state.crawl_delay)
                return None
            self._check(state, request)
            return None
        if state is None and isinstance(gated, int) and gated >> 32 == RUN:
            # The gate allowed it in this process and the origin's state was evicted from the
            # LRU since: nothing newer is known here.
            return None
        if gated is not None and state is not None:
            # It passed the gate, and its origin became unknown or unreachable since: back to
            # the gate, which holds it (durably) without a downloader slot. The dupefilter
            # already saw it once.
            request.dont_filter = True
            del request.meta[_GATED]
            self._events.count(RESCHEDULED)
            return request
        # Not known here: an engine.download caller, or a request another fleet process (or
        # an earlier run of this JOBDIR) allowed. It waits off Downloader.active while the
        # resolver reads the shared store (a fetch only if the store has nothing), rather than
        # going through this process's gate and the queue again.
        waiter = self._holds.wait(origin)
        self._waits(origin, state, request)
        return self._check_later(waiter, request)

    def _waits(self, origin: str, state: OriginState | None, request: Request) -> None:
        """``request`` waits for ``origin``'s robots.txt: fetch it, say why it waits (once)."""
        self._resolver.demand(origin, request)
        if state is not None:
            self._holding(state)

    def _holding(self, state: OriginState) -> None:
        # One line per origin while it stays unreachable (issue 11.2), not one per request;
        # an origin still being fetched for the first time is not announced (the usual case).
        if state.origin not in self._hold_announced:
            self._hold_announced.add(state.origin)
            self._events.holding(state, self._clock.seconds(), self._hold_timeout)

    async def _check_later(self, waiter: Deferred[OriginState], request: Request) -> None:
        # Waiting for robots.txt is not downloading: give the CONCURRENT_REQUESTS place back
        # meanwhile, so an engine.download caller cannot stall other origins.
        engine = self.crawler.engine
        left = _compat.leave_active(engine, request)
        try:
            state = await maybe_deferred_to_future(waiter)
        finally:
            if left:
                _compat.rejoin_active(engine, request)
        self._check(state, request)

    def _check(self, state: OriginState, request: Request) -> None:
        if state.crawl_delay is not None:
            self._apply_crawl_delay(request, state.crawl_delay)
        if state.serving.kind == "rules" and not self._allowed(state, request):
            self._events.forbidden(
                FORBIDDEN_BEFORE_DOWNLOAD, request, lambda: self._explain(state, request)
            )
            raise IgnoreRequest("Forbidden by robots.txt")

    def _allowed(self, state: OriginState, request: Request) -> bool:
        assert state.robots is not None
        return state.robots.allowed(request.url, self._tokens.for_header(_user_agent(request)))

    def _explain(self, state: OriginState, request: Request) -> tuple[str, str]:
        assert state.robots is not None
        decision = state.robots.decide(request.url, self._tokens.for_header(_user_agent(request)))
        rule = decision.rule
        where = ""
        if rule is not None:
            where = f"{'Allow' if rule.allow else 'Disallow'}: {rule.pattern} (line {rule.line})"
        return where, decision.reason

    def _crawl_delay_of(self, robots: RobotsTxt) -> float | None:
        return robots.crawl_delay(self._tokens.default)

    def _apply_crawl_delay(self, request: Request, delay: float) -> None:
        slot = _compat.downloader_slot(self.crawler.engine, request)
        if slot is not None and slot.delay < delay:
            slot.delay = delay
            self._events.count(CRAWL_DELAY_APPLIED)

    # -- wiring the parts -----------------------------------------------------

    def resolve(self, url: str) -> Deferred[OriginReport]:
        """Resolve the robots.txt of ``url``'s origin (one fetch at most) and report it."""
        origin = url_origin(url)
        if origin is None:
            raise ValueError(f"robots.txt does not apply to {url!r} (http, https and ftp only)")
        return self._resolver.report(origin, Request(url))

    async def robot_parser(
        self, request: Request, spider: Spider | None = None
    ) -> RobotParser | None:
        """The parser for ``request``'s origin, as Scrapy's middleware has it (see README).

        ``async def`` on every Scrapy version (Scrapy's own is from 2.14): awaitable alike
        from any coroutine, whatever the reactor. It resolves robots.txt as ``resolve`` does
        (one fetch at most) and wraps the rules in Scrapy's RobotParser interface.

        None when the origin has no rules to match (no robots.txt, data:/file: URLs, unreachable
        for longer than REP_UNREACHABLE_ALLOW_AFTER); an unreachable origin without a good copy
        gives a parser that allows nothing, which is how the middleware treats its requests for
        now (SPEC B2: they wait instead of being dropped).
        """
        origin = self._keys.origin(urlparse_cached(request))
        if origin is None:
            return None
        report = await maybe_deferred_to_future(self._resolver.report(origin, request))
        if report.robots is not None:
            return self._parser(report.robots)
        if report.outcome == "unreachable":
            return self._parser(_DISALLOW_ALL)
        return None

    def _crawl(self, request: Request) -> None:
        engine = self.crawler.engine
        assert engine is not None
        engine.crawl(request)

    def _drop_reason(self, origin: str) -> str:
        state = self._cache.peek(origin)
        error = state.entry.error if state is not None else None
        return (
            f"robots.txt of {origin} could not be fetched within REP_HOLD_TIMEOUT="
            f"{self._hold_timeout:g}s ({error or 'no answer yet'})"
        )

    def _announce(
        self,
        state: OriginState,
        previous: OriginState | None,
        now: float,
        trigger: Request | None,
        from_store: bool,
    ) -> None:
        """Log a new state; send ``robots_parsed`` for new rules."""
        waiting = state.serving.kind == "hold" and self._holds.wanted(state.origin)
        self._events.resolved(state, previous, now, from_store=from_store, waiting=waiting)
        if state.serving.kind != "hold":
            self._hold_announced.discard(state.origin)
        elif waiting:
            self._holding(state)
        if state.robots is None or (previous is not None and previous.robots is state.robots):
            return
        # As Scrapy's own middleware: async handlers run, with the request whose robots.txt
        # this is. Unlike Scrapy's, the origin's requests do not wait for the handlers: the
        # state must serve the moment it is installed (an LRU of one evicts it otherwise).
        _compat.send_robots_parsed(
            self.crawler.signals, robotparser=self._parser(state.robots), request=trigger
        )

    def _parser(self, robots: RobotsTxt) -> RobotParser:
        """``robots`` behind Scrapy's RobotParser interface, obeying as this crawler's tokens."""
        parser = RobotParser(b"", self._tokens)
        parser.robots = robots
        return parser

    # -- crawl lifecycle ------------------------------------------------------

    def _on_idle(self, spider: Spider | None = None) -> None:
        # Nothing else to do: stop waiting for origins that keep failing (REP_GIVE_UP_AFTER).
        self._holds.give_up(self._resolver.given_up)
        # pending_elsewhere: another fleet process holds requests that come here if it dies.
        if self._holds.busy() or self._resolver.busy() or self._holds.pending_elsewhere():
            raise DontCloseSpider

    def _on_opened(self, spider: Spider) -> None:
        held = open_held(
            self.crawler,
            spider,
            clock=self._clock,
            on_adopted=self._holds.adopted,
            config=self._config,
        )
        self._holds.open(held)

    def _let_go(self) -> None:
        """The crawl is closing: no more fetches, and every waiting request is let go now."""
        self._resolver.close()
        self._holds.let_go()

    async def _on_closed(self, spider: Spider, reason: str = "") -> None:
        self._let_go()
        closed = maybeDeferred(self._store.close)
        closed.addErrback(lambda failure: self._events.store_failed(failure.getErrorMessage()))
        await maybe_deferred_to_future(closed)


def _user_agent(request: Request) -> bytes | None:
    return request.headers.get(b"User-Agent")


def _check_parser_setting(value: object) -> None:
    """Refuse a ROBOTSTXT_PARSER this middleware would not use (issue 10.6).

    The middleware matches with Google's rules itself (``RobotsTxt``: tokens, Crawl-delay,
    explanations, the store); another parser could only be honoured by giving all of that up,
    so a setting naming one is a mistake to be told about rather than silently ignored.
    Scrapy's default (Protego) is the value of a project that never set it: accepted.
    """
    if value is None or value == default_settings.ROBOTSTXT_PARSER:
        return
    try:
        parser = load_object(value) if isinstance(value, str) else value
    except (ImportError, NameError, ValueError, AttributeError):
        parser = None
    if isinstance(parser, type) and issubclass(parser, RobotParser):
        return
    raise ValueError(
        f"ROBOTSTXT_PARSER={value!r} is not used by scrapy_rep.RobotsTxtMiddleware, which "
        f"applies Google's rules itself: remove the setting or set it to {_PARSER!r} (or, to "
        "use that parser, remove scrapy_rep's middleware and the add-on and enable Scrapy's "
        "own RobotsTxtMiddleware)"
    )

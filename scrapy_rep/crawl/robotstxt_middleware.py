"""``RobotsTxtMiddleware``: Google's robots.txt rules for a Scrapy crawl, without stalls.

Enable with ``ADDONS = {"scrapy_rep.Addon": 0}``, or by hand: ``ROBOTSTXT_OBEY = True`` and, in
DOWNLOADER_MIDDLEWARES, Scrapy's robots.txt middleware set to None,
``"scrapy_rep.RobotsTxtMiddleware": 100`` and ``"scrapy_rep.RobotsTxtGuard": 950``.

The façade wiring the parts to Scrapy (README "How it is built"); each part has one job and
takes its time from the clock it is given: ``_cache`` (known origins, LRU), ``_resolver``
(store, lease, fetch, retries; the one place deciding "fetch now?"), ``_holds`` (requests
waiting for robots.txt), ``_held`` (where held requests live: memory, JOBDIR, the fleet's
Redis), ``_verdict`` (what known rules say of a request), ``_events`` (stats and log lines),
``_compat`` (Scrapy-version differences), ``_settings`` (every setting, checked).

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
  unknown origin outside ``Downloader.active``.

Public API for tools (``scrapy robots``) and subclasses: ``middleware.resolve(url) ->
Deferred[OriginReport]`` and, as Scrapy's middleware has, ``robot_parser(request)``.
"""

from __future__ import annotations

import uuid
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest, NotConfigured
from scrapy.http import Request
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred, maybeDeferred, succeed

from scrapy_rep.core.origin import origin as url_origin
from scrapy_rep.core.robots_file import RobotsTxt
from scrapy_rep.core.tdmrep import TdmFile, TdmRule
from scrapy_rep.core.usage import NO_PREFERENCE, UsagePrefs
from scrapy_rep.crawl import _compat
from scrapy_rep.crawl._cache import RUN, OriginCache, OriginKeys, OriginReport, OriginState
from scrapy_rep.crawl._checks import settings_tokens
from scrapy_rep.crawl._events import RESCHEDULED, Events, hold_timeout_reason
from scrapy_rep.crawl._fetch import Fetcher
from scrapy_rep.crawl._resolver import Resolver
from scrapy_rep.crawl._settings import MiddlewareSettings
from scrapy_rep.crawl._tdm import TdmFiles
from scrapy_rep.crawl._verdict import Verdicts
from scrapy_rep.crawl._waiting import Holds
from scrapy_rep.crawl.robot_parser import RobotParser
from scrapy_rep.crawl.start_intake_middleware import Intake
from scrapy_rep.storage.held import open_held
from scrapy_rep.storage.results import RobotsStore
from scrapy_rep.storage.results._open import open_configured

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

    from scrapy_rep.core.clock import Clock

__all__ = ["OriginReport", "RobotsTxtMiddleware"]

#: Meta key set on requests the gate let through to the scheduler: the generation of the
#: origin state that allowed them (see ``OriginState.generation``).
_GATED = "_robotstxt_gated"
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
        self._keys = OriginKeys()
        self._events = Events(crawler.stats, lambda: crawler.spider)
        # REP_USER_AGENTS > ROBOTSTXT_USER_AGENT > User-Agent (SPEC C1, C2), decided in one place.
        tokens = settings_tokens(crawler.settings, crawler)
        self._verdicts = Verdicts(crawler, tokens, self._events, config.purpose)
        crawl_delay = self._verdicts.crawl_delay_of if config.crawl_delay else None
        self._cache = OriginCache(config.limits, config.parsed_cache_size, crawl_delay)
        self._config = config
        self._hold_timeout = config.hold_timeout
        # Start requests wait while CONCURRENT_REQUESTS origins are being resolved
        # (StartIntakeMiddleware): a held request takes no downloader place to back out on.
        self.intake = Intake(crawler.settings.getint("CONCURRENT_REQUESTS"))
        self._holds = Holds(
            clock=clock,
            events=self._events,
            hold_timeout=config.hold_timeout,
            crawl=self._crawl,
            drop_reason=self._drop_reason,
            close_requested=lambda: _compat.close_requested(crawler.engine),
            on_close_requested=self._let_go,
            on_emptied=lambda: _compat.wake(crawler.engine),
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
            intake=self.intake,
        )
        # The gate waits for tdmrep.json only when a declared purpose is one a TDM
        # reservation speaks for; otherwise it is never fetched (``tdm_file`` aside).
        self._gate_tdm = config.purpose.needs_tdm
        self._tdm = TdmFiles(
            clock=clock,
            store=store,
            fetcher=Fetcher(crawler, "tdmrep.json", "tdmrep"),
            limits=config.limits,
            resolved=self._holds.resend,
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsTxtMiddleware:
        settings = crawler.settings
        if not settings.getbool("ROBOTSTXT_OBEY"):
            # No message, as Scrapy's own middleware: Scrapy logs "Disabled …" at WARNING for a
            # NotConfigured with one, on every run of a project that does not obey robots.txt.
            raise NotConfigured
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
        tdm = None
        if self._gate_tdm:
            tdm = self._tdm.get(origin)
            if tdm is None and self._verdicts.crawlable(state, request):
                # The declared purpose needs the origin's TDM reservation: wait for it too.
                self._holds.hold(origin, request)
                self._tdm.demand(origin)
                raise IgnoreRequest("held until tdmrep.json is known")
        self._verdicts.at_gate(state, request, tdm)
        meta[_GATED] = state.generation

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
                    self._verdicts.apply_crawl_delay(request, state.crawl_delay)
                return None
            if self._gate_tdm and self._tdm.get(origin) is None:
                return self._check_later(succeed(state), request)
            self._verdicts.at_download(state, request, self._tdm_of(origin))
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

    #: The final gate, just before download (``async def`` on Scrapy >= 2.14, as its own).
    process_request = _compat.process_request(_final_gate)

    def _waits(self, origin: str, state: OriginState | None, request: Request) -> None:
        """``request`` waits for ``origin``'s robots.txt: fetch it, say why it waits (once)."""
        self._resolver.demand(origin, request)
        # An origin still being fetched for the first time is not announced (the usual case).
        if state is not None:
            self._events.holding(state, self._clock.seconds(), self._hold_timeout)

    async def _check_later(self, waiter: Deferred[OriginState], request: Request) -> None:
        # Waiting for robots.txt is not downloading: give the CONCURRENT_REQUESTS place back
        # meanwhile, so an engine.download caller cannot stall other origins.
        engine = self.crawler.engine
        left = _compat.leave_active(engine, request)
        try:
            state = await maybe_deferred_to_future(waiter)
            tdm = None
            if self._gate_tdm:
                tdm = await maybe_deferred_to_future(self._tdm.known(state.origin))
        finally:
            if left:
                _compat.rejoin_active(engine, request)
        self._verdicts.at_download(state, request, tdm)

    def _tdm_of(self, origin: str) -> TdmFile | None:
        return self._tdm.get(origin) if self._gate_tdm else None

    def tdm_file(self, url: str) -> Deferred[TdmFile]:
        """The tdmrep.json of ``url``'s origin, fetched once as the gate fetches it (the
        explain command); no rules when robots.txt does not apply to ``url``."""
        origin = url_origin(url)
        if origin is None:
            return succeed(TdmFile(()))
        return self._tdm.known(origin)

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
            return self._verdicts.parser(report.robots)
        if report.outcome == "unreachable":
            return self._verdicts.parser(_DISALLOW_ALL)
        return None

    def usage_sources(self, request: Request) -> tuple[UsagePrefs, TdmRule | None]:
        """For the page level: what the crawl's robots.txt states of ``request``'s URL (no
        preference while its origin is not known here), and the tdmrep.json rule that applies
        to it (None when there is none, or when no purpose needs the file)."""
        origin = self._keys.origin(urlparse_cached(request))
        if origin is None:
            return NO_PREFERENCE, None
        prefs = self._verdicts.usage(self._cache.peek(origin), request, None)
        tdm = self._tdm_of(origin)
        return prefs, tdm.reservation(request.url) if tdm is not None else None

    def _crawl(self, request: Request) -> None:
        engine = self.crawler.engine
        assert engine is not None
        engine.crawl(request)

    def _drop_reason(self, origin: str) -> str:
        state = self._cache.peek(origin)
        error = state.entry.error if state is not None else None
        return hold_timeout_reason(self._hold_timeout, error)

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
        if waiting:
            self._events.holding(state, now, self._hold_timeout)
        if state.robots is None or (previous is not None and previous.robots is state.robots):
            return
        # As Scrapy's own middleware: async handlers run, with the request whose robots.txt
        # this is. Unlike Scrapy's, the origin's requests do not wait for the handlers: the
        # state must serve the moment it is installed (an LRU of one evicts it otherwise).
        _compat.send_robots_parsed(
            self.crawler.signals, robotparser=self._verdicts.parser(state.robots), request=trigger
        )

    # -- crawl lifecycle ------------------------------------------------------

    def _on_idle(self, spider: Spider | None = None) -> None:
        # Nothing else to do: stop waiting for origins that keep failing (REP_GIVE_UP_AFTER).
        self._holds.give_up(self._resolver.given_up)
        # pending_elsewhere: another fleet process holds requests that come here if it dies.
        if (
            self._holds.busy()
            or self._resolver.busy()
            or self._tdm.busy()
            or self._holds.pending_elsewhere()
        ):
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
        self._tdm.close()
        self._holds.let_go()
        self.intake.let_go()

    async def _on_closed(self, spider: Spider, reason: str = "") -> None:
        self._let_go()
        closed = maybeDeferred(self._store.close)
        closed.addErrback(lambda failure: self._events.store_failed(failure.getErrorMessage()))
        await maybe_deferred_to_future(closed)

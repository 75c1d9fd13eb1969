"""``RobotsTxtMiddleware``: Google's robots.txt rules for a Scrapy crawl, without stalls.

Enable with ``ADDONS = {"scrapy_rep.Addon": 0}``, or by hand: ``ROBOTSTXT_OBEY = True`` and, in
DOWNLOADER_MIDDLEWARES, Scrapy's robots.txt middleware set to None,
``"scrapy_rep.RobotsTxtMiddleware": 100`` and ``"scrapy_rep.RobotsTxtGuard": 950``.

It builds the crawl's components and connects them to Scrapy's signals and downloader, and is
two adapters over the one decision (``_admission.Admission``): the gate
(``request_scheduled``, before the scheduler: drop, hold or go) and the final gate
(``process_request``: go, drop, wait in the room (``_room.Room``, off ``Downloader.active``), or
back to the gate to be held). A spider's own request for an origin's robots.txt is answered from
the crawl's copy (``COPY_FLAG``, not stored by the HTTP cache). How a request travels:
docs/design.md.

The components are wired in one place, ``build_components``: what the middleware runs on, and
what the unit tests drive with a ``task.Clock`` and scripted fetchers (so a wiring change breaks
them). No Crawler there: the engine comes in as the three things the components need of it
(``crawl`` a request, whether the crawl is ``closing``, ``wake`` it), and what fetches a
document as ``fetcher_for(kind)``. robots.txt and every usage document (tdmrep.json,
REP_USAGE_SOURCES) get a ``Resolver`` each, built the same way: only their ``DocumentKind``
differs.

Public API for tools (``scrapy robots``) and subclasses: ``middleware.resolve(url) ->
Deferred[OriginReport]`` and, as Scrapy's middleware has, ``robot_parser(request)``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn

from scrapy import signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest, NotConfigured
from scrapy.http import Request, Response
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred, gatherResults, maybeDeferred, succeed

from scrapy_rep.core.origin import origin as url_origin
from scrapy_rep.core.robots_file import RobotsTxt
from scrapy_rep.core.sources import UsageDocument
from scrapy_rep.crawl import _compat
from scrapy_rep.crawl._admission import (
    FIRST,
    GO,
    RESOLVE,
    Admission,
    Drop,
    Judge,
    UsageSource,
    Wait,
    needed_sources,
)
from scrapy_rep.crawl._cache import (
    ROBOTS,
    DocumentKind,
    OriginCache,
    OriginReport,
    OriginState,
    usage_kind,
)
from scrapy_rep.crawl._drops import Drops, FilterKind
from scrapy_rep.crawl._events import Events
from scrapy_rep.crawl._fetch import Fetcher
from scrapy_rep.crawl._page_answers import PageAnswers
from scrapy_rep.crawl._pauses import Pauses
from scrapy_rep.crawl._record import Recorder, open_recorder, require_warcio
from scrapy_rep.crawl._resolver import COPY_FLAG, Announce, FetcherLike, Resolver
from scrapy_rep.crawl._room import Room
from scrapy_rep.crawl._settings import (
    MiddlewareSettings,
    refused_at_startup,
    warn_unknown_settings,
)
from scrapy_rep.crawl._slots import Slots
from scrapy_rep.crawl._tokens import settings_tokens
from scrapy_rep.crawl._verdict import Known, Verdicts
from scrapy_rep.crawl.guard_middleware import check_wiring, serve
from scrapy_rep.crawl.robot_parser import RobotParser
from scrapy_rep.storage.fleet import FleetState, SlotLimits, open_places
from scrapy_rep.storage.held import open_held
from scrapy_rep.storage.results import RobotsStore, StoredPause
from scrapy_rep.storage.results._open import open_configured

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

    from scrapy_rep.core.clock import Clock
    from scrapy_rep.crawl._events import Where, Why
    from scrapy_rep.storage.held import HeldRequests

__all__ = [
    "COPY_FLAG",
    "Components",
    "OriginReport",
    "RobotsTxtMiddleware",
    "build_components",
    "running_middleware",
]

#: Rules that allow nothing: what an unreachable origin's requests get for now (SPEC B2).
_DISALLOW_ALL = RobotsTxt.parse(b"User-agent: *\nDisallow: /\n")


@dataclass(frozen=True)
class Components:
    """What the middleware runs on: the resolvers, the waiting room, the pauses, the decision."""

    resolver: Resolver[RobotsTxt]
    room: Room
    #: The usage documents a crawl may need (REP_USAGE_SOURCES), in their order.
    documents: tuple[UsageSource, ...]
    #: Origins whose pages said "slow down" (SPEC H).
    pauses: Pauses
    #: The one answer to "may this request go now?".
    admission: Admission
    #: What pages answer: a "slow down" pauses the route (SPEC H).
    page_answers: PageAnswers

    @property
    def resolvers(self) -> tuple[Resolver[Any], ...]:
        return (self.resolver, *(used.resolver for used in self.documents))

    def close(self) -> None:
        """No more fetches (the crawl closes)."""
        for resolver in self.resolvers:
            resolver.close()
        self.pauses.close()

    def busy(self) -> bool:
        """Anything under way: a request held or waiting in the room, a resolution."""
        return self.room.busy() or any(resolver.busy() for resolver in self.resolvers)


def build_components(
    *,
    clock: Clock,
    store: RobotsStore,
    fetcher_for: Callable[[DocumentKind[Any]], FetcherLike],
    events: Events,
    config: MiddlewareSettings,
    owner: str,
    crawl: Callable[[Request], object],
    closing: Callable[[], bool],
    wake: Callable[[], None] = lambda: None,
    crawl_delay: Callable[[RobotsTxt], float | None] | None = None,
    rules_parsed: Callable[
        [OriginState[RobotsTxt], OriginState[RobotsTxt] | None, Request | None], None
    ] = lambda *parsed: None,
    held: HeldRequests | None = None,
    drops: Drops | None = None,
    probe_timeout: float = 60.0,
    judge: Judge | None = None,
    apply_delay: Callable[[Request, float], None] = lambda request, delay: None,
    slots: Slots | None = None,
    engine: Callable[[], Any] = lambda: None,
    count_download: Callable[[Request, Response | Exception], None] = lambda request, done: None,
    take_queued: Callable[[Callable[[Request], bool]], list[tuple[Request, Any]]] = (
        lambda wanted: []
    ),
    record: Recorder | None = None,
) -> Components:
    """The components, wired: the resolvers are the services the others use (the room waits on
    them), and tell the events of a new state (robots.txt's with what waits for it, then
    ``rules_parsed``: its Crawl-delay line and ``robots_parsed``).
    ``room.let_go()`` (the crawl closing) closes them all. ``held``: where held requests live
    until ``room.open`` gives the crawl's own place (memory by default). ``drops``: the drop
    path (by default one that delivers no errback: nothing to deliver to without a crawl).
    ``config`` also says which usage documents there are (REP_USAGE_SOURCES) and which the
    declared purpose needs (they are waited for), and whether the store is shared.
    ``probe_timeout``: how long a pause's probe may take; ``judge``: the verdicts the admission asks
    (by default none refuses), ``apply_delay`` puts a Crawl-delay on a slot; ``slots``: the download
    slots' concurrency held at the last look (the room's tick sweeps them); ``engine``: the
    crawl's engine once it runs; ``count_download``: count a page's answer or failure taken out
    of the chain as Scrapy's DownloaderStats would; ``take_queued``: take requests out of Scrapy's
    download slots, their places freed (a route that pauses sends its queued requests back);
    ``record``: the compliance record, told what each state rests on."""

    def resolver(kind: DocumentKind[Any], announced: Announce, delay: Any = None) -> Any:
        return Resolver(
            clock=clock,
            store=store,
            fetcher=fetcher_for(kind),
            cache=OriginCache(
                kind,
                config.limits,
                config.parsed_cache_size,
                delay,
                evidence=None if record is None else record.evidence,
            ),
            events=events,
            config=config,
            owner=owner,
            announce=announced,
        )

    def announce(
        state: OriginState[RobotsTxt],
        previous: OriginState[RobotsTxt] | None,
        now: float,
        trigger: Request | None,
        from_store: bool,
    ) -> None:
        """A new robots.txt state: logged, with what it means for the requests waiting for
        it; then ``rules_parsed``."""
        wanted = not robots.serves(state) and room.wanted(state.origin)
        waiting = room.waiting(state.origin) if wanted else None
        events.resolved(state, previous, now, from_store=from_store, waiting=waiting)
        if waiting is not None:
            events.holding(state, waiting)
        rules_parsed(state, previous, trigger)

    robots: Resolver[RobotsTxt] = resolver(ROBOTS, announce, crawl_delay)

    def usage_source(document: UsageDocument) -> UsageSource:
        """``document`` with its resolver, which logs each state of it."""

        def announced(state: OriginState[Any], *rest: Any) -> None:
            events.document_resolved(document, state)

        return UsageSource(document, resolver(usage_kind(document), announced))

    used = tuple(map(usage_source, config.usage_documents))
    pauses = Pauses(
        clock=clock,
        store=store,
        events=events,
        config=config,
        probe_timeout=probe_timeout,
        owner=owner,
        # A fleet's or a job's store: pauses are read back and followed.
        shared=not config.store.url.startswith("memory:"),
        evict=lambda key: page_answers.evict(key),
    )
    admission = Admission(
        resolver=robots,
        needed=needed_sources(used, config.purpose.labels),
        pauses=pauses,
        judge=judge if judge is not None else _Lenient(),
        apply_delay=apply_delay,
        events=events,
        clock=clock,
        hold_timeout=config.hold_timeout,
        first_through=lambda: room.first_through(),
    )
    page_answers = PageAnswers(
        admission=admission,
        pauses=pauses,
        events=events,
        clock=clock,
        count_download=count_download,
        take_queued=take_queued,
    )
    room = Room(
        clock=clock,
        events=events,
        drops=drops if drops is not None else Drops(events, clock),
        resolver=robots,
        hold_timeout=config.hold_timeout,
        limits=config.limits,
        crawl=crawl,
        closing=closing,
        wake=wake,
        on_close=lambda: components.close(),
        held=held,
        admission=admission,
        slots=slots,
        engine=engine,
        page_leaving=page_answers.page_leaving if config.pause else None,
    )
    components = Components(robots, room, used, pauses, admission, page_answers)
    return components


class _Lenient:
    """A judge that refuses nothing (components built without the crawl's verdicts)."""

    def refusal(self, *asked: Any) -> Why | None:
        return None

    usage_refusal = certain_refusal = refusal

    def same_agents(self, judged: bytes | None, now: bytes | None) -> bool:
        return True

    def refuse(self, request: Request, why: Why, where: Where) -> NoReturn:
        raise why.exception()


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
        self._events = Events(crawler.stats, lambda: crawler.spider)
        self._drops = Drops(
            self._events,
            clock,
            deliver=lambda *dropped: _compat.scrape_failure(crawler.engine, *dropped),
            signal_dropped=lambda request: crawler.signals.send_catch_log(
                signals.request_dropped, request=request, spider=crawler.spider
            ),
        )
        self._verdicts = Verdicts(
            crawler,
            # REP_USER_AGENTS > ROBOTSTXT_USER_AGENT > User-Agent (SPEC C1, C2), in one place.
            settings_tokens(crawler.settings, crawler),
            self._events,
            self._drops,
            config,
        )
        self._config = config
        # The compliance record (REP_RECORD): each fetch's answers, each decision.
        self._record = (
            None
            if config.record is None
            else open_recorder(
                crawler.settings,
                config.record,
                config.record_query_key,
                self._verdicts.tokens_for,
                self._verdicts.account,
                lambda request: self._admission.judged(request),
                config.purpose.labels,
                clock,
            )
        )
        if self._record is not None:
            self._drops.record = self._record.dropped

        def fetcher_for(kind: DocumentKind[Any]) -> Fetcher:
            timeout, keys = config.fetch_timeout, config.fetch_meta_keys
            return Fetcher(
                crawler, kind, self._events, timeout=timeout, meta_keys=keys, record=self._record
            )

        # Each download slot's concurrency, held at the guard's last look where Scrapy does
        # not hold it (REP_SLOT_CONCURRENCY); with a Redis store, with its delay, fleet-wide
        # (REP_FLEET_LIMITS; under AutoThrottle, which sets each slot's delay, the concurrency).
        self._fleet = (
            open_places(
                config.store, clock=clock, stats=crawler.stats, spider=lambda: crawler.spider
            )
            if config.fleet_limits
            else None
        )
        spacing = not crawler.settings.getbool("AUTOTHROTTLE_ENABLED")

        def fleet_limits(key: str, slot: Any) -> SlotLimits:
            return SlotLimits(*_compat.fleet_limits(crawler.engine, key, slot, spacing))

        self._slots = (
            Slots(
                slot_of=lambda request: _compat.get_slot(crawler.engine, request),
                limit_of=_compat.slot_limit,
                mark=_compat.in_slot,
                in_flight=lambda request: _compat.in_flight(crawler.engine, request),
                events=self._events,
                clock=clock,
                fleet=self._fleet,
                fleet_limits=fleet_limits,
            )
            if config.slot_concurrency or self._fleet is not None
            else None
        )

        def take_queued(wanted: Callable[[Request], bool]) -> list[tuple[Request, Any]]:
            taken = _compat.take_queued(crawler.engine, wanted)
            # Taken out before their download: no request_left_downloader frees their places.
            return taken if self._slots is None else self._slots.taken(taken)

        self._components = components = build_components(
            clock=clock,
            store=store,
            fetcher_for=fetcher_for,
            events=self._events,
            config=config,
            owner=uuid.uuid4().hex,
            crawl=lambda request: _compat.crawl(crawler, request),
            closing=lambda: _compat.close_requested(crawler.engine),
            wake=lambda: _compat.wake(crawler.engine),
            crawl_delay=self._verdicts.crawl_delay_of if config.crawl_delay else None,
            rules_parsed=self._verdicts.rules_parsed,
            drops=self._drops,
            # A probe may take as long as a download.
            probe_timeout=crawler.settings.getfloat("DOWNLOAD_TIMEOUT") + 5,
            judge=self._verdicts,
            apply_delay=self._verdicts.apply_crawl_delay,
            slots=self._slots,
            count_download=partial(_compat.count_download, crawler),
            take_queued=take_queued,
            engine=lambda: crawler.engine,
            record=self._record,
        )
        self._room, self._admission = components.room, components.admission
        if self._record is not None:
            self._record.waited = self._room.waited
        # The guard, built next, is built with its last look and the page answers.
        serve(crawler, self._room.last_look, components.page_answers if config.pause else None)
        # Scrapy's own dupefilter, when it is the scheduler's (set when the spider opens).
        self._dupefilter_seen: tuple[Callable[[Request], Any], Collection[Any]] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsTxtMiddleware:
        warn_unknown_settings(crawler)
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            # No message, as Scrapy's own middleware: Scrapy logs "Disabled …" at WARNING for a
            # NotConfigured with one, on every run of a project that does not obey robots.txt.
            raise NotConfigured
        with refused_at_startup(crawler):
            check_wiring(crawler.settings, cls)
            config = MiddlewareSettings.from_settings(crawler.settings)
            if config.record is not None:
                require_warcio()
            store = open_configured(config.store)
        middleware = cls(crawler, config, store)
        crawler.signals.connect(middleware._on_scheduled, signal=signals.request_scheduled)
        # The scheduler refused an origin's first request (a duplicate): its claim is let go.
        crawler.signals.connect(middleware._admission.claim_over, signal=signals.request_dropped)
        crawler.signals.connect(middleware._on_idle, signal=signals.spider_idle)
        crawler.signals.connect(middleware._on_opened, signal=signals.spider_opened)
        crawler.signals.connect(middleware._on_closed, signal=signals.spider_closed)
        if config.pause:
            crawler.signals.connect(
                middleware._components.page_answers.downloaded, signal=signals.response_downloaded
            )
        if middleware._slots is not None:
            crawler.signals.connect(middleware._slots.left, signal=signals.request_left_downloader)
        if middleware._record is not None:
            crawler.signals.connect(middleware._record.downloaded, signal=signals.response_received)
        return middleware

    # -- the hot path ---------------------------------------------------------

    def _on_scheduled(self, request: Request, spider: Spider | None = None) -> None:
        """The gate, before the scheduler: what the admission answers (drop, hold or go)."""
        if request.meta.get("dont_obey_robotstxt"):
            return
        # This signal comes before the dupefilter: a request it will drop as a duplicate of
        # one that passed needs no judging (its fingerprint is the dupefilter's, cached).
        seen = self._dupefilter_seen
        if seen is not None and seen[1] and not request.dont_filter and seen[0](request) in seen[1]:
            return
        if (origin := self._admission.origin(request)) is None:
            return
        decision = self._admission.decide(request, origin, self._clock.seconds(), "gate")
        if decision is GO:  # the usual answer first: on to the scheduler
            return
        if decision is FIRST:
            # The origin's first request goes on and waits for robots.txt at the final gate
            # (``_settle``); the others wait here, held, until it is known.
            self._verdicts.scheduled_unresolved(request)
        elif isinstance(decision, Drop):
            self._verdicts.refuse(request, decision.why, "before_schedule")
        elif isinstance(decision, Wait):
            self._room.hold(origin, request, until=decision.awaited)
            if decision.awaited is self._components.pauses:
                raise IgnoreRequest("held while its origin is paused")
            if decision.awaited is self._components.resolver:
                self._room.say_waiting(origin)
            raise IgnoreRequest(f"held until {decision.awaited.name} is known")

    def _final_gate(
        self, request: Request
    ) -> Coroutine[Any, Any, Response | Request | None] | Request | None:
        """Before download, what the admission answers: None (download it), a drop, a wait
        in the room (off ``Downloader.active``), or the request back to the gate (to be
        held)."""
        if request.meta.get("dont_obey_robotstxt"):
            return None
        parts = urlparse_cached(request)
        if (origin := self._admission.keys.origin(parts)) is None:
            return None
        if request.url.endswith("/robots.txt") and parts.path == "/robots.txt" and not parts.query:
            return self._room.robots_copy(origin, request)
        decision = self._admission.decide(request, origin, self._clock.seconds(), "download")
        if decision is GO:  # the usual answer first: download it
            return None
        if decision is RESOLVE:
            return self._room.first_request(origin, request)
        if isinstance(decision, Drop):
            self._verdicts.refuse(request, decision.why, "before_download")
        return self._room.settle(origin, request, decision) if isinstance(decision, Wait) else None

    #: The final gate, just before download (``async def`` on Scrapy >= 2.14, as its own).
    process_request = _compat.process_request(_final_gate)

    def process_exception(
        self, request: Request, exception: Exception, spider: Spider | None = None
    ) -> None:
        """An earlier downloader middleware dropped an origin's first request before the final
        gate (OffsiteMiddleware on Scrapy >= 2.13, say): its claim is let go. The last to see
        a download's failure (after RetryMiddleware gave up): the record's decision."""
        self._admission.claim_over(request)
        if self._record is not None:
            self._record.failed_download(request, exception)

    def intake_room(self) -> Deferred[None] | None:
        """For ``StartIntakeMiddleware``: None when a start request may be taken now, else a
        Deferred fired when it may (fewer than CONCURRENT_REQUESTS origins being resolved)."""
        return self._components.resolver.room(self.crawler.settings.getint("CONCURRENT_REQUESTS"))

    def documents(
        self, url: str, labels: Sequence[str]
    ) -> Deferred[list[tuple[UsageDocument, OriginState[Any]]]]:
        """The usage documents a crawl declaring ``labels`` needs for ``url``'s origin, each
        resolved once as the gate resolves it (the explain command); none when robots.txt
        does not apply to ``url``."""
        origin = url_origin(url)
        needed = needed_sources(self._components.documents, labels)
        if origin is None or not needed:
            return succeed([])
        trigger = Request(url)

        def pair(state: OriginState[Any], used: UsageSource) -> tuple[UsageDocument, Any]:
            return used.document, state

        found = [used.resolver.resolve(origin, trigger).addCallback(pair, used) for used in needed]
        return gatherResults(found, consumeErrors=True)

    # -- wiring the components -----------------------------------------------------

    def resolve(self, url: str) -> Deferred[OriginReport]:
        """Resolve the robots.txt of ``url``'s origin (one fetch at most) and report it."""
        if (origin := url_origin(url)) is None:
            raise ValueError(f"robots.txt does not apply to {url!r} (http, https and ftp only)")
        return self._components.resolver.report(origin, Request(url))

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
        if (origin := self._admission.origin(request)) is None:
            return None
        report = await maybe_deferred_to_future(self._components.resolver.report(origin, request))
        if report.robots is None and report.outcome != "unreachable":
            return None
        return self._verdicts.parser(_DISALLOW_ALL if report.robots is None else report.robots)

    def pause_of(self, url: str) -> Deferred[StoredPause | None]:
        """The pause the store keeps for ``url``'s origin (SPEC H; the explain command), or
        None: not paused, or the store cannot say."""
        if (origin := url_origin(url)) is None:
            return succeed(None)
        pauses = maybeDeferred(self._store.pauses).addCallback(lambda read: read[1].get(origin))
        return pauses.addErrback(lambda failure: None)

    def fleet_of(self, url: str) -> Deferred[FleetState | None]:
        """The fleet's state of ``url``'s download slot (REP_FLEET_LIMITS; the explain
        command), or None: no fleet limits, or Redis cannot say."""
        if self._fleet is None or url_origin(url) is None:
            return succeed(None)
        key = _compat.slot_key(self.crawler.engine, Request(url))
        return maybeDeferred(self._fleet.state, key).addErrback(lambda failure: None)

    def judged(self, request: Request) -> tuple[OriginState[RobotsTxt], Known] | None:
        """For the page level: the states ``request`` was let go with in this process (robots.txt's
        and the usage documents'), or None."""
        return self._admission.judged(request)

    def page_filtered(
        self, origins: Mapping[str | None, int], reason: str, kind: FilterKind
    ) -> None:
        """For the page level: requests a page's rules filtered out of its output, counted by
        their origin (None: a URL robots.txt does not apply to), go to the drop path's
        closing summary as ``kind`` with ``reason`` (no errback: filtered as
        ``DepthMiddleware`` does)."""
        for origin, count in origins.items():
            self._drops.filtered(origin, count, reason, kind)

    # -- crawl lifecycle ------------------------------------------------------

    def _on_idle(self, spider: Spider | None = None) -> None:
        # Nothing else to do: stop waiting for origins that keep failing (REP_GIVE_UP_AFTER).
        self._room.give_up()
        # pending_elsewhere: another fleet process holds requests that come here if it dies.
        # drops.pending: errbacks of dropped requests not delivered yet (the give-up above).
        if self._drops.pending() or self._components.busy() or self._room.pending_elsewhere():
            raise DontCloseSpider

    async def _on_opened(self, spider: Spider) -> None:
        # An ``async def`` that awaits, as _on_closed: the form every supported Scrapy awaits
        # without a warning (from 2.14 a handler returning a Deferred is deprecated).
        held = open_held(
            self._config.store,
            jobdir=self.crawler.settings.get("JOBDIR"),
            spider=spider,
            stats=self.crawler.stats,
            clock=self._clock,
            on_adopted=self._room.adopted,
            owner_ttl=self._config.held_owner_ttl,
        )
        # Before any request reaches the scheduler: the dupefilter gets the fingerprints of
        # restored requests it saw in the earlier run (lost if that run was killed).
        dupefilter = _compat.dupefilter(self.crawler.engine)
        self._room.open(held, seen=getattr(dupefilter, "request_seen", None))
        if self._fleet is not None and self._slots is not None:
            from twisted.internet import reactor

            self._fleet.start(self._slots.woken, reactor.callFromThread)
        self._dupefilter_seen = _compat.dupefilter_seen(self.crawler.engine)
        if self._config.pause:
            # The engine awaits this handler: the first request waits for the pauses the store
            # keeps.
            await maybe_deferred_to_future(self._components.pauses.open())

    async def _on_closed(self, spider: Spider, reason: str = "") -> None:
        # Every waiting request let go (if a close request did not already: the room notices
        # one on its tick), what stays held said, then no more fetches.
        self._room.close()
        if self._fleet is not None:
            self._fleet.close()
        self._drops.summarize()
        if self._record is not None:
            # Writes what is queued (a batch at most) and seals the open file.
            self._record.close()
        closed = maybeDeferred(self._store.close)
        closed.addErrback(lambda failure: self._events.store_failed(failure.getErrorMessage()))
        await maybe_deferred_to_future(closed)


def running_middleware(crawler: Crawler) -> RobotsTxtMiddleware | None:
    """The crawler's running ``scrapy_rep.RobotsTxtMiddleware``, or None: spiders, extensions
    and tools ask it about an origin (``resolve(url)``, a Deferred of its ``OriginReport``)
    while the crawl runs.

    None when the middleware is not enabled (``ROBOTSTXT_OBEY`` off, or not in
    ``DOWNLOADER_MIDDLEWARES``) or the engine is not running yet: middlewares
    exist from ``engine_started``/``spider_opened`` on. A subclass counts.
    """
    return _compat.downloader_middleware(crawler, RobotsTxtMiddleware)

"""``RobotsTxtMiddleware``: Google's robots.txt rules for a Scrapy crawl, without stalls.

Enable with ``ADDONS = {"scrapy_rep.Addon": 0}``, or by hand: ``ROBOTSTXT_OBEY = True`` and, in
DOWNLOADER_MIDDLEWARES, Scrapy's robots.txt middleware set to None,
``"scrapy_rep.RobotsTxtMiddleware": 100`` and ``"scrapy_rep.RobotsTxtGuard": 950``.

It connects the parts (``_parts.build_parts``) to Scrapy's signals and downloader. How a
request travels:

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
- **A spider's own request for an origin's robots.txt** (SitemapSpider's ``sitemap_urls``) is
  answered at the final gate from the copy the middleware fetched: the bytes the gates obey,
  at the URL they came from after redirects, flagged ``COPY_FLAG`` and not stored by the HTTP
  cache. The server sees one robots.txt request per origin.
- Every request dropped goes through ``_drops.Drops`` (counted, logged, errback delivered).

Public API for tools (``scrapy robots``) and subclasses: ``middleware.resolve(url) ->
Deferred[OriginReport]`` and, as Scrapy's middleware has, ``robot_parser(request)``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest, NotConfigured
from scrapy.http import Request, Response, TextResponse
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred, gatherResults, maybeDeferred, succeed

from scrapy_rep.core.origin import origin as url_origin
from scrapy_rep.core.policy import parse_retry_after
from scrapy_rep.core.proxy import proxy_failure
from scrapy_rep.core.robots_file import RobotsTxt
from scrapy_rep.core.sources import Statement, UsageDocument, needed_documents
from scrapy_rep.core.stats import PAUSE_PASSED, PAUSE_RESENT, RESCHEDULED
from scrapy_rep.crawl import _compat, _inline
from scrapy_rep.crawl._cache import DocumentKind, OriginKeys, OriginReport, OriginState
from scrapy_rep.crawl._drops import Drops
from scrapy_rep.crawl._events import Events, Waiting
from scrapy_rep.crawl._fetch import Fetcher, describe_failure, header_values
from scrapy_rep.crawl._holds import SEEN_META
from scrapy_rep.crawl._parts import UsageResolver, build_parts
from scrapy_rep.crawl._pauses import DONT_PAUSE_META, PROBE_META, route
from scrapy_rep.crawl._resolver import Resolver
from scrapy_rep.crawl._settings import (
    MiddlewareSettings,
    refused_at_startup,
    warn_unknown_settings,
)
from scrapy_rep.crawl._tokens import settings_tokens
from scrapy_rep.crawl._verdict import Known, Verdicts
from scrapy_rep.crawl.guard_middleware import ROBOTS_META, RobotsTxtGuard, check_wiring
from scrapy_rep.crawl.robot_parser import RobotParser
from scrapy_rep.storage.held import open_held
from scrapy_rep.storage.results import RobotsStore, StoredPause
from scrapy_rep.storage.results._open import open_configured

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

    from scrapy_rep.core.clock import Clock

__all__ = ["COPY_FLAG", "OriginReport", "RobotsTxtMiddleware"]

_T = TypeVar("_T")

#: Flag of a response answering a spider's own robots.txt request from the middleware's copy.
COPY_FLAG = "robotstxt_copy"

#: Meta key set on requests the gate let through to the scheduler: the newest generation of the
#: origin states that allowed them (see ``OriginState.generation``): its robots.txt's and, with
#: a declared purpose, the usage documents' it needs (``_newest``); or ``_FIRST``.
_GATED = "_robotstxt_gated"
#: ``_GATED`` of an unknown origin's first request, let through unresolved (``Resolver.claim``):
#: never a generation (those are positive).
_FIRST = -1
#: Meta key of a first request whose resolution failed outright: the gate holds it next time
#: (the held requests' retry schedule then applies) rather than letting it through again.
_HOLD_NEXT = "_rep_hold_next"
#: Meta key set on a request whose answer paused its origin: it is sent again after the pause.
_RESEND = "_rep_pause_resend"
#: Rules that allow nothing: what an unreachable origin's requests get for now (SPEC B2).
_DISALLOW_ALL = RobotsTxt.parse(b"User-agent: *\nDisallow: /\n")


class RobotsTxtMiddleware:
    """Downloader middleware + request_scheduled gate; see the module docstring. The robots.txt
    resolver tells it of each new state (``announced``: log and signal it)."""

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
        self._drops = Drops(
            self._events,
            clock,
            deliver=lambda request, failure: _compat.scrape_failure(
                crawler.engine, request, failure
            ),
            signal_dropped=lambda request: crawler.signals.send_catch_log(
                signals.request_dropped, request=request, spider=crawler.spider
            ),
        )
        # REP_USER_AGENTS > ROBOTSTXT_USER_AGENT > User-Agent (SPEC C1, C2), decided in one place.
        tokens = settings_tokens(crawler.settings, crawler)
        self._verdicts = Verdicts(
            crawler,
            tokens,
            self._events,
            self._drops,
            config.purpose,
            delay_max=config.crawl_delay_max,
            above_max=config.crawl_delay_above_max,
        )
        self._config = config
        self._hold_timeout = config.hold_timeout

        def fetcher_for(kind: DocumentKind[Any]) -> Fetcher:
            timeout, keys = config.fetch_timeout, config.fetch_meta_keys
            return Fetcher(crawler, kind, self._events, timeout=timeout, meta_keys=keys)

        parts = build_parts(
            clock=clock,
            store=store,
            fetcher_for=fetcher_for,
            events=self._events,
            config=config,
            owner=uuid.uuid4().hex,
            crawl=self._crawl,
            closing=lambda: _compat.close_requested(crawler.engine),
            wake=lambda: _compat.wake(crawler.engine),
            crawl_delay=self._verdicts.crawl_delay_of if config.crawl_delay else None,
            announce=self.announced,
            drops=self._drops,
            documents=config.usage_documents,
            shared=not config.store.url.startswith("memory:"),
            # A probe may take as long as a download.
            probe_timeout=crawler.settings.getfloat("DOWNLOAD_TIMEOUT") + 5,
            evict=self._evict,
        )
        self._parts = parts
        self._resolver, self._holds = parts.resolver, parts.holds
        self._concurrent_requests = crawler.settings.getint("CONCURRENT_REQUESTS")
        # The usage documents the gate waits for: those a declared purpose needs (tdmrep.json
        # for train-ai); the others are never fetched by the crawl (``documents`` aside).
        self._needed = _needed(parts.documents, config.purpose.labels)
        # What the final gate let each request download with (for the page level): its
        # origin's robots.txt state and the usage documents known, for as long as the request
        # lives (not looked up in the LRU later, which may have evicted them by then). About
        # 150 ns per request (a weak reference); set, never popped: a request that passes again
        # overwrites it.
        self._decided: WeakKeyDictionary[Request, tuple[OriginState[RobotsTxt], Known]] = (
            WeakKeyDictionary()
        )
        # SPEC H: origins whose pages said "slow down"; the gates read the dict of paused ones.
        self._pause_on = config.pause
        self._pauses = parts.pauses
        self._paused = parts.pauses.paused
        # An unknown origin's first request goes on to wait at the final gate (set when the
        # spider opens, once it is known whether held requests are durable).
        self._first_through = False
        # Scrapy's own dupefilter, when it is the scheduler's (set when the spider opens).
        self._dupefilter_seen: tuple[Callable[[Request], Any], Collection[Any]] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsTxtMiddleware:
        warn_unknown_settings(crawler)
        settings = crawler.settings
        if not settings.getbool("ROBOTSTXT_OBEY"):
            # No message, as Scrapy's own middleware: Scrapy logs "Disabled …" at WARNING for a
            # NotConfigured with one, on every run of a project that does not obey robots.txt.
            raise NotConfigured
        with refused_at_startup(crawler):
            check_wiring(settings)
            config = MiddlewareSettings.from_settings(settings)
            store = open_configured(config.store)
        middleware = cls(crawler, config, store)
        crawler.signals.connect(middleware._on_scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(middleware._on_dropped, signal=signals.request_dropped)
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
        # This signal comes before the dupefilter: a request it will drop as a duplicate of
        # one that passed needs no judging (its fingerprint is the dupefilter's, cached).
        seen = self._dupefilter_seen
        if seen is not None and seen[1] and not request.dont_filter:
            if seen[0](request) in seen[1]:
                return
        origin = self._keys.origin(urlparse_cached(request))
        if origin is None:
            return
        now = self._clock.seconds()
        state = self._resolver.state(origin, now, request)
        if (
            state is None
            and self._first_through
            and route(origin, request) not in self._paused  # a paused route's wait here, held
            and not meta.pop(_HOLD_NEXT, False)
            and self._resolver.claim(origin, now)
        ):
            # The origin's first request goes on and waits for robots.txt at the final gate
            # (``_first_request``); the others wait here, held, until it is known. Not where
            # held requests are durable (JOBDIR, Redis): there every one is held, so that a
            # crash loses none (a request waiting at the final gate is in flight).
            meta[_GATED] = _FIRST
            self._verdicts.scheduled_unresolved(request)
            return
        if state is None or state.serving.kind == "hold":
            self._holds.hold(origin, request)
            self._say_waiting(state)
            raise IgnoreRequest("held until robots.txt is known")
        known: Known = ()
        if self._needed:
            known, missing = self._documents_known(origin, request)
            if missing is not None and self._verdicts.crawlable(state, request):
                # The declared purpose needs this document of the origin: wait for it too.
                self._holds.hold(origin, request, until=missing)
                raise IgnoreRequest(f"held until {missing.kind.name} is known")
        self._verdicts.at_gate(state, request, known)
        if self._paused and self._held_by_pause(origin, request, now):
            self._holds.hold(origin, request, until=self._pauses)
            raise IgnoreRequest("held while its origin is paused")
        meta[_GATED] = _newest(state, known)

    def _final_gate(
        self, request: Request
    ) -> Coroutine[Any, Any, Response | Request | None] | Request | None:
        """None (download it), a Request (to the gate again), or a wait for robots.txt."""
        if request.meta.get("dont_obey_robotstxt"):
            return None
        parts = urlparse_cached(request)
        origin = self._keys.origin(parts)
        if origin is None:
            return None
        gated = request.meta.get(_GATED)
        if gated == _FIRST:
            self._resolver.unclaim(origin)
        if request.url.endswith("/robots.txt") and parts.path == "/robots.txt" and not parts.query:
            return self._robots_copy(origin, request)
        if (
            self._paused
            and not request.meta.get(PROBE_META)
            and self._held_by_pause(origin, request, self._clock.seconds())
        ):
            if gated is None:
                # An engine.download caller: it waits here for the pause to end.
                return self._check_later(self._pauses_then_state(origin, request), request)
            # Back to the gate, which holds it (durably) outside the downloader.
            return self._back_to_gate(request)
        now = self._clock.seconds()
        state = self._resolver.state(origin, now, request)
        if state is not None and state.serving.kind != "hold":
            known: Known = ()
            if self._needed:
                known, missing = self._documents_known(origin, request)
                if missing is not None:
                    return self._check_later(succeed(state), request)
            # The fast path: no state the gate judged it with was replaced since (robots.txt's,
            # the usage documents' it needs).
            if gated == _newest(state, known):
                if state.crawl_delay is not None:
                    self._verdicts.apply_crawl_delay(request, state.crawl_delay)
            else:
                self._verdicts.at_download(state, request, known)
            self._decided[request] = (state, known)
            return None
        if state is None and gated == _FIRST:
            return self._first_request(origin, request)
        if gated is not None and state is not None:
            # It passed the gate, and its origin became unknown or unreachable since: back to
            # the gate, which holds it (durably) without a downloader slot.
            return self._back_to_gate(request)
        # Not known here: an engine.download caller, a request another fleet process (or an
        # earlier run of this JOBDIR) allowed, or one the gate allowed whose origin's state was
        # evicted from the LRU since (the page level needs what it downloads with). It waits
        # off Downloader.active while the resolver reads the shared store (a fetch only if the
        # store has nothing), rather than going through this process's gate and the queue
        # again.
        waiter = self._holds.wait(origin, request)
        self._say_waiting(state)
        return self._check_later(waiter, request)

    #: The final gate, just before download (``async def`` on Scrapy >= 2.14, as its own).
    process_request = _compat.process_request(_final_gate)

    def process_exception(
        self, request: Request, exception: Exception, spider: Spider | None = None
    ) -> None:
        """An earlier downloader middleware dropped an origin's first request before the final
        gate (OffsiteMiddleware on Scrapy >= 2.13, say): its claim is let go."""
        self._first_gone(request)

    def _on_dropped(self, request: Request, spider: Spider | None = None) -> None:
        """The scheduler refused an origin's first request (a duplicate): its claim is let go."""
        self._first_gone(request)

    def _first_gone(self, request: Request) -> None:
        if request.meta.get(_GATED) == _FIRST:
            origin = self._keys.origin(urlparse_cached(request))
            if origin is not None:
                self._resolver.unclaim(origin)

    def _held_by_pause(self, origin: str, request: Request, now: float) -> bool:
        """Is ``request``'s route to ``origin`` paused, and it is not its probe? A request
        marked ``rep_dont_pause`` is never held by a pause (SPEC H4)."""
        if request.meta.get(DONT_PAUSE_META):
            return False
        key = route(origin, request)
        return key in self._paused and not self._pauses.admit(key, request, now)

    def _back_to_gate(self, request: Request) -> Request:
        """``request`` sent back to the scheduler, to pass the gate again (which may hold it).
        The dupefilter saw it once already (if it passed the gate to the scheduler and was not
        ``dont_filter``): marked so, a run that restores it files it with the dupefilter again
        (``Holds.open``)."""
        if not request.dont_filter and _GATED in request.meta:
            request.meta[SEEN_META] = True
        request.dont_filter = True
        request.meta.pop(_GATED, None)
        request.meta.pop(PROBE_META, None)
        self._events.count(RESCHEDULED)
        return request

    def _pauses_then_state(self, origin: str, request: Request) -> Deferred[OriginState[RobotsTxt]]:
        """Once ``origin`` may be sent to again, its robots.txt state (an ``engine.download``
        caller waiting in process_request)."""

        def then(_: object) -> Deferred[OriginState[RobotsTxt]]:
            self._pauses.admit(route(origin, request), request, self._clock.seconds())
            return self._holds.wait(origin, request)

        return self._pauses.wait(origin, request).addCallback(then)

    # -- what the pages answer (SPEC H; RobotsTxtGuard hands them over) -----------------------

    def _on_downloaded(
        self, response: Response, request: Request, spider: Spider | None = None
    ) -> None:
        """A page's answer, as the downloader has it (``response_downloaded``: before its slot
        sends the next request, so a pause begun here holds that one too): does it pause its
        origin (SPEC H1)? Marks ``request`` to be sent again after the pause (``page_answered``
        does it); a cached copy never comes here (SPEC H4)."""
        try:
            self._page_answer(response, request)
        except Exception as exc:
            # A site's answer must never break the crawl's handling of it: once in the log.
            self._events.contained("a page's answer", exc)

    def _page_answer(self, response: Response, request: Request) -> None:
        meta = request.meta
        status = response.status
        # The hot path: an answer, and nothing struggling or probing to tell of it.
        quiet = status < 500 and status != 429 and not self._pauses.struggles
        if quiet and PROBE_META not in meta:
            return
        if meta.get(ROBOTS_META) or meta.get("dont_obey_robotstxt") or meta.get(DONT_PAUSE_META):
            return
        origin = self._keys.origin(urlparse_cached(request))
        if origin is None:
            return
        if proxy_failure(status, header_values(response, b"Proxy-Status")) is not None:
            # The proxy's (or API's) own 429/503 says nothing of the site (SPEC H4).
            meta.pop(PROBE_META, None)
            return
        # An HTTP-date Retry-After is read against the wall clock, at once (into a delay).
        retry_after = parse_retry_after(header_values(response, b"Retry-After"), time.time())
        if self._pauses.answered(route(origin, request), request, status, retry_after):
            meta[_RESEND] = True

    def page_leaving(self, request: Request) -> Request | None:
        """The last look at a page before its download slot (RobotsTxtGuard, after every other
        middleware): one whose origin paused since it passed the final gate goes back to the
        gate (None: let it go)."""
        meta = request.meta
        if not self._paused or PROBE_META in meta or _GATED not in meta:
            return None
        origin = self._keys.origin(urlparse_cached(request))
        if origin is None or not self._held_by_pause(origin, request, self._clock.seconds()):
            return None
        return self._back_to_gate(request)

    def page_answered(self, request: Request, response: Response) -> Response | Request:
        """A page's answer, before RetryMiddleware and the HTTP cache see it (RobotsTxtGuard):
        the answer, or ``request`` to be sent again after its origin's pause (SPEC H3)."""
        if not request.meta.pop(_RESEND, False):
            return response
        if request.meta.get("dont_retry") or _handles(request, response.status):
            # The spider asked for this status: it gets it; the origin pauses for the others.
            self._events.count(PAUSE_PASSED)
            return response
        self._events.count(f"{PAUSE_RESENT}/{response.status}")
        # Taken out before DownloaderStats (850) sees it: counted as it would count it.
        _compat.count_response(self.crawler, request, response)
        return self._back_to_gate(request)

    def page_failed(self, request: Request, error: Exception) -> Request | None:
        """A page's download failed: a probe that got no answer keeps its origin paused (and
        is sent again after the pause); anything else is left to Scrapy."""
        if PROBE_META not in request.meta:
            return None
        origin = self._keys.origin(urlparse_cached(request))
        if origin is None or not self._pauses.probe_failed(
            route(origin, request), request, describe_failure(error)
        ):
            return None
        self._events.count(f"{PAUSE_RESENT}/{type(error).__name__}")
        return self._back_to_gate(request)

    def _evict(self, key: str) -> None:
        """Route ``key`` pauses: its requests waiting in a download slot go back to the gate
        (held there) instead of going out during the pause."""
        engine = self.crawler.engine

        def mine(queued: Request) -> bool:
            if queued.meta.get("dont_obey_robotstxt") or queued.meta.get(DONT_PAUSE_META):
                return False
            origin = self._keys.origin(urlparse_cached(queued))
            return origin is not None and route(origin, queued) == key

        for queued, deferred in _compat.take_queued(engine, mine):
            self._events.count(f"{PAUSE_RESENT}/queued")
            # Fired on the next turn: not inside the answer being handled now.
            self._clock.callLater(0, deferred.callback, self._back_to_gate(queued))

    def _say_waiting(self, state: OriginState[RobotsTxt] | None) -> None:
        """Requests wait for an origin's robots.txt: say why (once per origin). An origin
        still being fetched for the first time is not announced (the usual case)."""
        if state is not None:
            self._events.holding(state, self._waiting(state.origin))

    def _waiting(self, origin: str) -> Waiting:
        """What decides how long the crawl waits for ``origin`` (for the log)."""
        since = self._holds.waiting_since(origin)
        return Waiting(self._config.limits, self._hold_timeout, since, self._resolver.started)

    async def _robots_copy(self, origin: str, request: Request) -> Response | None:
        """A spider's request for ``origin``'s robots.txt, answered from the crawl's copy (one
        robots.txt request per origin): it waits while robots.txt is unknown or being retried,
        is dropped with the reason if the crawl gives the origin up, and goes to the server
        only when there is no copy to give (unreachable for too long, the store lost it)."""
        state = self._resolver.state(origin, self._clock.seconds(), request)
        if state is None or state.serving.kind == "hold":
            waiter = self._holds.wait(origin, request)
            self._say_waiting(state)
            state = await self._off_active(waiter, request)
        self._verdicts.at_download(state, request)
        copy = await maybe_deferred_to_future(self._resolver.copy(state))
        if copy is None:
            return None
        status, url, body = copy
        # HttpCacheMiddleware stores what passes its process_response: not this copy.
        request.meta["dont_cache"] = True
        if body is None:
            return Response(url, status=status, request=request, flags=[COPY_FLAG])
        return TextResponse(
            url,
            status=status,
            # SPEC A1: the body is read as UTF-8, whatever the server declared.
            headers={b"Content-Type": b"text/plain; charset=utf-8"},
            body=body,
            request=request,
            flags=[COPY_FLAG],
        )

    async def _off_active(
        self, waiter: Deferred[_T], request: Request, downloads: _inline.Taken | None = None
    ) -> _T:
        """Wait for ``waiter`` with ``request`` out of ``Downloader.active``: waiting for
        robots.txt is not downloading, so the CONCURRENT_REQUESTS place is given back meanwhile
        (an ``engine.download`` caller cannot stall other origins). ``downloads``: the ones
        ``waiter`` waits for, run in this task (``_inline``)."""
        engine = self.crawler.engine
        left = _compat.leave_active(engine, request)
        if left:
            # Back the moment the wait is over, not a turn of the event loop later when this
            # task resumes: meanwhile the engine would see nothing in flight, and close.
            waiter.addBoth(_rejoined, engine, request)
        try:
            if downloads:
                await _inline.run(downloads)
            return await maybe_deferred_to_future(waiter)
        finally:
            if left:
                _compat.rejoin_active(engine, request)

    async def _check_later(
        self, waiter: Deferred[OriginState[RobotsTxt]], request: Request
    ) -> None:
        state = await self._off_active(waiter, request)
        await self._check_known(state, request)

    async def _check_known(self, state: OriginState[RobotsTxt], request: Request) -> None:
        """The final gate's verdict with ``state``, once the needed usage documents are known
        (each waited for off ``Downloader.active``)."""
        known: list[tuple[UsageDocument, OriginState[Any]]] = []
        for used in self._needed:
            document = await self._off_active(used.resolver.wait(state.origin, request), request)
            known.append((used.document, document))
        self._verdicts.at_download(state, request, known)
        self._decided[request] = (state, known)

    async def _first_request(self, origin: str, request: Request) -> Request | None:
        """An unknown origin's first request, let through by the gate: it resolves the origin
        now and waits for it here, off ``Downloader.active`` and outside any slot, so it goes
        the moment robots.txt is known (not behind the scheduler's backlog, as a released
        request would). Unreachable (or the resolution failed): back to the gate, which holds
        it (durably where the crawl is) with the origin's others."""
        with _inline.taken() as downloads:
            resolution = self._resolver.resolve(origin, request)
        try:
            # Its robots.txt download runs in this task: the request goes on in the turn of
            # the event loop robots.txt is known in, as with Scrapy's own middleware.
            state = await self._off_active(resolution, request, downloads)
        except Exception:  # the resolver logged it; the gate holds the request
            request.meta[_HOLD_NEXT] = True
            return self._back_to_gate(request)
        if not self._resolver.serves(state):
            return self._back_to_gate(request)
        await self._check_known(state, request)
        return None

    def _documents_known(self, origin: str, request: Request) -> tuple[Known, Resolver[Any] | None]:
        """The needed usage documents of ``origin`` known here, and the resolver of the first
        one that is not (None: all are)."""
        now = self._clock.seconds()
        known: list[tuple[UsageDocument, OriginState[Any]]] = []
        for used in self._needed:
            state = used.resolver.state(origin, now, request)
            if state is None:
                return known, used.resolver
            known.append((used.document, state))
        return known, None

    def intake_room(self) -> Deferred[None] | None:
        """For ``StartIntakeMiddleware``: None when a start request may be taken now, else a
        Deferred fired when it may (fewer than CONCURRENT_REQUESTS origins being resolved)."""
        return self._resolver.room(self._concurrent_requests)

    def documents(
        self, url: str, labels: Sequence[str]
    ) -> Deferred[list[tuple[UsageDocument, OriginState[Any]]]]:
        """The usage documents a crawl declaring ``labels`` needs for ``url``'s origin, each
        resolved once as the gate resolves it (the explain command); none when robots.txt
        does not apply to ``url``."""
        origin = url_origin(url)
        needed = _needed(self._parts.documents, labels)
        if origin is None or not needed:
            return succeed([])
        trigger = Request(url)

        def pair(state: OriginState[Any], used: UsageResolver) -> tuple[UsageDocument, Any]:
            return used.document, state

        found = [used.resolver.resolve(origin, trigger).addCallback(pair, used) for used in needed]
        return gatherResults(found, consumeErrors=True)

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

    def pause_of(self, url: str) -> Deferred[StoredPause | None]:
        """The pause the store keeps for ``url``'s origin (SPEC H; the explain command), or
        None: not paused, or the store cannot say."""
        origin = url_origin(url)
        if origin is None:
            return succeed(None)

        def found(read: tuple[int, dict[str, StoredPause]]) -> StoredPause | None:
            return read[1].get(origin)

        pauses = maybeDeferred(self._store.pauses).addCallback(found)
        return pauses.addErrback(lambda failure: None)

    def page_filtered(self, origins: Mapping[str | None, int], reason: str) -> None:
        """For the page level: requests a page's rules filtered out of its output, counted by
        their origin (None: a URL robots.txt does not apply to), go to the drop path's
        closing summary with ``reason`` (no errback: filtered as ``DepthMiddleware`` does)."""
        for origin, count in origins.items():
            self._drops.filtered(origin, count, reason)

    def usage_statements(self, request: Request) -> list[Statement]:
        """For the page level: what the sources known before fetching state of ``request``'s
        URL — robots.txt and the usage documents the declared purpose needs — as the final
        gate knew them when it let ``request`` download (nothing for a request it did not
        judge: ``dont_obey_robotstxt``, no origin). Not read from the LRU, which may have
        evicted them since."""
        decided = self._decided.get(request)
        if decided is None:
            return []
        state, known = decided
        return self._verdicts.statements(state, request, known)

    def _crawl(self, request: Request) -> None:
        engine = self.crawler.engine
        assert engine is not None
        engine.crawl(request)

    def announced(
        self,
        state: OriginState[RobotsTxt],
        previous: OriginState[RobotsTxt] | None,
        now: float,
        trigger: Request | None,
        from_store: bool,
    ) -> None:
        """Log a new robots.txt state; send ``robots_parsed`` for new rules."""
        waiting = None
        if state.serving.kind == "hold" and self._holds.wanted(state.origin):
            waiting = self._waiting(state.origin)
        self._events.resolved(state, previous, now, from_store=from_store, waiting=waiting)
        if waiting is not None:
            self._events.holding(state, waiting)
        robots = state.document
        if robots is None or (previous is not None and previous.document is robots):
            return
        asked = self._verdicts.asked_crawl_delay(robots)
        if asked is not None:
            self._events.crawl_delay(state.origin, asked, state.crawl_delay, self._config)
        # As Scrapy's own middleware: async handlers run, with the request whose robots.txt
        # this is. Unlike Scrapy's, the origin's requests do not wait for the handlers: the
        # state must serve the moment it is installed (an LRU of one evicts it otherwise).
        _compat.send_robots_parsed(
            self.crawler.signals, robotparser=self._verdicts.parser(robots), request=trigger
        )

    # -- crawl lifecycle ------------------------------------------------------

    def _on_idle(self, spider: Spider | None = None) -> None:
        # Nothing else to do: stop waiting for origins that keep failing (REP_GIVE_UP_AFTER).
        self._holds.give_up()
        # pending_elsewhere: another fleet process holds requests that come here if it dies.
        # drops.pending: errbacks of dropped requests not delivered yet (the give-up above).
        if (
            self._drops.pending()
            or self._holds.busy()
            or self._parts.busy()
            or self._holds.pending_elsewhere()
        ):
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
            on_adopted=self._holds.adopted,
            owner_ttl=self._config.held_owner_ttl,
        )
        # Before any request reaches the scheduler: the dupefilter gets the fingerprints of
        # restored requests it saw in the earlier run (lost if that run was killed).
        dupefilter = _compat.dupefilter(self.crawler.engine)
        self._holds.open(held, seen=getattr(dupefilter, "request_seen", None))
        self._first_through = held.next_run is None
        self._dupefilter_seen = _compat.dupefilter_seen(self.crawler.engine)
        if not self._pause_on:
            return
        guard = _compat.downloader_middleware(self.crawler, RobotsTxtGuard)
        if guard is not None:
            guard.pages = self
            self.crawler.signals.connect(self._on_downloaded, signal=signals.response_downloaded)
        # The engine awaits this handler: the first request waits for the pauses the store keeps.
        await maybe_deferred_to_future(self._pauses.open())

    async def _on_closed(self, spider: Spider, reason: str = "") -> None:
        # Every waiting request let go, then no more fetches (if a close request did not
        # already: the holds notice one on their tick).
        self._holds.let_go()
        self._drops.summarize()
        closed = maybeDeferred(self._store.close)
        closed.addErrback(lambda failure: self._events.store_failed(failure.getErrorMessage()))
        await maybe_deferred_to_future(closed)


def _newest(state: OriginState[RobotsTxt], known: Known) -> int:
    """The newest generation of ``state`` (robots.txt's) and the needed usage documents' states
    ``known``: each state installed gets a generation above every earlier one, so this changes
    whenever any of them does (what the gate records, what the final gate compares)."""
    generation = state.generation
    for _, document in known:
        if document.generation > generation:
            generation = document.generation
    return generation


def _needed(documents: Sequence[UsageResolver], labels: Sequence[str]) -> tuple[UsageResolver, ...]:
    """The usage documents a crawl declaring ``labels`` waits for (SPEC G2)."""
    wanted = needed_documents([used.document for used in documents], labels)
    return tuple(used for used in documents if used.document in wanted)


def _rejoined(result: _T, engine: Any, request: Request) -> _T:
    _compat.rejoin_active(engine, request)
    return result


def _handles(request: Request, status: int) -> bool:
    """Did the spider ask to handle ``status`` itself (Scrapy's HttpErrorMiddleware keys)?"""
    meta = request.meta
    if meta.get("handle_httpstatus_all"):
        return True
    return status in (meta.get("handle_httpstatus_list") or ())

"""The crawl's components, built in one place: what ``RobotsTxtMiddleware`` runs on, and what
the unit tests drive with a ``task.Clock`` and scripted fetchers (so a wiring change breaks
them).

No Crawler here: the engine comes in as the three things the components need of it (``crawl`` a
request, whether the crawl is ``closing``, ``wake`` it), and what fetches a document as
``fetcher_for(kind)``. robots.txt and every usage document (tdmrep.json, REP_USAGE_SOURCES)
get a ``Resolver`` each, built the same way: only their ``DocumentKind`` differs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from scrapy_rep.core.tdmrep import TDMREP
from scrapy_rep.crawl._admission import Admission, Judge, UsageSource, needed_sources
from scrapy_rep.crawl._cache import ROBOTS, DocumentKind, OriginCache, OriginState, usage_kind
from scrapy_rep.crawl._drops import Drops
from scrapy_rep.crawl._holds import Holds, SlotWaits
from scrapy_rep.crawl._page_answers import PageAnswers
from scrapy_rep.crawl._pauses import Pauses
from scrapy_rep.crawl._resolver import Announce, FetcherLike, Resolver

if TYPE_CHECKING:
    from scrapy.http import Request, Response

    from scrapy_rep.core.clock import Clock
    from scrapy_rep.core.robots_file import RobotsTxt
    from scrapy_rep.core.sources import UsageDocument
    from scrapy_rep.crawl._events import Events, Where, Why
    from scrapy_rep.crawl._settings import MiddlewareSettings
    from scrapy_rep.storage.held import HeldRequests
    from scrapy_rep.storage.results import RobotsStore

__all__ = ["Components", "build_components"]


@dataclass(frozen=True)
class Components:
    """What the middleware runs on: the resolvers, the waiting room, the pauses, the decision."""

    cache: OriginCache[RobotsTxt]
    resolver: Resolver[RobotsTxt]
    holds: Holds
    #: The usage documents a crawl may need (REP_USAGE_SOURCES), in their order.
    documents: tuple[UsageSource, ...]
    #: Origins whose pages said "slow down" (SPEC H).
    pauses: Pauses
    #: The one answer to "may this request go now?".
    admission: Admission
    #: What pages answer: a "slow down" pauses the route (SPEC H).
    page_answers: PageAnswers

    def close(self) -> None:
        """No more fetches (the crawl closes)."""
        self.resolver.close()
        for used in self.documents:
            used.resolver.close()
        self.pauses.close()

    def busy(self) -> bool:
        return self.resolver.busy() or any(used.resolver.busy() for used in self.documents)


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
    rules_parsed: Callable[[Any, Any, Request | None], None] = lambda *parsed: None,
    held: HeldRequests | None = None,
    drops: Drops | None = None,
    documents: Sequence[UsageDocument] = (TDMREP,),
    shared: bool = False,
    probe_timeout: float = 60.0,
    judge: Judge | None = None,
    apply_delay: Callable[[Request, float], None] = lambda request, delay: None,
    labels: Sequence[str] = (),
    slots: SlotWaits | None = None,
    count_response: Callable[[Request, Response], None] = lambda request, response: None,
    take_queued: Callable[[Callable[[Request], bool]], list[tuple[Request, Any]]] = (
        lambda wanted: []
    ),
) -> Components:
    """The components, wired: the resolvers are the services the others use (holds wait on them),
    and tell the events of a new state (robots.txt's with what waits for it, then
    ``rules_parsed``: its Crawl-delay line and ``robots_parsed``).
    ``holds.let_go()`` (the crawl closing) closes them all. ``held``: where held requests live
    until ``holds.open`` gives the crawl's own place (memory by default). ``drops``: the drop
    path (by default one that delivers no errback: nothing to deliver to without a crawl).
    ``shared``: the store is a fleet's or a job's (pauses are read back and followed);
    ``probe_timeout``: how long a pause's probe may take; ``judge``: the verdicts the admission asks
    (by default none refuses), ``apply_delay`` puts a Crawl-delay on a slot, ``labels``: the
    declared purpose's (the usage documents it needs are waited for); ``slots``: the download
    slots' concurrency held at the last look (the holds' tick sweeps them);
    ``count_response``: count a page's answer taken out of the chain as Scrapy's
    DownloaderStats would; ``take_queued``: take requests out of Scrapy's download slots, their
    places freed (a route that pauses sends its queued requests back)."""

    def resolver(cache: OriginCache[Any], announced: Announce | None) -> Any:
        return Resolver(
            clock=clock,
            store=store,
            fetcher=fetcher_for(cache.kind),
            cache=cache,
            events=events,
            limits=config.limits,
            lease_ttl=config.lease_ttl,
            lease_poll_interval=config.lease_poll_interval,
            owner=owner,
            announce=announced,
        )

    size = config.parsed_cache_size
    cache = OriginCache(ROBOTS, config.limits, size, crawl_delay)

    def announce(
        state: OriginState[RobotsTxt],
        previous: OriginState[RobotsTxt] | None,
        now: float,
        trigger: Request | None,
        from_store: bool,
    ) -> None:
        """A new robots.txt state: logged, with what it means for the requests waiting for
        it; then ``rules_parsed``."""
        waiting = None
        if not robots.serves(state) and holds.wanted(state.origin):
            waiting = holds.waiting(state.origin)
        events.resolved(state, previous, now, from_store=from_store, waiting=waiting)
        if waiting is not None:
            events.holding(state, waiting)
        rules_parsed(state, previous, trigger)

    robots: Resolver[RobotsTxt] = resolver(cache, announce)
    used = tuple(
        UsageSource(
            document,
            resolver(
                OriginCache(usage_kind(document), config.limits, size),
                _announcer(events, document),
            ),
        )
        for document in documents
    )
    components: Components
    pauses = Pauses(
        clock=clock,
        store=store,
        events=events,
        delay=config.pause_delay,
        max_delay=config.pause_max_delay,
        give_up_after=config.pause_give_up_after,
        probe_timeout=probe_timeout,
        owner=owner,
        shared=shared,
        poll_interval=config.lease_poll_interval,
        evict=lambda key: page_answers.evict(key),
    )
    admission = Admission(
        resolver=robots,
        needed=needed_sources(used, labels),
        pauses=pauses,
        judge=judge if judge is not None else _LENIENT,
        apply_delay=apply_delay,
        events=events,
        clock=clock,
        hold_timeout=config.hold_timeout,
        first_through=lambda: holds.first_through(),
    )
    holds = Holds(
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
    )
    page_answers = PageAnswers(
        admission=admission,
        pauses=pauses,
        events=events,
        clock=clock,
        count_response=count_response,
        take_queued=take_queued,
    )
    components = Components(cache, robots, holds, used, pauses, admission, page_answers)
    return components


def _announcer(events: Events, document: UsageDocument) -> Announce:
    def announce(state: Any, previous: Any, now: float, trigger: Any, from_store: bool) -> None:
        events.document_resolved(document, state)

    return announce


class _Lenient:
    """A judge that refuses nothing (components built without the crawl's verdicts)."""

    def refusal(self, state: Any, request: Request) -> Why | None:
        return None

    def usage_refusal(self, state: Any, request: Request, known: Any) -> Why | None:
        return None

    certain_refusal = usage_refusal

    def same_agents(self, judged: bytes | None, now: bytes | None) -> bool:
        return True

    def refuse(self, request: Request, why: Why, where: Where) -> NoReturn:
        raise why.exception()


_LENIENT = _Lenient()

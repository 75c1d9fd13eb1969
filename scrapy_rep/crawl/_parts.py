"""The crawl's parts, built in one place: what ``RobotsTxtMiddleware`` runs on, and what the
unit tests drive with a ``task.Clock`` and scripted fetchers (so a wiring change breaks them).

No Crawler here: the engine comes in as the three things the parts need of it (``crawl`` a
request, whether the crawl is ``closing``, ``wake`` it), and the Scrapy side's own listener
(logging new states, ``robots_parsed``) as a ``ResolverListener``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy_rep.crawl._cache import OriginCache
from scrapy_rep.crawl._drops import Drops
from scrapy_rep.crawl._resolver import FetcherLike, Resolver, ResolverListener
from scrapy_rep.crawl._tdm import TdmFiles
from scrapy_rep.crawl._waiting import Holds

if TYPE_CHECKING:
    from scrapy.http import Request

    from scrapy_rep.core.clock import Clock
    from scrapy_rep.core.robots_file import RobotsTxt
    from scrapy_rep.crawl._events import Events
    from scrapy_rep.crawl._settings import MiddlewareSettings
    from scrapy_rep.storage.held import HeldRequests
    from scrapy_rep.storage.results import RobotsStore

__all__ = ["Parts", "build_parts"]


@dataclass(frozen=True)
class Parts:
    cache: OriginCache
    resolver: Resolver
    holds: Holds
    tdm: TdmFiles


def build_parts(
    *,
    clock: Clock,
    store: RobotsStore,
    fetcher: FetcherLike,
    tdm_fetcher: FetcherLike,
    events: Events,
    config: MiddlewareSettings,
    owner: str,
    crawl: Callable[[Request], object],
    closing: Callable[[], bool],
    wake: Callable[[], None] = lambda: None,
    crawl_delay: Callable[[RobotsTxt], float | None] | None = None,
    listeners: Sequence[ResolverListener] = (),
    held: HeldRequests | None = None,
    drops: Drops | None = None,
) -> Parts:
    """The parts, wired: the resolver is the service the others use (holds wait on it),
    and tells only its listeners. ``holds.let_go()`` (the
    crawl closing) closes them all. ``held``: where held requests live until
    ``holds.open`` gives the crawl's own place (memory by default). ``drops``: the drop path
    (by default one that delivers no errback: nothing to deliver to without a crawl)."""
    cache = OriginCache(config.limits, config.parsed_cache_size, crawl_delay)
    resolver = Resolver(
        clock=clock,
        store=store,
        fetcher=fetcher,
        cache=cache,
        events=events,
        limits=config.limits,
        lease_ttl=config.lease_ttl,
        lease_poll_interval=config.lease_poll_interval,
        owner=owner,
        listeners=listeners,
    )
    tdm = TdmFiles(clock=clock, store=store, fetcher=tdm_fetcher, limits=config.limits)

    def close_the_rest() -> None:
        resolver.close()
        tdm.close()

    holds = Holds(
        clock=clock,
        events=events,
        drops=drops if drops is not None else Drops(events, clock),
        resolver=resolver,
        hold_timeout=config.hold_timeout,
        crawl=crawl,
        closing=closing,
        wake=wake,
        on_close=close_the_rest,
        held=held,
    )
    return Parts(cache, resolver, holds, tdm)

"""Where Scrapy versions differ (2.11.2 … 2.19), one function each, for the crawl's components
and the commands.

Each function says which versions take which branch, so it can go when the oldest supported
Scrapy no longer needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.core import spidermw as _scrapy_spidermw
from scrapy.downloadermiddlewares.stats import DownloaderStats
from scrapy.dupefilters import RFPDupeFilter
from scrapy.http import Request, Response
from scrapy.utils import defer as _scrapy_defer
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.defer import Deferred, succeed

from scrapy_rep.crawl import _inline

if TYPE_CHECKING:
    from scrapy.signalmanager import SignalManager
    from twisted.python.failure import Failure

_M = TypeVar("_M")
_R = TypeVar("_R")

__all__ = [
    "ASYNC_MIDDLEWARE",
    "START_INTAKE",
    "close_requested",
    "close_spider",
    "count_download",
    "crawl",
    "download",
    "dupefilter",
    "dupefilter_seen",
    "fail_startup",
    "fleet_limits",
    "get_slot",
    "in_flight",
    "in_slot",
    "leave_active",
    "process_request",
    "raise_delay",
    "rejoin_active",
    "scrape_failure",
    "send_robots_parsed",
    "slot_key",
    "slot_limit",
    "take_queued",
    "wake",
]

#: Scrapy >= 2.14 awaits whatever a downloader middleware's ``process_request`` returns
#: (``ensure_awaitable``, which also wraps a plain ``None`` in a coroutine) and its own
#: RobotsTxtMiddleware has ``async def process_request`` / ``robot_parser``: ours are
#: ``async def`` too, so ``await super().process_request(...)`` always works. Scrapy 2.11 to
#: 2.13 expect None or a Deferred, as their own middleware returns (and their test suite checks).
ASYNC_MIDDLEWARE: bool = hasattr(_scrapy_defer, "ensure_awaitable")

#: Scrapy >= 2.13 takes start requests through spider middlewares' ``async def process_start``,
#: where one can wait: StartIntakeMiddleware paces them there. Scrapy 2.11 and 2.12 take them
#: from a plain iterator (``process_start_requests``) that cannot wait without blocking the
#: reactor: there start requests are taken as Scrapy takes them.
START_INTAKE: bool = hasattr(_scrapy_spidermw.SpiderMiddlewareManager, "process_start")

#: What a final gate returns: None (download it), a Request (to the scheduler again), or a
#: coroutine waiting for robots.txt (raising IgnoreRequest if the answer is no, returning a
#: Response that answers the request, a Request to the scheduler again, or None to download
#: it).
FinalGate = Callable[
    [Any, Request], Coroutine[Any, Any, Response | Request | None] | Request | None
]


def process_request(final_gate: FinalGate) -> Callable[..., Any]:
    """``final_gate`` as a downloader middleware's ``process_request`` for this Scrapy.

    ``async def`` on Scrapy >= 2.14 (see ASYNC_MIDDLEWARE); before, None, a Request or a
    Deferred, as Scrapy 2.11's own returns.
    """

    async def awaitable(
        self: Any, request: Request, spider: Any = None
    ) -> Request | Response | None:
        result = final_gate(self, request)
        return result if result is None or isinstance(result, Request) else await result

    def deferred(self: Any, request: Request, spider: Any = None) -> Any:
        # deferred_from_coro passes None and a Request through unchanged.
        return deferred_from_coro(final_gate(self, request))

    return awaitable if ASYNC_MIDDLEWARE else deferred


def downloader_middleware(crawler: Any, cls: type[_M]) -> _M | None:
    """The crawl's running downloader middleware of class ``cls`` (a subclass counts), or
    None before the engine runs. Every version's engine lists them in its downloader's
    ``middleware.middlewares`` (what Scrapy >= 2.12's ``crawler.get_downloader_middleware``
    searches); newer Scrapy raises instead of answering None for a crawler whose engine does
    not exist yet."""
    try:
        engine = crawler.engine
    except RuntimeError:
        return None
    middlewares = [] if engine is None else engine.downloader.middleware.middlewares
    return next((middleware for middleware in middlewares if isinstance(middleware, cls)), None)


def count_download(crawler: Any, request: Request, outcome: Response | Exception) -> None:
    """Count ``outcome`` as Scrapy's DownloaderStats counts each answer (``downloader/
    response_count``, ``response_status_count/<status>``, ``response_bytes``) or failure
    (``downloader/exception_count``, ``exception_type_count/<class>``), where that middleware
    is enabled: for one taken out of the chain before it reaches it.

    Scrapy 2.11 to 2.13's ``DownloaderStats.process_response`` and ``process_exception``
    require the spider; later versions (those with ASYNC_MIDDLEWARE) warn when it is given."""
    counter = downloader_middleware(crawler, DownloaderStats)
    if counter is None:
        return
    spider = () if ASYNC_MIDDLEWARE else (crawler.spider,)
    if isinstance(outcome, Exception):
        counter.process_exception(request, outcome, *spider)
    else:
        counter.process_response(request, outcome, *spider)


def download(engine: Any, request: Request) -> Deferred[Response]:
    """``request`` downloaded through the engine and every downloader middleware, as a Deferred.

    Scrapy >= 2.14 has ``engine.download_async`` (a coroutine, run by ``_inline.deliver``;
    ``engine.download`` is deprecated there); Scrapy 2.11 to 2.13 have ``engine.download``, a
    Deferred.
    """
    if hasattr(engine, "download_async"):
        return _inline.deliver(engine.download_async(request))
    return engine.download(request)  # type: ignore[no-any-return]


def close_spider(engine: Any, spider: Any, reason: str) -> None:
    """Ask the engine to close the running spider.

    Scrapy >= 2.14 has ``engine.close_spider_async(reason=...)`` (``close_spider`` is
    deprecated there); Scrapy 2.11 to 2.13 have ``engine.close_spider(spider, reason)``.
    """
    if hasattr(engine, "close_spider_async"):
        deferred_from_coro(engine.close_spider_async(reason=reason))
    else:
        engine.close_spider(spider, reason)


def slot_key(engine: Any, request: Request) -> str:
    """``request``'s download slot key, without making the slot: Scrapy >= 2.12 has the public
    ``get_slot_key(request)``, Scrapy 2.11 the private ``_get_slot_key(request, spider)``."""
    downloader = engine.downloader
    if hasattr(downloader, "get_slot_key"):
        return downloader.get_slot_key(request)  # type: ignore[no-any-return]
    return downloader._get_slot_key(request, engine.spider)  # type: ignore[no-any-return]


def get_slot(engine: Any, request: Request) -> tuple[str, Any]:
    """``request``'s download slot key and slot, taken (made if new) with the downloader's own
    ``_get_slot``: Scrapy >= 2.14 takes ``(request)``, 2.11 to 2.13 also the spider. The key
    and slot are Scrapy's own on every version (``download_slot`` meta, ``DOWNLOAD_SLOTS``,
    ``CONCURRENT_REQUESTS_PER_DOMAIN`` / ``_PER_IP``, a slot changed since)."""
    spider = () if ASYNC_MIDDLEWARE else (engine.spider,)
    return engine.downloader._get_slot(request, *spider)  # type: ignore[no-any-return]


def slot_limit(slot: Any) -> tuple[int, bool]:
    """A download slot's concurrency, and whether its delay is above 0 (Scrapy then starts one
    request per delay and holds the concurrency): every version's ``Slot`` has both."""
    return slot.concurrency, slot.delay > 0


def in_slot(slot: Any, request: Request, waiting: bool) -> None:
    """Count ``request``, waiting for a place in its download slot, in the slot's ``active``
    (``waiting``), or no longer. Every version's ``Slot.active`` holds the requests in the slot,
    queued or downloading (from ``_enqueue_request``, which adds it again, until its download
    is over); it is what Scrapy's ``DownloaderAwarePriorityQueue`` ranks slots by, so a slot's
    waiting requests make it look as busy as a slot's queue does on Scrapy < 2.14 (and keep the
    slot from the downloader's slot garbage collection).
    """
    (slot.active.add if waiting else slot.active.discard)(request)


def in_flight(engine: Any, request: Request) -> bool:
    """Is ``request`` still in ``Downloader.active`` (every version: from ``fetch`` until its
    middleware chain has returned)? True when there is no downloader to ask."""
    active = getattr(getattr(engine, "downloader", None), "active", None)
    return not isinstance(active, set) or request in active


def _unjittered(slot: Any) -> None:
    """Make ``slot``'s delay exact: a Crawl-delay is the least time between requests, which
    Scrapy's random jitter (RANDOMIZE_DOWNLOAD_DELAY: 0.5 to 1.5 times) would undercut.

    Scrapy >= 2.19 has ``Slot.jitter`` (a magnitude; ``randomize_delay`` is deprecated there);
    Scrapy 2.11 to 2.18 have ``Slot.randomize_delay``.
    """
    if hasattr(slot, "jitter"):
        slot.jitter = 0.0
    else:
        slot.randomize_delay = False


#: Per downloader, by slot key: a fleet slot's own delay and jitter (``fleet_limits``), with
#: the slot they are of (a slot the downloader collected and made again starts afresh).
#: Beside the slot, not on it: Scrapy 2.19's ``Slot`` has ``__slots__``.
_MOVED: WeakKeyDictionary[Any, dict[str, tuple[Any, float, float]]] = WeakKeyDictionary()


def fleet_limits(engine: Any, key: str, slot: Any, spacing: bool) -> tuple[int, float, float]:
    """Download slot ``key``'s concurrency, delay and jitter, for the fleet to hold.
    ``spacing``: the fleet spaces the slot's requests, so the slot's own delay (DOWNLOAD_DELAY,
    a per-slot one, a Crawl-delay) moves to the fleet and is 0 here: Scrapy's queue then holds
    no place idle. Without it (AutoThrottle, which sets every slot's delay itself) the delay
    stays the process's own and the fleet holds the concurrency only. Every version's
    ``Slot`` has ``concurrency`` and ``delay``; ``_jitter`` says where each keeps the jitter."""
    if not spacing:
        return slot.concurrency, 0.0, 0.0
    moved = _MOVED.setdefault(engine.downloader, {})
    entry = moved.get(key)
    if slot.delay > 0:
        entry = moved[key] = (slot, slot.delay, _jitter(slot))
        slot.delay = 0.0
        if len(moved) > 2 * len(engine.downloader.slots) + 64:  # slots collected since
            for gone in [
                k for k, (s, *_) in moved.items() if engine.downloader.slots.get(k) is not s
            ]:
                del moved[gone]
    if entry is None or entry[0] is not slot:
        return slot.concurrency, 0.0, 0.0
    return slot.concurrency, entry[1], entry[2]


def raise_delay(engine: Any, request: Request, delay: float) -> bool:
    """Make the shortest gap of ``request``'s download slot at least ``delay`` (a Crawl-delay:
    the least time between requests, which Scrapy's jitter, 0.5 to 1.5 times DOWNLOAD_DELAY,
    would undercut): its delay the longer of the two, exact. Where the fleet holds it
    (``fleet_limits``), the fleet's. Returns whether it changed. Every version's ``Slot`` has
    a ``delay``; ``get_slot`` and ``_unjittered`` say how each version finds (or makes) the
    slot and drops the jitter."""
    # Made now if new: the request's first download must be spaced too.
    key, slot = get_slot(engine, request)
    entry = _MOVED.get(engine.downloader, {}).get(key)
    if entry is not None and entry[0] is slot:
        _, held, jitter = entry
        if held * (1 - jitter) >= delay:
            return False
        _MOVED[engine.downloader][key] = (slot, max(held, delay), 0.0)
        return True
    if slot.delay * (1 - _jitter(slot)) >= delay:
        return False
    slot.delay = max(slot.delay, delay)
    _unjittered(slot)
    return True


def _jitter(slot: Any) -> float:
    # Scrapy >= 2.19: ``Slot.jitter``, a magnitude; 2.11 to 2.18: ``randomize_delay``, ±50 %.
    return float(slot.jitter) if hasattr(slot, "jitter") else 0.5 * bool(slot.randomize_delay)


def take_queued(engine: Any, wanted: Callable[[Request], bool]) -> list[tuple[Request, Any]]:
    """Take the requests ``wanted`` out of the queues of the downloader's slots, each with the
    Deferred the downloader would fire with its response.

    Every version queues ``(request, deferred)`` pairs in each slot's ``queue`` (a deque)
    before their download; firing the Deferred with a Request hands that request back to the
    engine, which schedules it (the downloader middlewares pass a Request result on unchanged).
    """
    taken: list[tuple[Request, Any]] = []
    for slot in list(getattr(getattr(engine, "downloader", None), "slots", {}).values()):
        queue = getattr(slot, "queue", None) or []
        before, kept = len(taken), list[tuple[Request, Any]]()
        for entry in queue:
            (taken if wanted(entry[0]) else kept).append(entry)
        if len(taken) > before:  # a slot none is taken from keeps its queue untouched
            queue.clear()
            queue.extend(kept)
    return taken


def fail_startup(crawler: Any) -> None:
    """Make ``scrapy crawl`` exit non-zero for the exception a component is about to raise
    while the crawl starts (a setting refused).

    Scrapy 2.19 fails the run for any such exception, and 2.11's ``crawl`` fails at once (its
    command exits 1); Scrapy 2.12 to 2.18 (2.13 and 2.14 checked) tell a failed start only by
    the crawler having no spider (``bootstrap_failed``), and the spider exists by then: they
    exit 0 (scrapy/scrapy#7092). The crawler is not used again: its engine was never made.
    """
    crawler.spider = None


def close_requested(engine: Any) -> bool:
    """Has the engine been asked to close the spider (CLOSESPIDER_*, Ctrl-C, an error)?

    Scrapy sends no signal when a close is asked: ``spider_closed`` comes only after every
    request in progress finished, which a request waiting for robots.txt in process_request
    never does by itself. What every version does at once is set the engine slot's
    ``closing`` Deferred (and ``running = False`` on a shutdown), so the middleware looks at
    that on its periodic tick while requests wait.
    """
    if engine is None:
        return False
    if not getattr(engine, "running", True):
        return True
    slot = _engine_slot(engine)
    return slot is None or getattr(slot, "closing", None) is not None


def dupefilter(engine: Any) -> Any:
    """The running scheduler's dupefilter (``df``), or None (no engine, or a scheduler without
    one). Every version's scheduler (``engine._slot`` on Scrapy >= 2.13, ``engine.slot``
    before) keeps it in ``df``, as scrapy-redis's does; its ``request_seen(request)`` is the
    public dupefilter API (``BaseDupeFilter``)."""
    return getattr(getattr(_engine_slot(engine), "scheduler", None), "df", None)


def dupefilter_seen(engine: Any) -> tuple[Callable[[Request], Any], Collection[Any]] | None:
    """The running scheduler's dupefilter, when it is Scrapy's own ``RFPDupeFilter``: the
    fingerprint function it files requests by and the set it files them in (``request_seen``
    is "fingerprint in the set"). None for any other dupefilter: a subclass or another
    scheduler's may decide otherwise.

    Scrapy >= 2.19 keeps raw fingerprints in ``_fingerprints`` (``fingerprints`` is a
    deprecated copy), from ``fingerprinter.fingerprint`` unless ``request_fingerprint`` is
    overridden (then None); earlier versions keep their hex form, ``request_fingerprint``, in
    ``fingerprints`` (an instance attribute there, a property on 2.19).
    """
    found = dupefilter(engine)
    if type(found) is not RFPDupeFilter:
        return None
    state = vars(found)
    if isinstance(raw := state.get("_fingerprints"), set) and not state.get("_legacy_fingerprint"):
        return found.fingerprinter.fingerprint, raw
    if isinstance(hexed := state.get("fingerprints"), set):
        return found.request_fingerprint, hexed
    return None


def _engine_slot(engine: Any) -> Any:
    # Scrapy >= 2.13: ``engine._slot``; Scrapy 2.11/2.12: ``engine.slot``.
    return getattr(engine, "_slot", None) or getattr(engine, "slot", None)


def leave_active(engine: Any, request: Request) -> bool:
    """Take a request waiting in process_request out of ``Downloader.active``.

    ``Downloader.fetch`` (every version) adds the request to ``active`` before the
    middlewares run and removes it after; ``needs_backout`` compares ``len(active)`` with
    CONCURRENT_REQUESTS. A request that only waits for robots.txt must not take a place
    another origin's request could use. Returns whether it was there (put it back then).
    """
    active = getattr(getattr(engine, "downloader", None), "active", None)
    if not isinstance(active, set) or request not in active:
        return False
    active.discard(request)
    # Ask the engine for its next request now rather than at its next 5 s heartbeat.
    wake(engine)
    return True


def crawl(crawler: Any, request: Request) -> None:
    """``engine.crawl`` (every version): ``request`` to the scheduler, the engine running."""
    crawler.engine.crawl(request)


def wake(engine: Any) -> None:
    """Have the engine look for its next request, and for idleness, on the next reactor turn.

    Every version's engine slot has ``nextcall`` (a ``CallLaterOnce``); without a nudge the
    engine looks again only at its 5 s heartbeat.
    """
    slot = _engine_slot(engine)
    if slot is not None:
        slot.nextcall.schedule()


def rejoin_active(engine: Any, request: Request) -> None:
    """Undo ``leave_active`` before process_request returns: ``fetch`` removes it again.

    Scrapy 2.11 removes with ``set.remove`` in a callback and 2.12+ in a ``finally``: both
    raise KeyError if the request is missing, so it must be back whatever the outcome.
    """
    engine.downloader.active.add(request)


def scrape_failure(engine: Any, request: Request, failure: Failure) -> Any:
    """Hand ``failure`` of ``request`` to Scrapy's scraper, as the engine hands it a download
    error: the errback runs, its output is processed (items to the pipelines, requests to the
    engine), and an errback that raises gives ``spider_error``. The scraper counts it as
    being processed until then, so the crawl does not close meanwhile.

    Every version has ``Scraper.enqueue_scrape``, which returns a Deferred; Scrapy 2.11 and
    2.12 (those without START_INTAKE) need the spider too. Once it is done the engine is woken:
    every version looks for idleness after a download, not after a failure handed to the
    scraper, and Scrapy 2.11 then waited for its 5 s heartbeat to close a crawl whose last
    request was dropped."""
    spider = () if START_INTAKE else (engine.spider,)
    return engine.scraper.enqueue_scrape(failure, request, *spider).addBoth(_woken, engine)


def _woken(result: _R, engine: Any) -> _R:
    wake(engine)
    return result


def send_robots_parsed(manager: SignalManager, **kwargs: Any) -> Deferred[Any]:
    """Send Scrapy's ``robots_parsed`` signal; fires when every handler has finished.

    Scrapy >= 2.18 has the signal, and ``send_catch_log_async`` (Scrapy >= 2.14) runs
    ``async def`` handlers to completion, as Scrapy's own middleware sends it (the synchronous
    ``send_catch_log`` would leave them "never awaited"). Scrapy 2.11 to 2.17 have no such
    signal: nothing to send.
    """
    signal = getattr(signals, "robots_parsed", None)
    if signal is None:
        return succeed(None)
    return deferred_from_coro(manager.send_catch_log_async(signal=signal, **kwargs))

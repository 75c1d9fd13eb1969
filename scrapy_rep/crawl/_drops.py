"""The one drop path: every request scrapy-rep does not download goes through ``Drops``.

It counts and logs the drop (through ``Events``), remembers it for the closing summary, warns
once per origin when a start request is refused, and delivers the request's errback as Scrapy
delivers one for a download error (SPEC C3):

- **before scheduling** (the gate, a ``request_scheduled`` handler, where Scrapy calls nothing
  for an ``IgnoreRequest``) and **after waiting** (held requests the crawl stopped waiting for):
  the errback gets a ``Failure`` of ``RequestDropped`` on a later reactor turn, through Scrapy's
  scraper (``_compat.scrape_failure``): its output goes where a download error's goes (items
  to the pipelines, requests to the engine, not through spider middlewares), and an errback
  that raises gives Scrapy's ``spider_error``. Never inside the signal handler: on Scrapy 2.11
  an errback run there would re-enter the engine. The crawl stays open while deliveries are
  pending (``pending``).
- **before download** (the final gate, ``process_request``): the ``RequestDropped`` is raised
  there, and Scrapy calls the errback itself, as for its own middleware.
- **a duplicate** of a request dropped before scheduling (same fingerprint, not
  ``dont_filter``) gets what Scrapy's dupefilter gives it: no errback, one ``request_dropped``.
- **filtered by a page's rules** (``nofollow``, ``rel="nofollow"``: the page middleware
  counts and logs them, per page): remembered for the closing summary only, no errback, as
  Scrapy's ``DepthMiddleware`` filters requests (``filtered``).
- **the crawl closing** (a request arriving once everything was let go) is treated as Scrapy
  treats requests left in its scheduler: no errback. ``engine.download`` callers still waiting
  then are counted here too, and their Deferreds fail with the reason (``Room``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

from twisted.python.failure import Failure

from scrapy_rep.core.seen import BoundedSet
from scrapy_rep.core.stats import FORBIDDEN_DUPLICATE
from scrapy_rep.crawl._events import Where, Why
from scrapy_rep.crawl.exceptions import RequestDropped

if TYPE_CHECKING:
    from scrapy.http import Request

    from scrapy_rep.core.clock import Clock
    from scrapy_rep.crawl._events import Events

__all__ = ["SUMMARY_ORIGINS", "Drops", "FilterKind"]

#: Origins the closing summary names at most; origins remembered for it at most.
SUMMARY_ORIGINS = 10
_TRACKED_ORIGINS = 10_000
#: The closing summary's words for requests a page's rules filtered (no errback, so no reason
#: code of ``RequestDropped``), as the page level's stats name them.
FilterKind = Literal["nofollow", "rel_nofollow"]


class _Kind:
    """An origin's requests dropped for one reason (a ``DropReason``, or a ``FilterKind``)."""

    __slots__ = ("alike", "count", "words")

    def __init__(self, count: int, words: str) -> None:
        self.count = count
        #: What the first one was dropped for.
        self.words = words
        #: Every one counted here was dropped for ``words``.
        self.alike = True

    def text(self, kind: str) -> str:
        return f"{self.count} {kind} ({'' if self.alike else 'first: '}{self.words})"


class Drops:
    def __init__(
        self,
        events: Events,
        clock: Clock,
        *,
        deliver: Callable[[Request, Failure], object] | None = None,
        signal_dropped: Callable[[Request], object] | None = None,
    ) -> None:
        """``deliver`` hands a request's failure to Scrapy's scraper (None: nobody to tell, the
        unit tests); ``signal_dropped`` sends ``request_dropped``."""
        #: Told of each request dropped, with why (the compliance record's; None: none).
        self.record: Callable[..., object] | None = None
        self._events = events
        self._clock = clock
        self._deliver = deliver
        self._signal_dropped = signal_dropped
        self._queue: list[tuple[Request, Why]] = []
        # Origins whose refused start request was warned about.
        self._warned: BoundedSet[str] = BoundedSet()
        # Per origin (the first _TRACKED_ORIGINS), per reason: requests dropped, and why the
        # first one was.
        self._by_origin: dict[str, dict[str, _Kind]] = {}
        self._total = 0

    def refuse(self, request: Request, why: Why, where: Where) -> RequestDropped:
        """One request refused by a gate: counted, logged, its errback delivered (before
        scheduling); return the exception the gate raises."""
        self._events.refused(request, why, where)
        self._remember(why, 1)
        if self.record is not None:
            self.record(request, why)
        # A start request is refused at the gate, or at the final gate when it was its
        # origin's first request (it waited there for robots.txt).
        if request.meta.get("is_start_request") and self._warned.add(why.origin or ""):
            self._events.start_refused(request, why)
        if where != "before_download":
            self._later(request, why)
        return why.exception()

    def duplicate(self, request: Request) -> None:
        """A request refused before, seen again: what Scrapy's dupefilter would do with it."""
        self._events.count(FORBIDDEN_DUPLICATE)
        if self._signal_dropped is not None:
            self._signal_dropped(request)

    def drop(self, origin: str, requests: Sequence[Request], why: Why, *, waiters: int = 0) -> None:
        """Held requests (and ``waiters``, ``engine.download`` callers whose Deferreds fail
        with the reason) the crawl stopped waiting for: one log line for the origin; each
        held request's errback delivered, unless the crawl is closing."""
        count = len(requests) + waiters
        if not count:
            return
        self._events.dropped(origin, count, why)
        self._remember(why, count)
        if self.record is not None:
            for request in requests:
                self.record(request, why)
        if why.reason != "closing":
            for request in requests:
                self._later(request, why)

    def kept(self, requests: Sequence[Request], why: Why) -> None:
        """Held requests put aside for the job's next run (counted and logged by the room):
        for the compliance record."""
        if self.record is not None:
            for request in requests:
                self.record(request, why, kept=True)

    def held_at_close(self, peek: Callable[[], Sequence[Request]], *, kept: bool) -> None:
        """The requests still held when the crawl closed (``peek`` reads them, only for the
        record): kept for the next run where their place is durable, else not downloaded."""
        if self.record is not None:
            words = "held when the crawl closed" + ("" if kept else ", in memory only")
            why = Why("closing", words)
            for request in peek():
                self.record(request, why, kept=kept)

    def filtered(self, origin: str | None, count: int, reason: str, kind: FilterKind) -> None:
        """``count`` requests of ``origin`` a page's rules filtered out of its callback's output
        (the page middleware counted and logged them; no errback, as ``DepthMiddleware``):
        in the closing summary, as ``kind`` with ``reason``."""
        if count:
            self._count(origin, kind, count, lambda: reason, cheap=True)

    def pending(self) -> bool:
        """Are errbacks waiting to be delivered (the crawl must stay open)?"""
        return bool(self._queue)

    def summarize(self) -> None:
        """At close: the origins with the most dropped requests, each reason counted apart."""
        totals = [
            (origin, sum(kind.count for kind in kinds.values()), kinds)
            for origin, kinds in self._by_origin.items()
        ]
        totals.sort(key=lambda item: -item[1])
        top = [
            (origin, _described(total, kinds)) for origin, total, kinds in totals[:SUMMARY_ORIGINS]
        ]
        self._events.drop_summary(self._total, len(self._by_origin), top)

    def _remember(self, why: Why, count: int) -> None:
        # A Disallow's words cost a second match (``Why.rule`` is then a callable): worked out
        # for the first of its origin only, the later ones not compared with it.
        self._count(why.origin, why.reason, count, why.summary, cheap=not callable(why.rule))

    def _count(
        self, origin: str | None, kind: str, count: int, words: Callable[[], str], *, cheap: bool
    ) -> None:
        """``count`` more dropped from ``origin`` for ``kind``; ``words``: why, worked out for
        the first of its kind, and for a later one when ``cheap``, to tell if it is alike."""
        self._total += count
        tracked = origin in self._by_origin or len(self._by_origin) < _TRACKED_ORIGINS
        if origin is None or not tracked:
            return
        kinds = self._by_origin.setdefault(origin, {})
        known = kinds.get(kind)
        if known is None:
            kinds[kind] = _Kind(count, words())
        else:
            known.count += count
            known.alike = known.alike and cheap and words() == known.words

    def _later(self, request: Request, why: Why) -> None:
        if self._deliver is None or not request.errback:
            # Without an errback Scrapy's scraper does nothing visible with an IgnoreRequest.
            return
        self._queue.append((request, why))
        if len(self._queue) == 1:
            self._clock.callLater(0, self._flush, self._deliver)

    def _flush(self, deliver: Callable[[Request, Failure], object]) -> None:
        queue, self._queue = self._queue, []
        for request, why in queue:
            # A new exception, never raised, so without a traceback: the one the gate raised
            # has one, whose frames reach back (f_back) through Scrapy's engine to the scraper
            # frame that handled the errback yielding this request, and so to that errback's
            # Failure. Delivered, it would keep every drop of an errback chain alive.
            try:
                deliver(request, Failure(why.exception()))  # type: ignore[no-untyped-call]
            except Exception:  # the scraper is gone (crawl closed): nothing left to tell
                self._events.undelivered(request)


def _described(total: int, kinds: dict[str, _Kind]) -> str:
    """An origin's line of the closing summary: ``3 disallowed (first: …)``, or with several
    reasons ``6 = 3 disallowed (first: …) + 3 nofollow (…)``, the most frequent first."""
    ordered = sorted(kinds.items(), key=lambda item: -item[1].count)
    parts = " + ".join(kind.text(name) for name, kind in ordered)
    return parts if len(ordered) == 1 else f"{total} = {parts}"

"""``LastLook``: what ``RobotsTxtGuard``, the last downloader middleware, asks of every request
before its download slot (the admission's last two steps).

- ``Admission.again``: a request whose URL or User-Agent tokens a downloader middleware changed
  since its verdict was given (one that rotates User-Agents, at 400 say) is judged again.
- ``Admission.leaving`` (``PageAnswers.page_leaving``): a page whose route paused since it was
  admitted goes back to the gate.
- ``Admission.room`` (``_slots``): a request over its download slot's concurrency waits for a
  place, off ``Downloader.active``, so the engine keeps feeding other sites meanwhile.

A wait the crawl's close ends (``SlotClosed``): a request from the scheduler goes back to the
gate, where the admission has it held (``send_back(closing=True)``), as requests left in
Scrapy's scheduler are kept or left; an ``engine.download`` caller is dropped with the reason
``closing``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from scrapy_rep.crawl._admission import Drop, Wait
from scrapy_rep.crawl._slots import SlotClosed
from scrapy_rep.crawl.guard_middleware import is_fetch

if TYPE_CHECKING:
    from scrapy.http import Request
    from twisted.internet.defer import Deferred

    from scrapy_rep.crawl._admission import Admission
    from scrapy_rep.crawl._holds import Holds
    from scrapy_rep.crawl._page_answers import PageAnswers
    from scrapy_rep.crawl._slots import Slots
    from scrapy_rep.crawl._verdict import Verdicts

__all__ = ["LastLook"]


class LastLook:
    def __init__(
        self,
        *,
        admission: Admission,
        holds: Holds,
        verdicts: Verdicts,
        page_answers: PageAnswers | None,
        slots: Slots | None,
        off_active: Callable[[Deferred[None], Request], Awaitable[object]],
    ) -> None:
        """``page_answers``: None when pauses are off; ``slots``: None when
        REP_SLOT_CONCURRENCY is off; ``off_active``: waits for a
        Deferred with the request out of ``Downloader.active`` (the final gate's wait)."""
        self._admission = admission
        self._holds = holds
        self._verdicts = verdicts
        self._page_answers = page_answers
        self._slots = slots
        self._off_active = off_active

    def __call__(self, request: Request) -> Request | Coroutine[Any, Any, Request | None] | None:
        """None to go on, a Request to send back, or a coroutine waiting for a place. A
        request whose URL or User-Agent a middleware changed since it was judged is judged
        again first: dropped, sent back to wait, or on."""
        again = self._admission.again(request)
        if isinstance(again, Drop):
            self._verdicts.refuse(request, again.why, "before_download")
        if isinstance(again, Wait):
            return self._admission.send_back(request)
        back = self._paused_since(request)
        if back is not None:
            return back
        waiter = self._admission.room(request)
        if waiter is None:
            return None
        return self._slot_wait(request, waiter)

    def _paused_since(self, request: Request) -> Request | None:
        if self._page_answers is None or is_fetch(request):
            return None
        return self._page_answers.page_leaving(request)

    async def _slot_wait(self, request: Request, waiter: Deferred[None]) -> Request | None:
        """Wait for a place in ``request``'s download slot (``waiter``; counted in its Scrapy
        slot meanwhile, by ``Slots``). Its route may have paused meanwhile: back it goes then,
        and its place to the next."""
        slots = self._slots
        assert slots is not None
        try:
            await self._off_active(waiter, request)
        except SlotClosed:
            return self._closed(request, slots)
        back = self._paused_since(request)
        if back is not None:
            slots.left(request)
        return back

    def _closed(self, request: Request, slots: Slots) -> Request:
        """The crawl closes while ``request`` waits for a place: one from the scheduler (it
        carries the gate's token) goes back to the gate to be held (kept for the next run
        where held requests are durable, else said as not downloaded); an ``engine.download``
        caller is dropped with the reason. The rest of the crawl's closing is left to the
        holds, which notice it on their own tick."""
        origin = self._admission.origin(request)
        if origin is not None and self._admission.from_scheduler(request):
            return self._admission.send_back(request, closing=True)
        why = self._holds.closed_why(origin or request.url, slots.no_place)
        self._verdicts.refuse(request, why, "before_download")

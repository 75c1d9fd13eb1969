"""``PageAnswers``: pausing on what pages answer (SPEC H), for ``RobotsTxtGuard``.

A page's answer is looked at twice: as the downloader has it (``response_downloaded``, before its
slot sends the next request: ``downloaded``), where it may pause its route (``Pauses.answered``),
and before RetryMiddleware and the HTTP cache see it (``page_answered``, called by the guard),
where the request that got a "slow down" goes back to the gate, to be sent again after the
pause. A page leaving for its slot gets one last look (``page_leaving``: the admission's), a
page that got no answer counts as a 5xx and a probe that got none keeps its route paused
(``page_failed``), and a route that pauses sends
back the requests waiting in its download slot (``evict``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from weakref import WeakSet

from scrapy_rep.core.pause import no_answer, page_answer
from scrapy_rep.core.policy import parse_retry_after
from scrapy_rep.core.proxy import proxy_failure
from scrapy_rep.core.stats import PAUSE_PASSED, PAUSE_RESENT
from scrapy_rep.crawl._fetch import describe_failure, header_values
from scrapy_rep.crawl._pauses import exempt, route
from scrapy_rep.crawl.guard_middleware import is_fetch

if TYPE_CHECKING:
    from scrapy.http import Request, Response

    from scrapy_rep.core.clock import Clock
    from scrapy_rep.crawl._admission import Admission
    from scrapy_rep.crawl._events import Events
    from scrapy_rep.crawl._pauses import Pauses

__all__ = ["PageAnswers"]


class PageAnswers:
    def __init__(
        self,
        *,
        admission: Admission,
        pauses: Pauses,
        events: Events,
        clock: Clock,
        count_download: Callable[[Request, Response | Exception], None],
        take_queued: Callable[[Callable[[Request], bool]], list[tuple[Request, Any]]],
    ) -> None:
        """``count_download``: count an answer or a failure as Scrapy's DownloaderStats would
        (one taken out of the chain before it); ``take_queued``: take requests out of the
        download slots."""
        self._admission = admission
        self._pauses = pauses
        self._events = events
        self._clock = clock
        self._count_download = count_download
        self._take_queued = take_queued
        # Requests whose answer paused their route: sent again after the pause. A hand-off
        # inside this process, from ``downloaded`` to ``page_answered``.
        self._resend: WeakSet[Request] = WeakSet()

    def downloaded(self, response: Response, request: Request, spider: object = None) -> None:
        """A page's answer, as the downloader has it (``response_downloaded``): does it pause
        its route (SPEC H1)? A cached copy never comes here (SPEC H4)."""
        try:
            status = response.status
            # The hot path: an answer, and nothing struggling or probing to tell of it.
            if page_answer(status) == "ok" and self._pauses.quiet(request):
                return
            if is_fetch(request) or exempt(request):
                return
            if (origin := self._admission.origin(request)) is None:
                return
            if proxy_failure(status, header_values(response, b"Proxy-Status")) is not None:
                # The proxy's (or API's) own 429/503 says nothing of the site (SPEC H4).
                self._pauses.not_probed(request)
                return
            # An HTTP-date Retry-After is read against the wall clock, at once (into a delay).
            retry_after = parse_retry_after(header_values(response, b"Retry-After"), time.time())
            if self._pauses.answered(route(origin, request), request, status, retry_after):
                self._resend.add(request)
        except Exception as exc:
            # A site's answer must never break the crawl's handling of it: once in the log.
            self._events.contained("a page's answer", exc)

    def page_leaving(self, request: Request) -> Request | None:
        """The last look at a page before its download slot (RobotsTxtGuard, after every other
        middleware): back to the gate if the admission says so (None: let it go; a robots.txt
        fetch always)."""
        if is_fetch(request) or not self._admission.leaving(request):
            return None
        return self._admission.send_back(request)

    def page_answered(self, request: Request, response: Response) -> Response | Request:
        """A page's answer, before RetryMiddleware and the HTTP cache see it (RobotsTxtGuard):
        the answer, or ``request`` to be sent again after its route's pause (SPEC H3)."""
        if request not in self._resend:
            return response
        self._resend.discard(request)
        meta = request.meta
        if (
            meta.get("dont_retry")
            or meta.get("handle_httpstatus_all")
            or response.status in (meta.get("handle_httpstatus_list") or ())
        ):
            # The spider asked for this status (Scrapy's HttpErrorMiddleware keys) or for no
            # retry: it gets it; the route pauses for the others.
            self._events.count(PAUSE_PASSED)
            return response
        self._events.count(f"{PAUSE_RESENT}/{response.status}")
        # Taken out before DownloaderStats (850) sees it: counted as it would count it.
        self._count_download(request, response)
        return self._admission.send_back(request)

    def page_failed(self, request: Request, error: Exception) -> Request | None:
        """A page's download failed: sent again after its route's pause if it was the probe, or
        if the site gave no answer and the route pauses (or had paused) for it (SPEC H1, H3:
        RetryMiddleware then spends no retry on it); anything else is left to Scrapy."""
        if exempt(request) or (origin := self._admission.origin(request)) is None:
            return None
        key = route(origin, request)
        if not self._pauses.unanswered(key, request, describe_failure(error), no_answer(error)):
            return None
        self._events.count(f"{PAUSE_RESENT}/{type(error).__name__}")
        # Taken out before DownloaderStats (850) sees it: counted as it would count it.
        self._count_download(request, error)
        return self._admission.send_back(request)

    def evict(self, key: str) -> None:
        """Route ``key`` pauses: its requests waiting in a download slot go back to the gate
        (held there) instead of going out during the pause."""

        def mine(queued: Request) -> bool:
            origin = None if exempt(queued) else self._admission.origin(queued)
            return origin is not None and route(origin, queued) == key

        for queued, deferred in self._take_queued(mine):
            self._events.count(f"{PAUSE_RESENT}/queued")
            # Fired on the next turn: not inside the answer being handled now.
            self._clock.callLater(0, deferred.callback, self._admission.send_back(queued))

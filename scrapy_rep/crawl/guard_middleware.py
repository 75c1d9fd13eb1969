"""``RobotsTxtGuard``: the last downloader middleware a request passes (``GUARD_ORDER`` = 950).

For robots.txt requests (``is_fetch``: scrapy-rep's own fetches while they are downloaded, and a
middleware's rewrite of one), what must not be left to the middlewares they
pass on their way (SPEC B2):

- **Scheme**: only an http, https or ftp download handler may serve one; any other is refused
  (``IgnoreRequest``, stat ``robotstxt/scheme_refused``), should a middleware have rewritten it.
- **Size after decoding** (SPEC B4: the first 512,000 bytes count). Above Scrapy's
  ``HttpCompressionMiddleware`` (590), which decodes whole bodies bounded only by
  ``DOWNLOAD_MAXSIZE``, it decodes robots.txt bodies itself with an output bound, marks a cut
  with ``TRUNCATED_FLAG`` and drops ``Content-Encoding``; ``Accept-Encoding`` is set to what it
  can decode that way.

Every request's last look before its download slot (``leaving``: ``_room.Room.last_look``: a
page whose route paused since goes back; a request over its slot's concurrency waits, where
Scrapy does not hold it). Pages' "slow down" answers (SPEC H) are handed to ``PageAnswers``
(``_page_answers.py``): a page's answer before RetryMiddleware (550) and the HTTP cache (900),
and a probe's failure. Pages are otherwise not touched. Both are what the crawler's
RobotsTxtMiddleware serves (``serve``): built before the guard (its order is lower, as
``check_wiring`` requires), it leaves them for the guard to be built with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol
from weakref import WeakKeyDictionary

from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import load_object

from scrapy_rep.core.decode import ACCEPT_ENCODING, decode, split_codings
from scrapy_rep.core.origin import ROBOTS_SCHEMES
from scrapy_rep.core.parser import MAX_BODY_BYTES
from scrapy_rep.crawl import _compat
from scrapy_rep.crawl._events import Events

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response
    from scrapy.settings import BaseSettings

__all__ = [
    "GUARD",
    "GUARD_ORDER",
    "ROBOTS_META",
    "TRUNCATED_FLAG",
    "RobotsTxtGuard",
    "check_wiring",
    "fetch_over",
    "is_fetch",
    "live_mark",
    "mark_fetch",
    "serve",
]

GUARD = "scrapy_rep.RobotsTxtGuard"
#: Above HttpCompressionMiddleware (590) and every other built-in downloader
#: middleware (HttpCacheMiddleware is 900): first to see a robots.txt response.
GUARD_ORDER = 950
#: Meta key marking this package's own robots.txt (and usage-document) requests, for the
#: spider's downloader middlewares (true while the fetch is downloaded).
ROBOTS_META = "rep_robotstxt"


class _FetchMark(int):
    """``ROBOTS_META``'s value on one fetch: 1, true as for any reader, and its own object, so
    that a middleware's ``replace`` of the fetch (which copies its meta) is still the fetch and
    still checked here, while a copy of it taken once the fetch is over (a spider copying meta)
    is a mark that ended: a page given it gets no robots.txt treatment. It carries the fetch's
    byte count, kept by the fetcher that made it (``owner``): one count per fetch, whatever
    copies of the request the middlewares make, gone with it."""

    over = False
    owner: object = None
    received = 0
    #: For the compliance record: the request as it left (the guard's last look) and the
    #: answer as it came, before the guard decoded it.
    sent: Request | None = None
    raw: Response | None = None


def mark_fetch(request: Request, owner: object = None) -> Request:
    """``request`` is one of scrapy-rep's own robots.txt or usage-document fetches, made by
    ``owner``."""
    mark = request.meta[ROBOTS_META] = _FetchMark(1)
    mark.owner = owner
    return request


def live_mark(request: Request) -> _FetchMark | None:
    """The mark of ``request``, one of scrapy-rep's own fetches being downloaded, or None."""
    mark = request.meta.get(ROBOTS_META)
    return mark if type(mark) is _FetchMark and not mark.over else None


def fetch_over(request: Request) -> None:
    """``request``'s download is over (answered or failed): its mark ends."""
    if (mark := live_mark(request)) is not None:
        mark.over = True


def is_fetch(request: Request) -> bool:
    """Is ``request`` one of scrapy-rep's own fetches being downloaded (``mark_fetch``)?"""
    return live_mark(request) is not None


#: Response flag: the decoded body was cut at 512,000 bytes.
TRUNCATED_FLAG = "robotstxt_decoded_truncated"


class PageAnswers(Protocol):
    """What is done with pages' answers (SPEC H): ``_page_answers``."""

    def page_answered(self, request: Request, response: Response) -> Response | Request: ...

    def page_failed(self, request: Request, error: Exception) -> Request | None: ...


#: The last look before the download slot: None to go on, a Request to send back, or a
#: coroutine waiting for a place in the slot.
LastLook = Callable[["Request"], Any]

#: Per crawler, what its RobotsTxtMiddleware serves the guard (``serve``).
_SERVED: WeakKeyDictionary[Crawler, tuple[LastLook, PageAnswers | None]] = WeakKeyDictionary()


def serve(crawler: Crawler, leaving: LastLook, page_answers: PageAnswers | None) -> None:
    """RobotsTxtMiddleware's part for ``crawler``'s guard, left before the guard is built:
    the last look, and who is told of pages' answers (None: pauses are off)."""
    _SERVED[crawler] = (leaving, page_answers)


class RobotsTxtGuard:
    """Scheme check and bounded decoding for robots.txt requests; see the module docstring."""

    def __init__(self, crawler: Crawler) -> None:
        self._events = Events(crawler.stats, lambda: crawler.spider)
        # None: scrapy_rep's RobotsTxtMiddleware is not enabled (nothing to look at).
        leaving, page_answers = _SERVED.get(crawler, (None, None))
        self.leaving: LastLook | None = leaving
        self.page_answers: PageAnswers | None = page_answers

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsTxtGuard:
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured("ROBOTSTXT_OBEY is False")
        return cls(crawler)

    def _last_look(self, request: Request) -> Any:
        if (mark := live_mark(request)) is not None:
            mark.sent = request
            scheme = urlparse_cached(request).scheme
            if scheme not in ROBOTS_SCHEMES:
                self._events.scheme_refused(request.url, scheme)
                raise IgnoreRequest(f"robots.txt request to a {scheme}: URL refused")
            request.headers[b"Accept-Encoding"] = ACCEPT_ENCODING
        return None if self.leaving is None else self.leaving(request)

    process_request = _compat.process_request(_last_look)

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response | Request:
        if (mark := live_mark(request)) is None:
            answers = self.page_answers
            return response if answers is None else answers.page_answered(request, response)
        mark.raw = response
        values = response.headers.getlist(b"Content-Encoding")
        if request.method == "HEAD" or not values:
            return response
        headers = response.headers.copy()
        del headers[b"Content-Encoding"]
        # Raises DecodeError (the fetch then counts as a broken response, SPEC B2).
        body, truncated = decode(response.body, split_codings(values), MAX_BODY_BYTES)
        flags = [*response.flags, TRUNCATED_FLAG] if truncated else response.flags
        return response.replace(body=body, headers=headers, flags=flags)

    def process_exception(
        self, request: Request, exception: Exception, spider: Spider | None = None
    ) -> Request | None:
        if self.page_answers is None or is_fetch(request):
            return None
        return self.page_answers.page_failed(request, exception)


def check_wiring(settings: BaseSettings, middleware: type | None = None) -> None:
    """Raise ValueError saying what to add unless the guard runs before decompression and,
    given ``middleware`` (RobotsTxtMiddleware's class), after it."""
    orders: dict[type, Any] = {}
    for key, order in settings.getwithbase("DOWNLOADER_MIDDLEWARES").items():
        try:
            cls = load_object(key) if isinstance(key, str) else key
        except (ImportError, NameError, ValueError, AttributeError):
            continue  # Scrapy itself reports a component that cannot be loaded
        if isinstance(cls, type):
            orders[cls] = order
    guard_order = orders.get(RobotsTxtGuard)
    line = f'"{GUARD}": {GUARD_ORDER},'
    if guard_order is None:
        raise ValueError(
            f"scrapy_rep.RobotsTxtMiddleware needs {GUARD} to fetch robots.txt safely "
            f"(scheme check, bounded decompression): add {line} to DOWNLOADER_MIDDLEWARES, "
            f'or enable everything with ADDONS = {{"scrapy_rep.Addon": 0}}'
        )
    order = None if middleware is None else orders.get(middleware)
    if order is not None and order >= guard_order:
        raise ValueError(
            f"scrapy_rep.RobotsTxtMiddleware is at {order} in DOWNLOADER_MIDDLEWARES, not below "
            f"{GUARD} ({guard_order}), which must see every request after it: use "
            f'"scrapy_rep.RobotsTxtMiddleware": 100 and {line}'
        )
    above = [
        order
        for cls, order in orders.items()
        if order is not None and issubclass(cls, HttpCompressionMiddleware) and order >= guard_order
    ]
    if above and settings.getbool("COMPRESSION_ENABLED"):
        raise ValueError(
            f"{GUARD} is at {guard_order} in DOWNLOADER_MIDDLEWARES, not above "
            f"HttpCompressionMiddleware ({max(above)}), which would then decompress robots.txt "
            f"without a size bound: use {line} or any order above {max(above)}"
        )

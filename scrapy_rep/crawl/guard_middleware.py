"""``RobotsTxtGuard``: the last downloader middleware a robots.txt request passes.

``scrapy_rep.RobotsTxtMiddleware`` fetches robots.txt through the engine and
every downloader middleware (SPEC B2). Two things must not be left to them:

- **Scheme.** Only an ``http``, ``https`` or ``ftp`` download handler may serve
  a robots.txt request. The fetcher only builds such requests; this guard
  refuses any other (``IgnoreRequest``, stat ``robotstxt/scheme_refused``)
  should a middleware between the fetcher and the downloader have rewritten one
  (``request.replace`` keeps the meta that marks it).
- **Size after decoding** (SPEC B4: the first 512,000 bytes count). Scrapy's
  ``HttpCompressionMiddleware`` (590) decodes whole bodies before the
  robots.txt middleware (100) sees them, bounded only by ``DOWNLOAD_MAXSIZE``
  (1 GiB by default; a smaller per-request maxsize fails instead of
  truncating, and older Scrapy does not bound br per input chunk). This guard
  sits above it (``GUARD_ORDER`` = 950), so its ``process_response`` runs
  first: it decodes robots.txt bodies itself with an output bound
  (``scrapy_rep.core.decode``), marks a cut with the response flag
  ``TRUNCATED_FLAG``, and drops ``Content-Encoding`` so that nothing decodes
  them again. ``process_request`` sets ``Accept-Encoding`` to what can be
  decoded that way, after every lower middleware had its say.

- **Pages' "slow down"** (SPEC H). A page leaving for its download slot is looked at last here
  (``page_leaving``): one whose origin paused since the final gate goes back. A page's answer
  reaches this guard before RetryMiddleware
  (550) and the HTTP cache (900): it hands it to ``RobotsTxtMiddleware.page_answered``, which
  gives back the answer, or the request to be sent again once its origin's pause is over (then
  RetryMiddleware does not also retry it, nor the HTTP cache store the 503). A probe that gets
  no answer goes to ``page_failed`` the same way.

Pages are otherwise not touched: only requests marked with ``ROBOTS_META`` are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import load_object

from scrapy_rep.core.decode import ACCEPT_ENCODING, decode, split_codings
from scrapy_rep.core.origin import ROBOTS_SCHEMES
from scrapy_rep.core.parser import MAX_BODY_BYTES
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
]

GUARD = "scrapy_rep.RobotsTxtGuard"
#: Above HttpCompressionMiddleware (590) and every other built-in downloader
#: middleware (HttpCacheMiddleware is 900): first to see a robots.txt response.
GUARD_ORDER = 950
#: Meta key marking this package's own robots.txt requests.
ROBOTS_META = "rep_robotstxt"
#: Response flag: the decoded body was cut at 512,000 bytes.
TRUNCATED_FLAG = "robotstxt_decoded_truncated"

_COMPRESSION = "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware"


class PageAnswers(Protocol):
    """What RobotsTxtMiddleware does with pages leaving and their answers (SPEC H)."""

    def page_leaving(self, request: Request) -> Request | None: ...

    def page_answered(self, request: Request, response: Response) -> Response | Request: ...

    def page_failed(self, request: Request, error: Exception) -> Request | None: ...


class RobotsTxtGuard:
    """Scheme check and bounded decoding for robots.txt requests; see the module docstring."""

    def __init__(self, crawler: Crawler) -> None:
        self._events = Events(crawler.stats, lambda: crawler.spider)
        #: Who is told of pages' answers: scrapy_rep's RobotsTxtMiddleware sets itself here when
        #: the spider opens (None: it is not enabled, or pauses are off).
        self.pages: PageAnswers | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsTxtGuard:
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured("ROBOTSTXT_OBEY is False")
        return cls(crawler)

    def process_request(self, request: Request, spider: Spider | None = None) -> Request | None:
        if not request.meta.get(ROBOTS_META):
            # The last look before the download slot: a page of an origin paused since it
            # passed the final gate (SPEC H) goes back instead of out.
            pages = self.pages
            return None if pages is None else pages.page_leaving(request)
        scheme = urlparse_cached(request).scheme
        if scheme not in ROBOTS_SCHEMES:
            self._events.scheme_refused(request.url, scheme)
            raise IgnoreRequest(f"robots.txt request to a {scheme}: URL refused")
        request.headers[b"Accept-Encoding"] = ACCEPT_ENCODING
        return None

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Response | Request:
        if not request.meta.get(ROBOTS_META):
            pages = self.pages
            return response if pages is None else pages.page_answered(request, response)
        if request.method == "HEAD":
            return response
        values = response.headers.getlist(b"Content-Encoding")
        if not values:
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
        if request.meta.get(ROBOTS_META) or self.pages is None:
            return None
        return self.pages.page_failed(request, exception)


def check_wiring(settings: BaseSettings) -> None:
    """Raise ValueError saying what to add unless the guard runs before decompression."""
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
    compression = load_object(_COMPRESSION)
    above = [
        order
        for cls, order in orders.items()
        if order is not None and issubclass(cls, compression) and order >= guard_order
    ]
    if above and settings.getbool("COMPRESSION_ENABLED"):
        raise ValueError(
            f"{GUARD} is at {guard_order} in DOWNLOADER_MIDDLEWARES, not above "
            f"HttpCompressionMiddleware ({max(above)}), which would then decompress robots.txt "
            f"without a size bound: use {line} or any order above {max(above)}"
        )

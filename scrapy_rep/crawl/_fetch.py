"""One fetch of an origin's document — robots.txt, tdmrep.json, any usage document — through
Scrapy's engine (SPEC B2 redirects and statuses, B4 size).

The request goes through the engine and every downloader middleware (proxies,
headers), marked ``dont_obey_robotstxt``, ``dont_redirect`` and ``dont_retry`` (a
failure is retried by the middleware's own back-off, SPEC B2, not also by Scrapy's
RetryMiddleware) and ``dont_cache``: the HTTP cache neither serves nor stores it, so a
cached 503 is never replayed and every retry reaches the server (scrapy-rep's store is
robots.txt's cache, with Google's lifetimes, SPEC B3). It goes the way the request that
needed it goes (``via``): through its proxy (``meta["proxy"]``, None included, and a
hand-set ``Proxy-Authorization``) and with the meta keys REP_FETCH_META_KEYS names; a
proxy's own failure (407, an error ``Proxy-Status``) is "unreachable". It has its own
timeout (REP_FETCH_TIMEOUT, or DOWNLOAD_TIMEOUT if lower): a robots.txt that never
answers costs seconds per attempt. Redirects are followed here, at most
``MAX_REDIRECTS`` (cross-host allowed), and the 6th means "no robots.txt".
Redirects are followed to http and https URLs only (ftp only from an ftp
origin); see ``_redirect_target``. A ``bytes_received`` handler stops the body
after 500 KiB (``StopDownload(fail=False)``: what arrived is used);
``scrapy_rep.crawl.guard_middleware.RobotsTxtGuard`` decodes it with a bound, and only the first
512,000 bytes are kept.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Generator
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, StopDownload
from scrapy.http import Request, Response
from scrapy.http.request import NO_CALLBACK
from twisted.internet.defer import Deferred, inlineCallbacks

from scrapy_rep.core.origin import ROBOTS_SCHEMES, origin
from scrapy_rep.core.parser import MAX_BODY_BYTES
from scrapy_rep.core.policy import MAX_REDIRECTS, Fetch, classify, parse_retry_after
from scrapy_rep.core.proxy import proxy_failure
from scrapy_rep.crawl import _compat
from scrapy_rep.crawl.guard_middleware import (
    ROBOTS_META,
    TRUNCATED_FLAG,
    check_wiring,
    fetch_over,
    live_mark,
    mark_fetch,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_rep.crawl._cache import DocumentKind
    from scrapy_rep.crawl._events import Events
    from scrapy_rep.crawl._record import Recorder

__all__ = ["Fetcher", "describe_failure", "header_values"]


class Fetcher:
    """Fetches one kind of document (``kind``: where it lives, the prefix of its stats) for
    origins through ``crawler.engine``. ``timeout``: seconds one download may take;
    ``meta_keys``: what is copied from the request a fetch is made for, beside its proxy;
    ``record``: the compliance record, handed each answer (None: no record).
    """

    def __init__(
        self,
        crawler: Crawler,
        kind: DocumentKind[Any],
        events: Events,
        *,
        timeout: float,
        meta_keys: tuple[str, ...] = (),
        record: Recorder | None = None,
    ) -> None:
        check_wiring(crawler.settings)
        self._crawler = crawler
        self._document = kind.name
        self._names = kind.stats
        self._events = events
        self._ftp_password = str(crawler.settings.get("FTP_PASSWORD") or "guest")
        download_timeout = crawler.settings.getfloat("DOWNLOAD_TIMEOUT")
        self._timeout = min(timeout, download_timeout) if download_timeout > 0 else timeout
        self._meta_keys = meta_keys
        self._record = record
        self._in_flight = 0

    @inlineCallbacks
    def fetch(
        self, url: str, via: Request | None = None
    ) -> Generator[Deferred[Any], Any, tuple[Fetch, bytes | None]]:
        """Fetch ``url`` (an origin's /robots.txt, or its tdmrep.json) the way ``via`` (the
        request it is needed for; None: none known) goes; never fails."""
        answers: list[str] = []
        fetch, body = yield self._hops(url, via, answers)
        if answers:
            # Named in the entry, and so in the store: a fleet's member reading this copy
            # names this record.
            fetch = replace(fetch, record=answers[-1])
        return fetch, body

    @inlineCallbacks
    def _hops(
        self, url: str, via: Request | None, answers: list[str]
    ) -> Generator[Deferred[Any], Any, tuple[Fetch, bytes | None]]:
        """``fetch``, hop by hop; each answer's record id (or a failure's) added to
        ``answers``."""
        start = url
        redirects: tuple[str, ...] = ()
        # SPEC B1: an ftp origin's robots.txt is on ftp; nothing else but http(s).
        schemes = ROBOTS_SCHEMES if url.startswith("ftp:") else ROBOTS_SCHEMES - {"ftp"}
        while True:
            try:
                request = self._request(url, via)
            except ValueError as exc:  # a redirect target Scrapy cannot request
                return self._refused(start, url, str(exc), redirects[:-1], None)
            self._events.count(self._names.request_count)
            # The bytes_received handler costs a call per chunk of every response:
            # connect it only while a robots.txt download is running.
            self._in_flight += 1
            if self._in_flight == 1:
                self._crawler.signals.connect(self._on_bytes, signal=signals.bytes_received)
            try:
                response = yield _compat.download(self._crawler.engine, request)
            except IgnoreRequest as exc:
                # Something in the project refused the request (a custom
                # middleware): as Scrapy's own middleware does, obey nothing.
                error = f"{self._document} request ignored: {exc}"
                if self._record is not None:
                    answers.append(self._record.failed(url, error))
                return Fetch("no_robots", None, redirects, error=error), None
            except Exception as exc:
                # Scrapy's own key, as its RobotsTxtMiddleware writes it: "<class '…'>".
                self._events.count(f"{self._names.exception_count}/{type(exc)}")
                error = describe_failure(exc)
                if self._record is not None:
                    answers.append(self._record.failed(url, error))
                return Fetch("unreachable", None, redirects, error=error), None
            finally:
                fetch_over(request)
                self._in_flight -= 1
                if self._in_flight == 0:
                    self._crawler.signals.disconnect(self._on_bytes, signal=signals.bytes_received)
            if self._record is not None:
                mark = request.meta[ROBOTS_META]
                answers.append(self._record.answered(mark.sent or request, mark.raw or response))
            self._events.count(self._names.response_count)
            self._events.count(f"{self._names.response_status_count}/{response.status}")
            if urlsplit(response.url).scheme not in ROBOTS_SCHEMES:
                # Only a middleware that answers by itself gets here; use nothing.
                return self._refused(start, response.url, "not an http(s)/ftp URL", redirects, None)
            proxy_error = proxy_failure(response.status, header_values(response, b"Proxy-Status"))
            if proxy_error is not None:
                # The proxy's answer says nothing of the site: unknown, retried (SPEC B2).
                return Fetch("unreachable", response.status, redirects, error=proxy_error), None
            kind = classify(response.status)
            if kind != "redirect":
                return self._result(response, kind, redirects)
            if len(redirects) >= MAX_REDIRECTS:
                self._events.count(self._names.redirect_limit)
                error = f"more than {MAX_REDIRECTS} redirects"
                return Fetch("no_robots", response.status, redirects, error=error), None
            url, problem = _redirect_target(response, schemes)
            if problem is not None:
                return self._refused(start, url, problem, redirects, response.status)
            redirects += (url,)
            self._events.count(self._names.redirect_count)

    def _refused(
        self, url: str, target: str, problem: str, redirects: tuple[str, ...], status: int | None
    ) -> tuple[Fetch, None]:
        """SPEC B2 (a redirect not followed leaves no robots.txt): an unfollowable or
        non-HTTP target means "no robots.txt", as more than 5 redirects do (Google
        treats those as 404). The site controls its own robots.txt anyway, so this
        gives it nothing it lacks; and nothing but http(s)/ftp is ever fetched."""
        self._events.count(self._names.redirect_refused)
        error = f"redirect to {target[:200]!r} not followed: {problem}"
        self._events.redirect_refused(self._document, url, error)
        return Fetch("no_robots", status, redirects, error=error), None

    def _result(
        self, response: Response, kind: str, redirects: tuple[str, ...]
    ) -> tuple[Fetch, bytes | None]:
        status = response.status
        if kind == "no_robots":
            return Fetch("no_robots", status, redirects), None
        if kind == "unreachable":
            # An HTTP-date Retry-After is read against the wall clock, at once (into a delay):
            # the fetcher is given no clock, and a date means nothing to a test's task.Clock.
            after = parse_retry_after(header_values(response, b"Retry-After"), time.time())
            error = f"HTTP {status}"
            return Fetch("unreachable", status, redirects, error=error, retry_after=after), None
        body, flags = response.body, response.flags
        truncated = (
            "download_stopped" in flags or TRUNCATED_FLAG in flags or len(body) > MAX_BODY_BYTES
        )
        if truncated:
            self._events.count(self._names.truncated)
        cache = (response.headers.get(b"Cache-Control") or b"").decode("latin-1") or None
        fetch = Fetch("ok", status, redirects, truncated=truncated, cache_control=cache)
        return fetch, body[:MAX_BODY_BYTES]

    def _request(self, url: str, via: Request | None) -> Request:
        # The way the request that needed it goes: its proxy (an explicit None too: no
        # proxy from the environment) and the keys REP_FETCH_META_KEYS names. A site
        # behind geo or anti-bot rules answers by the address it sees.
        given = via.meta if via is not None else {}
        meta = {key: given[key] for key in ("proxy", *self._meta_keys) if key in given}
        # A hand-set header for its proxy (HttpProxyMiddleware drops it where no proxy
        # is used, and sets its own from credentials in the proxy URL).
        authorization = via.headers.get(b"Proxy-Authorization") if via is not None else None
        headers = {} if authorization is None else {b"Proxy-Authorization": authorization}
        # Its own download slot (unless the request it is made for names one): a page is not
        # delayed behind it (DOWNLOAD_DELAY, a Crawl-delay count between pages) nor waits for
        # it in its host's queue.
        meta.setdefault("download_slot", f"{urlsplit(url).hostname} {self._document}")
        meta.update(
            dont_obey_robotstxt=True,
            dont_redirect=True,
            dont_retry=True,
            # robots.txt's cache is scrapy-rep's store, with Google's lifetimes (SPEC B3).
            dont_cache=True,
            download_timeout=self._timeout,
            allow_offsite=True,
        )
        if url.startswith("ftp:"):
            meta.update(ftp_user="anonymous", ftp_password=self._ftp_password)
        # Priority 1000, like Scrapy's own robots.txt requests: ahead of pages in a download slot.
        request = Request(
            url, priority=1000, meta=meta, headers=headers, callback=NO_CALLBACK, dont_filter=True
        )
        return mark_fetch(request, self)

    def _on_bytes(self, data: bytes, request: Request, spider: Any = None) -> None:
        # Counted on the fetch's own mark, by the fetcher that made it: another kind's fetcher
        # (robots.txt's and tdmrep.json's may download at once) leaves it alone, and a
        # middleware's copy of the request counts towards the same fetch.
        if (mark := live_mark(request)) is not None and mark.owner is self:
            mark.received += len(data)
            if mark.received >= MAX_BODY_BYTES:
                raise StopDownload(fail=False)


def _redirect_target(response: Response, schemes: frozenset[str]) -> tuple[str, str | None]:
    """The absolute URL redirect ``response`` points to, and why it is not followed (None:
    follow it)."""
    location = response.headers.get(b"Location")
    if not location:
        return "", "no Location header"
    raw = location.decode("latin-1").strip()
    try:
        target = urljoin(response.url, raw)
        parts = urlsplit(target)
        port = parts.port  # ValueError when not a number or out of range
    except ValueError as exc:
        return raw, f"not a valid URL ({exc})"
    scheme = parts.scheme.lower()
    if scheme not in schemes:
        return target, f"{scheme or 'no'}: scheme (only {'/'.join(sorted(schemes))} is followed)"
    host = parts.hostname or ""
    if ":" in host:
        try:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            return target, "malformed IPv6 host"
    if port == 0 or origin(target) is None:
        return target, "no valid host and port"
    return target, None


def header_values(response: Response, name: bytes) -> list[str]:
    """Every value of header ``name`` in ``response``, as text."""
    return [value.decode("latin-1") for value in response.headers.getlist(name)]


#: What a user reads for the network failures of every supported Twisted and Scrapy version
#: (Scrapy >= 2.14 raises its own classes, with the same meaning).
_FAILURES = {
    "ConnectionRefusedError": "connection refused",
    "DownloadConnectionRefusedError": "connection refused",
    "TimeoutError": "timed out",
    "TCPTimedOutError": "timed out",
    "DownloadTimeoutError": "timed out",
    "ConnectionLost": "connection lost",
    "ConnectionDone": "connection closed",
    "ResponseNeverReceived": "connection lost before a response",
    "ResponseFailed": "connection lost during the response",
    "ResponseDataLossError": "response cut short",
    "DownloadFailedError": "download failed",
}


def describe_failure(exc: BaseException) -> str:
    """A download failure as a user reads it: "connection refused", not the exception repr."""
    name = type(exc).__name__
    if name == "DownloadFailedError" and exc.__cause__ is not None:
        # Scrapy >= 2.15 wraps Twisted's ResponseFailed in it: the cause says what failed.
        return describe_failure(exc.__cause__)
    text = str(exc).strip().rstrip(".")
    if name in ("DNSLookupError", "CannotResolveHostError"):  # Twisted's; Scrapy >= 2.15's
        # The resolver's message names the host: keep it.
        return text if text.startswith("DNS lookup failed") else f"DNS lookup failed: {text}"
    return _FAILURES.get(name) or (f"{name}: {text}" if text else name)

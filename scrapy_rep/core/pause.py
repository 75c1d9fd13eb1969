"""When a site's pages say "slow down", and for how long its origin pauses (SPEC H). Pure: no I/O,
no Scrapy, no clock.

- ``page_answer(status)``: what a page's status says of the server (SPEC H1).
- ``no_answer(error)``: whether a download failure means the site gave no answer (SPEC H1).
- ``Struggle``: several distinct pages answering 5xx (or nothing) in a row (SPEC H1).
- ``pause_seconds(failures, retry_after, base, cap, jitter)``: how long a pause lasts (SPEC H2).
"""

from __future__ import annotations

from typing import Literal

from scrapy_rep.core.policy import SLOW_DOWN, honoured

__all__ = [
    "JITTER",
    "NO_ANSWER",
    "STRUGGLING_PAGES",
    "Struggle",
    "no_answer",
    "page_answer",
    "pause_seconds",
]

#: SPEC H1: distinct pages of an origin answering another 5xx in a row that pause it. One page
#: answering 500 for ever (a broken script) is one page, however often it is asked: it never
#: pauses a site; three different pages failing with no success between them is the server.
STRUGGLING_PAGES = 3

#: SPEC H2: a pause no answer started (``no_answer``) lasts its doubled wait times 1 to 1.5.
JITTER = 0.5

#: SPEC H1: download failures in which the site gave no answer, by exception class name
#: (Twisted's, and the ones Scrapy >= 2.15 raises instead): a timeout, a refused, reset or
#: dropped connection, a failed lookup of a name that resolved for its robots.txt. Not a
#: response cut short (the site answered), a TLS failure, nor anything raised before the
#: download; so not Twisted's ``ConnectError`` either, the base of TLS and cancelled connects.
NO_ANSWER = frozenset(
    {
        "TimeoutError",  # Twisted's, raised at DOWNLOAD_TIMEOUT
        "TCPTimedOutError",
        "DownloadTimeoutError",
        "ConnectionRefusedError",
        "DownloadConnectionRefusedError",
        "NoRouteError",
        "ConnectionLost",
        "ConnectionDone",
        "ResponseNeverReceived",
        "ResponseFailed",
        "DownloadFailedError",  # Scrapy >= 2.15's ResponseFailed
        "DNSLookupError",
        "CannotResolveHostError",
    }
)

Answer = Literal["slow_down", "error", "ok"]


def page_answer(status: int) -> Answer:
    """SPEC H1: 503 and 429 ask the crawler to slow down (Google: "if you need to suspend
    crawling temporarily, serve a 503"; its crawlers slow down on 429 too); another 5xx is a
    server error, which pauses the origin only when several pages show it (``Struggle``);
    anything else is an answer."""
    if status in SLOW_DOWN:
        return "slow_down"
    if 500 <= status < 600:
        return "error"
    return "ok"


def no_answer(error: BaseException) -> bool:
    """SPEC H1: did the site give no answer (``NO_ANSWER``, a subclass of one included)? Such a
    failure counts as a page's 5xx does: one page timing out is one slow page; several distinct
    pages in a row is the site."""
    return any(cls.__name__ in NO_ANSWER for cls in type(error).__mro__)


class Struggle:
    """The distinct pages of one origin that answered another 5xx (or nothing) since its last
    answer."""

    __slots__ = ("_pages",)

    def __init__(self) -> None:
        self._pages: set[str] = set()

    def failed(self, page: str) -> bool:
        """``page`` answered 5xx or nothing: does the origin struggle now (``STRUGGLING_PAGES``)?"""
        self._pages.add(page)
        return len(self._pages) >= STRUGGLING_PAGES

    def __len__(self) -> int:
        return len(self._pages)


def pause_seconds(
    failures: int, retry_after: float | None, base: float, cap: float, jitter: float = 0.0
) -> float:
    """SPEC H2: ``Retry-After`` when the answer has one of at least ``base`` (seconds or an
    HTTP date, read by ``policy.parse_retry_after``; ``policy.honoured``), else ``base``
    doubled for each pause in a row; both capped. ``base`` is the floor: answers asking for
    0 s again and again back off as if they had said nothing. ``jitter`` (0 to 1, drawn by the
    caller) lengthens the doubled wait by up to half (``JITTER``), never shortens it: a site
    that stopped answering is not probed by every crawler at the same instants."""
    asked = honoured(retry_after, base, cap)
    if asked is not None:
        return asked
    exponent = min(max(failures - 1, 0), 32)
    return float(min(base * 2**exponent * (1 + JITTER * jitter), cap))

"""When a site's pages say "slow down", and for how long its origin pauses (SPEC H). Pure: no I/O,
no Scrapy, no clock.

- ``page_answer(status)``: what a page's status says of the server (SPEC H1).
- ``Struggle``: several distinct pages answering 5xx in a row (SPEC H1).
- ``pause_seconds(failures, retry_after, base, cap)``: how long a pause lasts (SPEC H2).
"""

from __future__ import annotations

from typing import Literal

from scrapy_rep.core.policy import SLOW_DOWN, honoured

__all__ = ["STRUGGLING_PAGES", "Struggle", "page_answer", "pause_seconds"]

#: SPEC H1: distinct pages of an origin answering another 5xx in a row that pause it. One page
#: answering 500 for ever (a broken script) is one page, however often it is asked: it never
#: pauses a site; three different pages failing with no success between them is the server.
STRUGGLING_PAGES = 3

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


class Struggle:
    """The distinct pages of one origin that answered another 5xx since its last answer."""

    __slots__ = ("_pages",)

    def __init__(self) -> None:
        self._pages: set[str] = set()

    def failed(self, page: str) -> bool:
        """``page`` answered 5xx: does the origin struggle now (``STRUGGLING_PAGES``)?"""
        self._pages.add(page)
        return len(self._pages) >= STRUGGLING_PAGES

    def __len__(self) -> int:
        return len(self._pages)


def pause_seconds(failures: int, retry_after: float | None, base: float, cap: float) -> float:
    """SPEC H2: ``Retry-After`` when the answer has one of at least ``base`` (seconds or an
    HTTP date, read by ``policy.parse_retry_after``; ``policy.honoured``), else ``base``
    doubled for each pause in a row; both capped. ``base`` is the floor: answers asking for
    0 s again and again back off as if they had said nothing."""
    asked = honoured(retry_after, base, cap)
    if asked is not None:
        return asked
    exponent = min(max(failures - 1, 0), 32)
    return float(min(base * 2**exponent, cap))

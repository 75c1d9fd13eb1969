"""What the SQLite and Redis store tests share: awkward bodies, origins that must stay apart."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from scrapy.settings import Settings

from scrapy_rep.crawl._settings import MiddlewareSettings
from scrapy_rep.storage.results import RobotsStore
from scrapy_rep.storage.results._open import open_configured

#: A body no text codec round-trips: NULs, invalid UTF-8, CRLF.
BINARY = b"User-agent: *\x00\nDisallow: /\xff\xfe\x80caf\xc3\xa9\r\n\x00"
#: Normalised origins (SPEC B1) that must never share an entry.
ORIGINS = [
    "http://example.com",
    "https://example.com",
    "http://example.com:8080",
    "https://example.com:8443",
    "http://xn--mller-kva.eu",
    "http://mller.eu",
    "http://127.0.0.1",
    "http://[::1]",
    "ftp://example.com",
]


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``predicate`` until true: for expiries kept by another process (no event to wait on)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def crawl_store(settings: dict[str, Any]) -> RobotsStore:
    """The store a crawl with these settings opens, as ``RobotsTxtMiddleware.from_crawler`` does."""
    return open_configured(MiddlewareSettings.from_settings(Settings(settings)).store)

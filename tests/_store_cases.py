"""What the SQLite and Redis store tests share: awkward bodies, origins that must stay apart."""

from __future__ import annotations

import subprocess
import sys
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


# Every thread of the store busy with a call that waits, then a pause written (it waits for a
# thread), then the store closed, as the crawl closes it right after its last page's answer.
_CLOSE_WHILE_BUSY = """
import sys, threading
from twisted.internet import reactor
from scrapy_rep.storage.results import open_store

store = open_store(sys.argv[1])
threads = store._threads
started, release = threading.Semaphore(0), threading.Event()
real_get = store.backend.get

def slow_get(origin):
    started.release()
    release.wait(10)
    return real_get(origin)

store.backend.get = slow_get
outcomes = []

def main():
    for _ in range(threads):
        store.get("http://a.test")
        assert started.acquire(timeout=10)  # that thread is busy with it
    store.set_pause("http://a.test", 30.0, 1, "HTTP 503").addBoth(outcomes.append)
    closed = store.close()
    release.set()
    closed.addBoth(lambda _: reactor.stop())

reactor.callWhenRunning(main)
reactor.run()
print(outcomes)
"""


def close_while_busy(url: str) -> str:
    """In a subprocess with a real reactor: the store at ``url`` closed while a pause waits
    for one of its busy threads; what the pause's call gave (``[None]``: written)."""
    done = subprocess.run(
        [sys.executable, "-c", _CLOSE_WHILE_BUSY, url], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()

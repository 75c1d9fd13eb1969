"""A site that stops answering is backed off from, not retried at full speed (SPEC H1, H2): real
crawls against pages that time out or reset every connection, beside a healthy site."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from _crawl import CrawlResult, Start, run_crawl
from _redis_server import RedisServer
from _servers import Reply, ScriptedServer

ADDON = {"ADDONS": {"scrapy_rep.Addon": 0}, "ROBOTSTXT_OBEY": True}
HOSTS = {"a.test": "127.0.0.1", "b.test": "127.0.0.1"}
#: Shorter than the defaults (2 s, 60 s, 180 s) so that a give-up shows in seconds; the
#: defaults' backoff: test_pause_parts.py.
FAST = {"REP_PAUSE_DELAY": 0.5, "REP_PAUSE_GIVE_UP_AFTER": 4, "DOWNLOAD_TIMEOUT": 1}
FAILING, HEALTHY = 30, 20


@pytest.fixture
def servers(server_factory: Callable[..., ScriptedServer]) -> Iterator[list[ScriptedServer]]:
    a, b = server_factory(), server_factory()
    for server in (a, b):
        server.robots("User-agent: *\nAllow: /\n")
    yield [a, b]


def _pages(server: ScriptedServer, host: str, count: int) -> list[str]:
    return [server.url(f"/page/{i}", host=host) for i in range(count)]


def _crawl(a: ScriptedServer, b: ScriptedServer, **settings: Any) -> CrawlResult:
    starts = [*_pages(a, "a.test", FAILING), *_pages(b, "b.test", HEALTHY)]
    return run_crawl(starts, {**ADDON, **settings}, hosts=HOSTS, timeout=90)


def _attempts(server: ScriptedServer) -> int:
    return len(server.seen("/page/", prefix=True))


def _errbacks(result: CrawlResult, host: str) -> set[str]:
    return {e.url for e in result.errbacks if e.url is not None and f"//{host}:" in e.url}


def _assert_backed_off(a: ScriptedServer, b: ScriptedServer, result: CrawlResult) -> None:
    """30 pages of a site that never answers: a burst, then a probe per pause, then the pause
    is given up and every page is told so; the healthy site crawls on."""
    assert result.close_reason == "finished"
    # Scrapy's built-in: 90 attempts (RETRY_TIMES 2). Here: the pages already on their way when
    # the third distinct page failed (at most CONCURRENT_REQUESTS_PER_DOMAIN, 8; 16 on Scrapy
    # >= 2.14's asyncio path), the two retries RetryMiddleware made before, one probe per pause.
    assert _attempts(a) <= 16 + 2 + 4, _attempts(a)
    assert result.stat("robotstxt/pause/paused") == 1
    assert result.stat("robotstxt/pause/probes") >= 1
    assert result.stat("robotstxt/pause/gave_up") == 1
    # Every page accounted for: each of the failing site's errbacks told (given up with the
    # pause), every page of the healthy site downloaded.
    assert _errbacks(result, "a.test") == set(_pages(a, "a.test", FAILING))
    assert {s.path for s in b.seen("/page/", prefix=True) if s.status == 200} == {
        f"/page/{i}" for i in range(HEALTHY)
    }
    # Each failure counted once by Scrapy's DownloaderStats, the ones scrapy-rep took out of the
    # chain before it (held, not retried) too. (Not compared with the server's count: Twisted
    # sends a GET again by itself when a kept-alive connection is lost before an answer.)
    prefix = "robotstxt/pause/resent/"
    taken = sum(
        count
        for name, count in result.stats.items()
        if name.startswith(prefix)
        and name[len(prefix) :] not in ("queued",)
        and not name[len(prefix) :].isdigit()
    )
    assert taken >= 1
    retried = result.stat("retry/count") + result.stat("retry/max_reached")
    assert result.stat("downloader/exception_count") == taken + retried
    assert "Traceback" not in result.log


def test_pages_that_reset_every_connection_are_backed_off_from(
    servers: list[ScriptedServer],
) -> None:
    a, b = servers
    a.outage(Reply(reset=True))
    result = _crawl(a, b, **FAST)
    _assert_backed_off(a, b, result)
    assert "Pausing http://a.test" in result.log
    assert "3 different pages failed in a row (the last: connection lost" in result.log
    # Held while paused: RetryMiddleware spent retries only before the pause began.
    assert result.stat("retry/count") <= 2
    # Scrapy's built-in on the same site: every page tried 3 times.
    ours = _attempts(a)
    builtin = _crawl(a, b, ADDONS={}, DOWNLOAD_TIMEOUT=1)
    assert _attempts(a) - ours >= 3 * FAILING
    assert builtin.stat("retry/count") == 2 * FAILING


def test_pages_that_time_out_are_backed_off_from(servers: list[ScriptedServer]) -> None:
    a, b = servers
    a.outage(Reply(hang=True))
    started = time.monotonic()
    result = _crawl(a, b, **FAST)
    _assert_backed_off(a, b, result)
    assert "(the last: timed out at /page/" in result.log
    # Ends by itself: the first timeouts (1 s), the pause given up after 4 s, a probe's timeout.
    assert time.monotonic() - started < 40


def test_a_site_that_stops_answering_for_a_while_gets_every_page(
    servers: list[ScriptedServer],
) -> None:
    a, b = servers
    a.outage(Reply(reset=True))
    ended = threading.Event()

    def recover() -> None:
        a.outage(None)
        ended.set()

    timer = threading.Timer(5.0, recover)
    a.when(lambda: _attempts(a) > 0, timer.start, timeout=60)
    try:
        result = _crawl(a, b, REP_PAUSE_DELAY=1)
    finally:
        timer.cancel()
    assert ended.is_set()
    assert {s.path for s in a.seen("/page/", prefix=True) if s.status == 200} == {
        f"/page/{i}" for i in range(FAILING)
    }
    assert result.stat("robotstxt/pause/resumed") == 1
    assert result.errbacks == []
    assert "Resuming http://a.test" in result.log


def test_requests_marked_rep_dont_pause_are_retried_as_scrapy_does(
    servers: list[ScriptedServer],
) -> None:
    a, _b = servers
    a.outage(Reply(reset=True))
    starts = [Start(url, meta={"rep_dont_pause": True}) for url in _pages(a, "a.test", FAILING)]
    result = run_crawl(starts, {**ADDON, **FAST}, hosts=HOSTS, timeout=90)
    # Their failures neither pause the site nor are held: RetryMiddleware's, as without
    # scrapy-rep (each page tried 3 times, then its errback).
    assert result.stat("robotstxt/pause/paused") == 0
    assert result.stat("retry/count") == 2 * FAILING
    assert _errbacks(result, "a.test") == set(_pages(a, "a.test", FAILING))


def test_one_slow_page_does_not_pause_its_site(servers: list[ScriptedServer]) -> None:
    a, b = servers
    a.route("/page/5", Reply(hang=True))
    result = _crawl(a, b, DOWNLOAD_TIMEOUT=1)
    assert result.stat("robotstxt/pause/paused") == 0
    # Scrapy's RetryMiddleware retries it, as without scrapy-rep; the other pages go on.
    assert a.count("/page/5") == 3
    assert result.stat("retry/count") == 2
    assert {s.path for s in a.seen("/page/", prefix=True) if s.status == 200} == {
        f"/page/{i}" for i in range(FAILING) if i != 5
    }
    assert [e.url for e in result.errbacks] == [a.url("/page/5", host="a.test")]


def test_a_fleet_backs_off_together_from_a_site_that_resets_every_connection(
    servers: list[ScriptedServer], tmp_path: Path
) -> None:
    a, b = servers
    a.outage(Reply(reset=True))
    halves = [range(FAILING // 2), range(FAILING // 2, FAILING)]

    def member(name: str, numbers: range) -> CrawlResult:
        settings = {
            **ADDON,
            **FAST,
            "REP_STORE": redis.url,
            "REP_STORE_TIMEOUT": 10,
            "REP_LEASE_POLL_INTERVAL": 0.1,
            "USER_AGENT": f"{name}/1.0 (+https://test.example/{name})",
        }
        starts = [
            *(a.url(f"/page/{i}", host="a.test") for i in numbers),
            *(b.url(f"/page/{i}", host="b.test") for i in numbers),
        ]
        return run_crawl(starts, settings, hosts=HOSTS, timeout=90)

    with RedisServer.start(tmp_path / "redis") as redis, ThreadPoolExecutor(2) as pool:
        results = list(pool.map(member, ["one", "two"], halves))
    # The pause is the fleet's (through the store): each member paused the site or followed
    # the other's pause, and the site got two bursts and the probes, not 90 attempts.
    for result in results:
        assert result.close_reason == "finished"
        followed = result.stat("robotstxt/pause/followed")
        assert result.stat("robotstxt/pause/paused") + followed >= 1
    assert _attempts(a) <= 2 * (16 + 2) + 4 + 2, _attempts(a)
    # Every page accounted for: given up with the pause and, the store being Redis, kept there
    # for the fleet's next run by the member that had it (SPEC H6), none told lost.
    for result, numbers in zip(results, halves, strict=True):
        assert result.stat("robotstxt/held_kept_for_next_run") == len(numbers), result.stats
        assert _errbacks(result, "a.test") == set()
    assert {s.path for s in b.seen("/page/", prefix=True) if s.status == 200} == {
        f"/page/{i}" for i in range(FAILING)
    }

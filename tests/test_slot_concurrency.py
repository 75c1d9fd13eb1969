"""A site never sees more requests at once than its download slot's concurrency.

Real crawls (default reactor, DOWNLOAD_DELAY 0, AutoThrottle off) against a server that records
when each request arrived and when its answer left, on distinct host names; the most in
progress at once is counted server-side. Scrapy >= 2.14 with the asyncio reactor starts a
slot's whole queue at once: these fail there with ``REP_SLOT_CONCURRENCY = False``
(``test_without_the_limit_the_burst_is_back`` shows it). The delay guards pass on every version.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Iterable
from pathlib import Path

import pytest
from _crawl import Interrupt, Start, run_crawl
from _servers import Reply, ScriptedServer, Seen
from scrapy.core.downloader import Downloader

ADDON = {
    "ADDONS": {"scrapy_rep.Addon": 0},
    "ROBOTSTXT_OBEY": True,
    "DOWNLOAD_DELAY": 0,
    "AUTOTHROTTLE_ENABLED": False,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
    "LOG_LEVEL": "WARNING",
}
#: Scrapy >= 2.14 starts downloads as tasks: with the asyncio reactor (the tests run the
#: default) a slot's whole queue starts at once (docs/design.md, "Limits that hold").
BURSTS = inspect.iscoroutinefunction(getattr(Downloader, "_wait_for_download", None))
SLOW = 0.3


def _most_at_once(seen: Iterable[Seen], until: float = float("inf")) -> int:
    """The most requests in progress at once among ``seen``, before ``until``: from arrival to
    the moment the answer began to be written (the crawler cannot send the slot's next request
    earlier; the server thread may record the end of writing later than that)."""
    edges: list[tuple[float, int]] = []
    for s in seen:
        assert s.answered is not None
        edges += [(s.time, 1), (s.answered, -1)]
    most = now = 0
    for at, step in sorted(edges):  # an answer sent at the instant another arrives ends first
        if at >= until:
            break
        now += step
        most = max(most, now)
    return most


def _pages(seen: Iterable[Seen], *hosts: str) -> list[Seen]:
    return [
        s for s in seen if s.path.startswith("/page/") and s.headers["host"].split(":")[0] in hosts
    ]


def _slow_site(server: ScriptedServer, count: int) -> None:
    for i in range(count):
        server.route(f"/page/{i}", Reply(200, b"<html></html>", delay=SLOW))


@pytest.mark.parametrize("concurrent", [16, 100])
def test_per_domain_2_holds(http_server: ScriptedServer, concurrent: int) -> None:
    _slow_site(http_server, 20)
    urls = [http_server.url(f"/page/{i}", host="a.test") for i in range(20)]
    result = run_crawl(
        urls, {**ADDON, "CONCURRENT_REQUESTS": concurrent}, hosts={"a.test": "127.0.0.1"}
    )
    pages = _pages(http_server.requests, "a.test")
    assert sorted(s.path for s in pages) == sorted(f"/page/{i}" for i in range(20))
    assert _most_at_once(pages) == 2
    # Held here on every version: before 2.14 Scrapy holds it too, with its slot's queue in
    # Downloader.active.
    assert result.stat("robotstxt/slot/waited") >= 10
    assert result.stat("robotstxt/slot/waiting_max") >= 10


def test_without_the_limit_the_burst_is_back_where_scrapy_has_it(
    http_server: ScriptedServer,
) -> None:
    """The check of the checks: the same crawl with the limit off exceeds it on Scrapy >= 2.14;
    before, Scrapy holds it itself."""
    _slow_site(http_server, 20)
    urls = [http_server.url(f"/page/{i}", host="a.test") for i in range(20)]
    settings = {**ADDON, "CONCURRENT_REQUESTS": 16, "REP_SLOT_CONCURRENCY": False}
    run_crawl(urls, settings, hosts={"a.test": "127.0.0.1"})
    most = _most_at_once(_pages(http_server.requests, "a.test"))
    assert most > 2 if BURSTS else most == 2


@pytest.mark.parametrize("concurrent", [16, 100])
def test_download_slots_concurrency_1(http_server: ScriptedServer, concurrent: int) -> None:
    _slow_site(http_server, 10)
    urls = [http_server.url(f"/page/{i}", host="b.test") for i in range(10)]
    settings = {
        **ADDON,
        "CONCURRENT_REQUESTS": concurrent,
        "DOWNLOAD_SLOTS": {"b.test": {"concurrency": 1}},
    }
    run_crawl(urls, settings, hosts={"b.test": "127.0.0.1"})
    pages = _pages(http_server.requests, "b.test")
    assert len(pages) == 10
    assert _most_at_once(pages) == 1


@pytest.mark.parametrize("concurrent", [16, 100])
def test_download_slot_meta_groups_two_hosts(http_server: ScriptedServer, concurrent: int) -> None:
    _slow_site(http_server, 20)
    hosts = {"c1.test": "127.0.0.1", "c2.test": "127.0.0.1"}
    meta = {"download_slot": "both"}
    urls = [
        Start(http_server.url(f"/page/{i}", host=f"c{1 + i % 2}.test"), meta=meta)
        for i in range(20)
    ]
    settings = {
        **ADDON,
        "CONCURRENT_REQUESTS": concurrent,
        "DOWNLOAD_SLOTS": {"both": {"concurrency": 2}},
    }
    run_crawl(urls, settings, hosts=hosts)
    pages = _pages(http_server.requests, "c1.test", "c2.test")
    assert len(pages) == 20
    assert _most_at_once(pages) == 2


@pytest.mark.parametrize("concurrent", [16, 100])
def test_a_site_answering_503_gets_at_most_its_concurrency(
    http_server: ScriptedServer, concurrent: int
) -> None:
    """The first page (the origin's first request, alone) is answered; every other page
    answers 503: at most 2 are in flight when the 503s begin (the pause holds the rest)."""
    for i in range(1, 20):
        http_server.route(f"/page/{i}", Reply(503, delay=SLOW))
    urls = [http_server.url(f"/page/{i}", host="d.test") for i in range(20)]
    settings = {**ADDON, "CONCURRENT_REQUESTS": concurrent, "REP_PAUSE_GIVE_UP_AFTER": 3}
    run_crawl(urls, settings, hosts={"d.test": "127.0.0.1"}, timeout=90)
    refused = [s for s in _pages(http_server.requests, "d.test") if s.status == 503]
    first_503 = min(s.answered for s in refused if s.answered is not None)
    in_flight = [s for s in refused if s.time <= first_503]
    assert 1 <= len(in_flight) <= 2


@pytest.mark.parametrize("concurrent", [16, 100])
def test_waiting_takes_no_global_place(http_server: ScriptedServer, concurrent: int) -> None:
    """A site limited to 2 with 30 requests waiting, scheduled first, and 50 fast sites with
    as many requests as the other places: while the slow site still has requests to send, the
    fast sites get every other place (with the limit off the slow site's burst takes them on
    Scrapy >= 2.14; before, its slot's queue in Downloader.active does)."""
    for i in range(32):
        http_server.route(f"/page/{i}", Reply(200, b"<html></html>", delay=2 * SLOW))
    fast = [f"f{n}.test" for n in range(50)]
    per_fast = -(-(concurrent - 2) // 50)
    for i in range(per_fast):
        http_server.route(f"/page/fast{i}", Reply(200, b"<html></html>", delay=10 * SLOW))
    hosts = {"slow.test": "127.0.0.1", **{host: "127.0.0.1" for host in fast}}
    urls = [
        Start(http_server.url(f"/page/{i}", host="slow.test"), priority=1) for i in range(32)
    ] + [http_server.url(f"/page/fast{i}", host=host) for host in fast for i in range(per_fast)]
    settings = {
        **ADDON,
        "CONCURRENT_REQUESTS": concurrent,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
        "DOWNLOAD_SLOTS": {host: {"concurrency": per_fast} for host in fast},
    }
    result = run_crawl(urls, settings, hosts=hosts)
    slow = _pages(http_server.requests, "slow.test")
    assert len(slow) == 32
    assert _most_at_once(slow) == 2
    assert len(_pages(http_server.requests, *fast)) == 50 * per_fast
    last_slow = max(s.time for s in slow)
    fast_pages = _pages(http_server.requests, *fast)
    assert _most_at_once(fast_pages, until=last_slow) >= concurrent - 2
    assert result.stat("robotstxt/slot/waited") >= 20


def _starts(seen: list[Seen]) -> list[float]:
    return sorted(s.time for s in seen)


def test_download_delay_keeps_scrapy_s_jittered_bound(http_server: ScriptedServer) -> None:
    _slow_site(http_server, 6)
    urls = [http_server.url(f"/page/{i}", host="e.test") for i in range(6)]
    settings = {**ADDON, "CONCURRENT_REQUESTS": 16, "DOWNLOAD_DELAY": 0.3}
    run_crawl(urls, settings, hosts={"e.test": "127.0.0.1"})
    starts = _starts(_pages(http_server.requests, "e.test"))
    assert len(starts) == 6
    # Scrapy's jitter: 0.5 to 1.5 times the delay between two starts of a slot.
    assert min(b - a for a, b in itertools.pairwise(starts)) >= 0.3 * 0.5 - 0.02


def test_crawl_delay_1_keeps_starts_a_second_apart(http_server: ScriptedServer) -> None:
    http_server.robots("User-agent: *\nCrawl-delay: 1\n")
    urls = [http_server.url(f"/page/{i}", host="g.test") for i in range(4)]
    settings = {**ADDON, "CONCURRENT_REQUESTS": 16, "REP_CRAWL_DELAY": True}
    run_crawl(urls, settings, hosts={"g.test": "127.0.0.1"})
    starts = _starts(_pages(http_server.requests, "g.test"))
    assert len(starts) == 4
    assert min(b - a for a, b in itertools.pairwise(starts)) >= 1 - 0.02


@pytest.mark.parametrize("jobdir", [False, True])
def test_requests_waiting_for_a_place_at_close_are_kept_or_said_not_downloaded(
    http_server: ScriptedServer, tmp_path: Path, jobdir: bool
) -> None:
    """Ctrl-C while a slow site's requests wait for a place in its slot: they are not
    downloaded on the way out at the slot's pace (Scrapy < 2.14 downloads its slot queue
    before it closes; scrapy-rep's waiting requests are not in it, on any version). They are
    treated as requests left in Scrapy's scheduler: kept for the next run with JOBDIR, else
    left, with a stat and a line saying so; no errback, no page twice."""
    pages = [f"/page/{i}" for i in range(6)]
    for path in pages:
        # Longer than the second within which the close is noticed.
        http_server.route(path, Reply(200, b"<html></html>", delay=2.5))
    urls = [http_server.url(path, host="h.test") for path in pages]
    hosts = {"h.test": "127.0.0.1"}
    settings = {**ADDON, "CONCURRENT_REQUESTS": 16, "LOG_LEVEL": "INFO"}
    if jobdir:
        settings["JOBDIR"] = str(tmp_path / "job")
    first = run_crawl(urls, settings, hosts=hosts, interrupt=Interrupt(http_server, "/page/", 2))
    assert first.close_reason == "shutdown"
    assert first.errbacks == []
    fetched = _pages(http_server.requests, "h.test")
    assert len(fetched) == 2
    if jobdir:
        assert first.stat("robotstxt/held_persisted") == 4
        assert "(4 still waiting when the crawl closed: 4 waiting for a place in" in first.log
    else:
        assert first.stat("robotstxt/held_dropped_on_close") == 4
        assert (
            "Crawl closed with 4 request(s) held (4 waiting for a place in its download "
            "slot); they were not downloaded"
        ) in first.log
    if jobdir:
        for path in pages:
            http_server.route(path, Reply(200, b"<html></html>"))
        second = run_crawl(urls, settings, hosts=hosts)
        assert second.close_reason == "finished"
        assert second.stat("robotstxt/held_restored") == 4
        # Every page once over both runs.
        assert sorted(s.path for s in _pages(http_server.requests, "h.test")) == sorted(pages)


def test_a_backlog_longer_than_the_crawl_s_places_waits_off_them(
    http_server: ScriptedServer,
) -> None:
    """40 requests of one site limited to 2, at CONCURRENT_REQUESTS 16: all 38 over the limit
    wait off the downloader at once (more than twice its places: no bound past which one waits
    in its place and the engine backs out); all fetched once, never more than 2 at a time."""
    _slow_site(http_server, 40)
    urls = [http_server.url(f"/page/{i}", host="k.test") for i in range(40)]
    result = run_crawl(urls, {**ADDON, "CONCURRENT_REQUESTS": 16}, hosts={"k.test": "127.0.0.1"})
    pages = _pages(http_server.requests, "k.test")
    assert sorted(s.path for s in pages) == sorted(f"/page/{i}" for i in range(40))
    assert _most_at_once(pages) == 2
    assert result.stat("robotstxt/slot/waiting_max") > 32


@pytest.mark.parametrize("queue", [None, "scrapy.pqueues.DownloaderAwarePriorityQueue"])
def test_a_slow_site_s_backlog_never_stalls_the_other_sites(
    http_server: ScriptedServer, queue: str | None
) -> None:
    """200 start requests of a slow site (2 s a page) before 400 of 20 fast sites, per-domain
    2, CONCURRENT_REQUESTS 16: the slow site never has more than 2 in progress, and every fast
    page is fetched before the slow site's 20th is asked for (the crawl is stopped then). With a
    slot's backlog waiting in the engine's places (Scrapy < 2.14's slot queue, or past a bound)
    the fast sites got none of them: 0 fast pages in 90 s."""
    for i in range(200):
        http_server.route(f"/page/s{i}", Reply(200, b"<html></html>", delay=2.0))
    fast = [f"fast{n}.test" for n in range(20)]
    hosts = {"slow.test": "127.0.0.1", **{host: "127.0.0.1" for host in fast}}
    urls = [http_server.url(f"/page/s{i}", host="slow.test") for i in range(200)]
    urls += [http_server.url(f"/page/f{i}", host=host) for host in fast for i in range(20)]
    settings: dict[str, object] = {**ADDON, "CONCURRENT_REQUESTS": 16, "LOG_LEVEL": "INFO"}
    if queue is not None:
        settings["SCHEDULER_PRIORITY_QUEUE"] = queue
    result = run_crawl(
        urls, settings, hosts=hosts, interrupt=Interrupt(http_server, "/page/s", 20), timeout=120
    )
    assert result.close_reason == "shutdown"
    slow = _pages(http_server.requests, "slow.test")
    assert _most_at_once(slow) <= 2
    twentieth = sorted(s.time for s in slow)[19]
    fast_pages = _pages(http_server.requests, *fast)
    assert len(fast_pages) == 400
    assert max(s.time for s in fast_pages) < twentieth

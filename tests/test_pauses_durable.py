"""Pauses across a fleet and across restarts (SPEC H5), the idle tail of a site that answers 503
for ever, and ``scrapy robots`` showing a pause the store keeps. Real crawls, a real Redis."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _crawl import CrawlResult, Interrupt, run_crawl
from _redis_server import RedisServer
from _servers import Reply, ScriptedServer, Seen
from test_explain import scrapy_robots

ADDON = {"ADDONS": {"scrapy_rep.Addon": 0}, "ROBOTSTXT_OBEY": True}
HOSTS = {"a.test": "127.0.0.1", "b.test": "127.0.0.1"}
PAGES = 20


def _site(server: ScriptedServer) -> ScriptedServer:
    server.robots("User-agent: *\nAllow: /\n")
    return server


def _pages(server: ScriptedServer, host: str, numbers: range) -> list[str]:
    return [server.url(f"/page/{i}", host=host) for i in numbers]


def _by(seen: list[Seen], agent: str) -> list[Seen]:
    return [s for s in seen if s.headers.get("user-agent", "").startswith(agent)]


def _member(redis_server: RedisServer, name: str, **extra: Any) -> dict[str, Any]:
    return {
        **ADDON,
        "REP_STORE": redis_server.url,
        "REP_STORE_TIMEOUT": 10,
        "REP_LEASE_POLL_INTERVAL": 0.1,
        "USER_AGENT": f"{name}/1.0 (+https://test.example/{name})",
        **extra,
    }


def test_a_fleet_member_started_during_a_pause_sends_nothing_before_it_ends(
    server_factory: Callable[..., ScriptedServer], redis_server: RedisServer
) -> None:
    a = _site(server_factory())
    a.outage(Reply(503, headers={"Retry-After": "8"}))
    a.when(
        lambda: bool(a.seen("/page/", prefix=True)),
        lambda: threading.Timer(4, lambda: a.outage(None)).start(),
        timeout=60,
    )
    first_settings = _member(redis_server, "first")
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(run_crawl, _pages(a, "a.test", range(10)), first_settings, hosts=HOSTS)
        assert a.wait_until(lambda: any(s.status == 503 for s in a.requests), timeout=30)
        paused_at = min(s.finished or 0 for s in a.requests if s.status == 503)
        second = run_crawl(
            _pages(a, "a.test", range(10, PAGES)), _member(redis_server, "second"), hosts=HOSTS
        )
        first.result()
    pages = a.seen("/page/", prefix=True)
    assert {s.path for s in pages if s.status == 200} == {f"/page/{i}" for i in range(PAGES)}
    # The second process followed the first one's pause from the store: nothing of it reached
    # A before the pause (Retry-After 8 s) was over.
    sent = _by(pages, "second")
    assert sent and min(s.time for s in sent) >= paused_at + 8 - 0.2
    assert second.stat("robotstxt/pause/followed") == 1
    assert second.stat("robotstxt/pause/paused") == 0


def test_a_fleet_crawling_a_paused_site_sends_one_probe_per_retry_after(
    server_factory: Callable[..., ScriptedServer], redis_server: RedisServer
) -> None:
    a = _site(server_factory())
    outage_started = threading.Event()

    def start_outage() -> None:
        a.outage(Reply(503, headers={"Retry-After": "3"}))
        outage_started.set()
        threading.Timer(12, lambda: a.outage(None)).start()

    # Both members are crawling A when the 503s start.
    a.when(
        lambda: (
            {s.headers.get("user-agent", "")[:5] for s in a.seen("/page/", prefix=True)}
            >= {"one/1", "two/1"}
        ),
        start_outage,
        timeout=60,
    )
    slow = {"CONCURRENT_REQUESTS_PER_DOMAIN": 2, "DOWNLOAD_DELAY": 0.25}
    halves = [range(PAGES), range(PAGES, 2 * PAGES)]
    with ThreadPoolExecutor(2) as pool:
        results: list[CrawlResult] = list(
            pool.map(
                lambda pair: run_crawl(
                    _pages(a, "a.test", pair[1]),
                    _member(redis_server, pair[0], **slow),
                    hosts=HOSTS,
                    timeout=120,
                ),
                zip(["one", "two"], halves, strict=True),
            )
        )
    assert outage_started.is_set()
    pages = a.seen("/page/", prefix=True)
    assert {s.path for s in pages if s.status == 200} == {f"/page/{i}" for i in range(2 * PAGES)}
    failing = [s for s in pages if s.status == 503]
    first_answer = min(s.finished or 0 for s in failing)
    # In flight when the outage began: each member's 2 (on Scrapy >= 2.14 with the asyncio
    # reactor a slot may have a few more leaving at once); then one probe per Retry-After
    # for the whole fleet.
    later = sorted(s.time for s in failing if s.time > first_answer + 0.5)
    assert len(failing) - len(later) <= 2 * 4
    for before, after in zip([first_answer, *later], later, strict=False):
        assert after - before >= 3 - 0.1, later
    assert len(later) <= 12 // 3 + 1
    # Counted: those probes and the one the site answered again; a member whose view of the
    # shared pause lags (a loaded machine) may send one more as the pause ends, at most one
    # per member, and only to a site that answers again.
    probes = sum(r.stat("robotstxt/pause/probes") for r in results)
    assert len(later) + 1 <= probes <= len(later) + len(results)


def test_a_job_stopped_during_a_pause_respects_the_rest_of_it_when_resumed(
    server_factory: Callable[..., ScriptedServer], tmp_path: Path
) -> None:
    a = _site(server_factory())
    a.outage(Reply(503, headers={"Retry-After": "10"}))
    a.when(
        lambda: bool(a.seen("/page/", prefix=True)),
        lambda: threading.Timer(6, lambda: a.outage(None)).start(),
        timeout=60,
    )
    job = {**ADDON, "JOBDIR": str(tmp_path / "job")}
    urls = _pages(a, "a.test", range(PAGES))
    stopped = run_crawl(urls, job, hosts=HOSTS, interrupt=Interrupt(a, "/page/", 1), check=False)
    assert stopped.interrupted
    paused_at = min(s.finished or 0 for s in a.requests if s.status == 503)
    before = len(a.requests)
    # scrapy robots shows the pause the job's store keeps: on, when it answered within the 10 s
    # (on a loaded machine stopping the job and starting the command can take longer: the
    # pause is then shown over, its probe due, and the resumed job follows it all the same).
    shown = _scrapy_robots(a.url("/page/1", host="a.test"), tmp_path / "job", tmp_path)
    assert "pause:  pause" in shown and "(HTTP 503 with Retry-After 10s at /page/" in shown
    if time.monotonic() < paused_at + 10:
        assert "pause:  paused," in shown
    resumed = run_crawl(urls, job, hosts=HOSTS)
    after = a.seen("/page/", prefix=True)[before:]
    assert after and min(s.time for s in after) >= paused_at + 10 - 0.2
    assert resumed.stat("robotstxt/pause/followed") == 1
    # Each page once: the held copies go, the spider's start requests yielded again are
    # filtered by the dupefilter Scrapy saved when the job stopped (nothing to file again).
    answered = Counter(s.path for s in a.seen("/page/", prefix=True) if s.status == 200)
    assert answered == {f"/page/{i}": 1 for i in range(PAGES)}
    assert resumed.stat("robotstxt/held_refiled") == 0


def test_a_job_stopped_while_pages_wait_for_their_slot_keeps_the_pause_their_answers_began(
    server_factory: Callable[..., ScriptedServer], tmp_path: Path
) -> None:
    """Ctrl-C while 2 pages are in flight and the rest wait for a place in their slot (Scrapy
    >= 2.14): the waits end within a second, and the 503s that arrive after that still pause
    the site, in the job's store, for the resumed run."""
    a = _site(server_factory())
    # Answered after the waits end (the close is noticed within a second).
    a.outage(Reply(503, headers={"Retry-After": "30"}, delay=2.5))
    job = {**ADDON, "JOBDIR": str(tmp_path / "job"), "CONCURRENT_REQUESTS_PER_DOMAIN": 2}
    urls = _pages(a, "a.test", range(6))
    stopped = run_crawl(urls, job, hosts=HOSTS, interrupt=Interrupt(a, "/page/", 2), check=False)
    assert stopped.interrupted
    assert any(s.status == 503 for s in a.requests)
    shown = _scrapy_robots(a.url("/page/1", host="a.test"), tmp_path / "job", tmp_path)
    assert "pause:  paused," in shown and "HTTP 503 with Retry-After 30s" in shown


def _scrapy_robots(url: str, jobdir: Path, cwd: Path) -> str:
    store = f"REP_STORE=sqlite:///{jobdir / 'robotstxt.sqlite3'}"
    hosts = ["-s", f"TEST_HOSTS={json.dumps(HOSTS)}", "-s", "DNS_RESOLVER=_resolver.MappedResolver"]
    result = scrapy_robots("-s", store, *hosts, url, cwd=cwd)
    return result.stdout + result.stderr


def test_a_site_answering_503_for_ever_ends_the_crawl(
    server_factory: Callable[..., ScriptedServer],
) -> None:
    # REP_PAUSE_GIVE_UP_AFTER shortened from 60 s to 3 s; with the defaults the give-up comes a
    # minute after the pause began (test_pause_parts.py,
    # test_a_site_answering_503_for_ever_is_given_up_a_minute_after_its_pause_began).
    a, b = _site(server_factory()), _site(server_factory())
    a.outage(Reply(503))
    starts = _pages(a, "a.test", range(5)) + _pages(b, "b.test", range(5))
    result = run_crawl(
        starts,
        {**ADDON, "DOWNLOAD_TIMEOUT": 180, "REP_PAUSE_GIVE_UP_AFTER": 3},
        hosts=HOSTS,
        spider="errback_yields",
        timeout=60,
    )
    last_page = max(result.response_times)
    assert result.stats["elapsed_time_seconds"] - last_page <= 3 + 5
    assert len(result.responses) == 5
    # Given up with the reason, each request's errback told.
    assert result.stat("robotstxt/pause/gave_up") == 1
    assert result.stat("robotstxt/gave_up") == 0  # its robots.txt answered
    assert len(result.errbacks) == 5
    assert all("asked to slow down" in e.message for e in result.errbacks)

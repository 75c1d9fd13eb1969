"""Several real crawler processes sharing robots.txt results through a real redis-server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import redis
from _crawl import BASE_SETTINGS, MAIN, TESTS_DIR, CrawlResult, Start, run_crawl
from _redis_server import RedisServer
from _servers import Reply, ScriptedServer, html_page
from test_middleware_basic import settings as middleware_settings

RULES = "User-agent: *\nDisallow: /page/private\n"
ALLOWED = ("/page/a", "/page/b")


def settings(redis_server: RedisServer, **extra: Any) -> dict[str, Any]:
    return middleware_settings(
        **{
            "REP_STORE": redis_server.url,
            "REP_STORE_TIMEOUT": 0.5,
            "REP_LEASE_POLL_INTERVAL": 0.1,
            **extra,
        }
    )


def spawn_crawl(
    urls: list[str], crawl_settings: dict[str, Any], workdir: Path
) -> subprocess.Popen[bytes]:
    """A crawl like ``run_crawl``'s, but as a process the test can SIGKILL at a chosen moment."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = {
        "settings": {**BASE_SETTINGS, **crawl_settings},
        "start": [Start(url).to_json() for url in urls],
        "follow_links": False,
        "follow_meta": {},
        "extra": [],
        "hosts": {},
        "result": str(workdir / "result.json"),
    }
    config_path = workdir / "config.json"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    pythonpath = os.pathsep.join(filter(None, [str(TESTS_DIR), os.environ.get("PYTHONPATH")]))
    with (workdir / "crawl.log").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, str(MAIN), str(config_path)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": pythonpath},
            cwd=workdir,
        )


def test_three_processes_fetch_each_robots_txt_once(
    server_factory: Callable[..., ScriptedServer], redis_server: RedisServer
) -> None:
    servers = [server_factory() for _ in range(10)]
    for server in servers:
        # Slow enough that the three processes want the same robots.txt at the same time.
        server.route("/robots.txt", Reply.text(RULES, delay=1.0))
    urls = [s.url(path) for s in servers for path in (*ALLOWED, "/page/private")]
    allowed = sorted(s.url(path) for s in servers for path in ALLOWED)
    # A store call that times out makes a process fetch by itself (by design), which is not
    # what this test is about: a timeout no loaded machine reaches.
    crawl_settings = settings(redis_server, REP_STORE_TIMEOUT=10)
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _: run_crawl(urls, crawl_settings, timeout=120), range(3)))
    # On failure, the WARNING lines (a store outage's names its error).
    said = [line for r in results for line in r.log.splitlines() if "WARNING" in line]
    assert [r.stat("robotstxt/store_error") for r in results] == [0, 0, 0], said
    for server in servers:
        assert server.count("/robots.txt") == 1, server.origin
        assert server.count("/page/private") == 0
        for path in ALLOWED:
            assert server.count(path) == 3
    for result in results:
        assert sorted(result.responses) == allowed
        assert result.close_reason == "finished"
    assert sum(r.stat("robotstxt/request_count") for r in results) == 10


def test_lease_of_a_killed_fetcher_lapses_and_another_process_fetches(
    server_factory: Callable[..., ScriptedServer], redis_server: RedisServer, tmp_path: Path
) -> None:
    slow, other = server_factory(), server_factory()
    # The first robots.txt request never gets an answer; the next one does.
    slow.route("/robots.txt", Reply(hang=True), Reply.text(RULES))
    other.robots("User-agent: *\nAllow: /\n")
    # The lease is renewed every TTL / 3 while its holder lives, so a short TTL stays held
    # until the kill; short, so the test waits seconds for the lapse, not the default 30 s.
    # The dead holder's held request (slow's /page/a) is adopted after REP_HELD_OWNER_TTL,
    # likewise shortened.
    crawl_settings = settings(redis_server, REP_LEASE_TTL=4, REP_HELD_OWNER_TTL=3)
    holder = spawn_crawl([slow.url("/page/a")], crawl_settings, tmp_path / "holder")
    client = redis.Redis.from_url(redis_server.url)
    try:
        assert slow.wait_for("/robots.txt", count=1, timeout=60)
        lease_key = f"scrapy-rep:lease:{slow.origin}"
        holder_owner = client.get(lease_key)
        assert holder_owner is not None, "the first process fetches without holding the lease"
        urls = [slow.url(p) for p in (*ALLOWED, "/page/private")] + [other.url("/page/x")]
        with ThreadPoolExecutor(1) as pool:
            second = pool.submit(run_crawl, urls, crawl_settings, timeout=90)
            # The second process is crawling (and so also waiting for slow's lease) once
            # its request to the other origin arrives; then the lease holder dies.
            assert other.wait_for("/page/x", count=1, timeout=60)
            assert slow.count("/robots.txt") == 1
            holder.kill()
            holder.wait(timeout=30)
            # The dead holder's lease is still there: the other process must wait out its
            # remaining time before it may fetch. The clock read before asking puts the lapse
            # no later than it is.
            asked_at = time.monotonic()
            owner, remaining_ms = client.pipeline().get(lease_key).pttl(lease_key).execute()
            assert owner == holder_owner
            assert remaining_ms > 0
            lapses_at = asked_at + remaining_ms / 1000
            result: CrawlResult = second.result()
    finally:
        client.close()
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert slow.count("/robots.txt") == 2
    # Fetched only once the lease lapsed (1 ms: PTTL's rounding).
    assert slow.seen("/robots.txt")[1].time >= lapses_at - 0.001
    assert result.stat("robotstxt/request_count") == 2  # slow's robots.txt + other's
    assert sorted(result.responses) == sorted(
        [slow.url(p) for p in ALLOWED] + [other.url("/page/x")]
    )
    assert slow.count("/page/private") == 0


def test_redis_killed_mid_crawl_the_crawl_completes_in_memory(
    server_factory: Callable[..., ScriptedServer], redis_server: RedisServer
) -> None:
    early = [server_factory() for _ in range(5)]
    late = [server_factory() for _ in range(5)]
    for server in early + late:
        server.robots(RULES)
    gate_open = threading.Event()
    hub = early[0]
    # The gate page is answered only after Redis died; its links lead to origins never seen
    # before (robots.txt needed with the store gone) and to more pages of known origins.
    later_links = [s.url(p) for s in late for p in (*ALLOWED, "/page/private")]
    later_links += [s.url("/page/late") for s in early]
    hub.route("/page/gate", Reply(200, html_page("gate", later_links), release=gate_open))

    def kill_redis_then_open_the_gate() -> None:
        redis_server.kill()
        gate_open.set()

    trigger = hub.when(
        lambda: hub.count("/page/gate") >= 1, kill_redis_then_open_the_gate, timeout=60
    )
    start = [s.url(p) for s in early for p in (*ALLOWED, "/page/private")]
    start.append(hub.url("/page/gate"))
    result = run_crawl(start, settings(redis_server), follow_links=True, timeout=120)
    assert trigger.condition_met
    assert result.close_reason == "finished"
    expected = {s.url(p) for s in early + late for p in ALLOWED}
    expected |= {s.url("/page/late") for s in early} | {hub.url("/page/gate")}
    assert sorted(result.responses) == sorted(expected)
    for server in early + late:
        assert server.count("/page/private") == 0
        assert server.count("/robots.txt") == 1
        for path in ALLOWED:
            assert server.count(path) == 1
    assert [
        line for line in result.log.splitlines() if "WARNING" in line and "store" in line.lower()
    ]

"""README's scrapy-redis block, as written, run by a real fleet (tests/_fleet.py): three
``scrapy crawl`` processes, scrapy-redis scheduler and dupefilter, REP_STORE on the same
redis-server, a multi-origin site whose servers count what they answered."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from _fleet import RULES, START_KEY, Fleet, Site, readme_block
from _redis_server import RedisServer
from _servers import Reply, ScriptedServer

#: The only settings a test puts after README's block: this test's Redis, and times a test can
#: wait for (README's MAX_IDLE_TIME_BEFORE_CLOSE is meant for real fleets).
FAST = {
    "MAX_IDLE_TIME_BEFORE_CLOSE": 3,
    "REP_LEASE_POLL_INTERVAL": 0.1,
    # A store call that times out makes a process fetch by itself (by design): not this test's
    # subject, so a timeout no loaded machine reaches.
    "REP_STORE_TIMEOUT": 10,
}


def fleet_for(tmp_path: Path, redis_server: RedisServer, **extra: Any) -> Fleet:
    url = redis_server.url
    overrides = {"REDIS_URL": url, "REP_STORE": url, **FAST, **extra}
    return Fleet(tmp_path, url, readme_block(), overrides)


def test_readme_block_keeps_the_shared_queue_and_lets_the_fleet_end() -> None:
    settings: dict[str, Any] = {}
    exec(readme_block(), {}, settings)
    assert settings["SCHEDULER"] == "scrapy_redis.scheduler.Scheduler"
    assert settings["DUPEFILTER_CLASS"] == "scrapy_redis.dupefilter.RFPDupeFilter"
    # Without it the first process to close empties the shared queue and dupefilter.
    assert settings["SCHEDULER_PERSIST"] is True
    # Without it a RedisSpider fleet never ends.
    assert settings["MAX_IDLE_TIME_BEFORE_CLOSE"] > 0
    assert settings["REP_STORE"] == settings["REDIS_URL"]
    assert settings["ADDONS"] == {"scrapy_rep.Addon": 0}


def test_fleet_ends_and_a_member_stopped_midway_empties_nothing(
    server_factory: Callable[[], ScriptedServer], redis_server: RedisServer, tmp_path: Path
) -> None:
    # Pages take a while, so the crawl is still going when one member is stopped.
    site = Site.build(server_factory, origins=8, pages=15, page_delay=0.1)
    fleet = fleet_for(tmp_path, redis_server)
    fleet.seed(site.seeds())
    fleet.start(3)
    watched = site.servers[-1]
    # Ctrl-C (a rolling restart) once the crawl reached the last origin, well before its end,
    # to a member known to be crawling: the one that fetched the third page there.
    assert watched.wait_for("/page/", count=3, prefix=True, timeout=120)
    stopped = fleet.member_of(watched.seen("/page/", prefix=True)[2])
    stopped.proc.send_signal(signal.SIGINT)
    results = fleet.wait(timeout=180)
    assert [r.exit_code for r in results] == [0, 0, 0]
    reasons = {m.name: r.reason for m, r in zip(fleet.members, results, strict=True)}
    assert reasons.pop(stopped.name) == "shutdown"
    assert list(reasons.values()) == ["finished", "finished"]
    # Requests the stopped member held at that moment stayed in Redis and were adopted.
    assert site.lost() == []
    assert stopped.result().stat("robotstxt/held_dropped_on_close") == 0
    assert site.private_fetches() == 0
    assert site.robots_fetches() == [1] * len(site.servers)
    # Only scrapy-redis's start requests (dont_filter) are fetched a second time, when a link
    # finds them again: nothing the dupefilter saw is refetched.
    assert site.refetched() <= len(site.seeds())
    # SCHEDULER_PERSIST: the dupefilter outlives every member.
    assert "fleet:dupefilter" in fleet.redis_keys()


def test_kill_9_of_a_member_holding_requests_loses_none(
    server_factory: Callable[[], ScriptedServer], redis_server: RedisServer, tmp_path: Path
) -> None:
    slow_robots = threading.Event()
    slow = 3  # origins 0..2 answer robots.txt only after the kill

    def robots(origin: int) -> Reply:
        return Reply.text(RULES, release=slow_robots if origin < slow else None)

    site = Site.build(server_factory, origins=6, pages=10, robots=robots)
    seeds = [s.url(f"/page/{i}") for s in site.servers[:slow] for i in range(site.pages)]
    seeds += site.seeds()[slow:]
    fleet = fleet_for(
        tmp_path,
        redis_server,
        # One batch takes every seed, so they are all held before a robots.txt request leaves.
        REDIS_START_URLS_BATCH_SIZE=len(seeds),
        # Short enough for a test: the killed member held these leases (renewal is not this
        # test's subject) and its heartbeat.
        REP_LEASE_TTL=5,
        REP_HELD_OWNER_TTL=3,
        # On Scrapy 2.11 and 2.14 the holder's robots.txt fetches of the slow origins time out
        # (REP_FETCH_TIMEOUT, 10 s) before the kill; the fleet's next attempt then waits for
        # this (default 30 s), still due well after the kill (about 11 s in).
        REP_RETRY_DELAY=10,
    )
    fleet.seed(seeds)
    (holder,) = fleet.start(1)
    try:
        for server in site.servers[:slow]:
            assert server.wait_for("/robots.txt", timeout=120)
        # Every page of the other origins fetched: all their links lead to pages fetched or
        # held, so what the kill can lose is what the holder holds — the slow origins' pages
        # (today: all 30 lost), not requests in flight.
        for server in site.servers[slow:]:
            assert server.wait_until(
                lambda s=server: all(s.count(f"/page/{i}") for i in range(site.pages)), 120
            )
        client = redis.Redis.from_url(redis_server.url)
        assert client.llen(START_KEY) == 0
        client.close()
        fleet.start(2)
        holder.kill9()
    finally:
        slow_robots.set()
    results = fleet.wait(timeout=180)
    assert [r.exit_code for r in results] == [0, 0]
    assert site.lost() == []
    assert site.private_fetches() == 0
    # One robots.txt per origin, plus the one the killed member never got an answer to.
    assert site.robots_fetches() == [2] * slow + [1] * (len(site.servers) - slow)

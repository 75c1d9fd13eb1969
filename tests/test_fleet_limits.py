"""A fleet as polite as one process: three ``scrapy crawl`` processes of README's scrapy-redis
block on a real redis-server, each download slot's concurrency and delay held fleet-wide, as
the sites count them (every request's arrival and end, server-side)."""

from __future__ import annotations

import itertools
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _fleet import Fleet, own_key, readme_block
from _redis_server import RedisServer
from _servers import Reply, ScriptedServer, Seen, html_page

#: Each page takes this long to answer, server-side.
PAGE_TIME = 0.1


def fleet_for(tmp_path: Path, redis_url: str, store_url: str | None = None, **extra: Any) -> Fleet:
    overrides = {
        "REDIS_URL": redis_url,
        "REP_STORE": store_url or redis_url,
        "REP_LEASE_POLL_INTERVAL": 0.1,
        "REP_STORE_TIMEOUT": 10,
        # All seeds in a few batches: every member has requests waiting for the same slots.
        "REDIS_START_URLS_BATCH_SIZE": 20,
        "MAX_IDLE_TIME_BEFORE_CLOSE": 3,
        **extra,
    }
    return Fleet(tmp_path, redis_url, readme_block(), overrides)


def site(
    server_factory: Callable[[], ScriptedServer],
    robots: str,
    pages: int,
    delay: float = PAGE_TIME,
    host: str = "127.0.0.1",
) -> tuple[ScriptedServer, list[str]]:
    """A site of ``pages`` pages at ``host`` (its download slot: Scrapy's slot key is the host
    name, whatever the port)."""
    server = server_factory()
    server.route("/robots.txt", Reply.text(robots))
    for i in range(pages):
        page = html_page(f"/page/{i}", [])
        server.route(
            f"/page/{i}", Reply(200, page, headers={"Content-Type": "text/html"}, delay=delay)
        )
    return server, [server.url(f"/page/{i}", host=host) for i in range(pages)]


def pages(server: ScriptedServer) -> list[Seen]:
    return sorted(server.seen("/page/", prefix=True), key=lambda seen: seen.time)


def spread(fleet: Fleet, urls: list[str], count: int = 3) -> None:
    """Start ``count`` members, each with its own share of ``urls`` (round robin) in a queue of
    its own: they share the sites, not the work (in one shared queue, whichever member's engine
    asks first would take a throttled site's whole backlog, its waiting requests being outside
    ``Downloader.active``)."""
    for n in range(count):
        fleet.seed(urls[n::count], key=own_key(len(fleet.members) + n))
    fleet.start(count, own_queue=True)


def most_at_once(seen: list[Seen]) -> int:
    """The most requests in progress at once at the site, from each one's arrival until its
    answer is written (``answered``: the body is one small write; the thread's record of the
    write's end may lag behind the client's next request on a loaded machine)."""
    ends = [s.answered or s.finished or s.time for s in seen]
    events = sorted([(s.time, 1) for s in seen] + [(end, -1) for end in ends])
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def gaps(seen: list[Seen]) -> list[float]:
    starts = [s.time for s in seen]
    return [later - earlier for earlier, later in itertools.pairwise(starts)]


def senders(fleet: Fleet, seen: list[Seen]) -> set[str]:
    return {fleet.member_of(s).name for s in seen}


def test_three_processes_hold_a_slots_concurrency_together(
    server_factory: Callable[[], ScriptedServer], redis_server: RedisServer, tmp_path: Path
) -> None:
    server, urls = site(server_factory, "User-agent: *\nAllow: /\n", pages=90)
    fleet = fleet_for(tmp_path, redis_server.url, CONCURRENT_REQUESTS_PER_DOMAIN=2)
    spread(fleet, urls)
    results = fleet.wait(timeout=180)
    assert [r.exit_code for r in results] == [0, 0, 0]
    seen = pages(server)
    # Every page once; all three took part; never more than 2 at the site (2 per process, 6,
    # without the fleet's limits), and the 2 used.
    assert sorted(s.path for s in seen) == sorted(f"/page/{i}" for i in range(90))
    assert len(senders(fleet, seen)) == 3
    assert most_at_once(seen) == 2
    assert sum(r.stat("robotstxt/slot/waited") for r in results) > 0
    assert all(r.stat("robotstxt/store_error") == 0 for r in results)


def test_crawl_delay_and_download_delay_hold_fleet_wide(
    server_factory: Callable[[], ScriptedServer], redis_server: RedisServer, tmp_path: Path
) -> None:
    # Crawl-delay 1 at one site; DOWNLOAD_DELAY 1, randomised as Scrapy does (0.5 to 1.5 s),
    # at the other; both crawled at once by the three processes.
    delayed, delayed_urls = site(server_factory, "User-agent: *\nCrawl-delay: 1\n", pages=52)
    jittered, jittered_urls = site(
        server_factory, "User-agent: *\nAllow: /\n", pages=100, host="localhost"
    )
    fleet = fleet_for(tmp_path, redis_server.url, DOWNLOAD_DELAY=1, REP_CRAWL_DELAY=True)
    paired = [url for pair in zip(delayed_urls, jittered_urls, strict=False) for url in pair]
    spread(fleet, paired + jittered_urls[len(delayed_urls) :])
    results = fleet.wait(timeout=240)
    assert [r.exit_code for r in results] == [0, 0, 0]
    exact, random = pages(delayed), pages(jittered)
    assert len(exact) == 52 and len({s.path for s in exact}) == 52
    assert len(random) == 100 and len({s.path for s in random}) == 100
    assert len(senders(fleet, exact)) >= 2 and len(senders(fleet, random)) >= 2
    # Crawl-delay: every gap at least the delay (50 ms for the server's own clock reading).
    assert min(gaps(exact)) >= 0.95, gaps(exact)
    # DOWNLOAD_DELAY: within Scrapy's band (50 ms of measurement), mean within 10 %, not equal.
    random_gaps = gaps(random)
    assert 0.45 <= min(random_gaps) and max(random_gaps) <= 1.55, random_gaps
    assert abs(statistics.mean(random_gaps) - 1.0) <= 0.1, statistics.mean(random_gaps)
    assert statistics.pstdev(random_gaps) > 0.1
    # Each slot starts one request per delay: never two at once at either site.
    assert most_at_once(exact) == 1 and most_at_once(random) == 1


def test_a_killed_members_places_come_back_within_the_bound(
    server_factory: Callable[[], ScriptedServer], redis_server: RedisServer, tmp_path: Path
) -> None:
    # Slow pages: a member holds its place long, and is killed holding it, while another member
    # holds the other place and has requests of its own waiting.
    server, urls = site(server_factory, "User-agent: *\nAllow: /\n", pages=60, delay=1.0)
    fleet = fleet_for(tmp_path, redis_server.url, CONCURRENT_REQUESTS_PER_DOMAIN=2)
    spread(fleet, urls)

    def holders() -> set[str]:
        return {fleet.member_of(s).name for s in in_progress(server)}

    assert server.wait_until(lambda: len(holders()) == 2, timeout=120)
    victim = next(m for m in fleet.members if m.name in holders())
    victim.kill9()
    killed_at = time.monotonic()
    # Its place back for the others within the bound (10 s heartbeat + the 1 s backstop): two
    # of their requests in progress at once.
    assert server.wait_until(
        lambda: len([s for s in in_progress(server) if s.time > killed_at]) == 2, timeout=15
    ), [(fleet.member_of(s).name, s.time - killed_at) for s in pages(server)[-8:]]
    results = fleet.wait(timeout=180)
    assert [r.exit_code for r in results] == [0, 0]
    seen = pages(server)
    assert most_at_once(seen) <= 2
    fetches = Counter(s.path for s in seen)
    assert max(fetches.values()) == 1
    parsed = [url for result in results for url in result.responses]
    assert len(parsed) == len(set(parsed))
    # Every page once, but those the killed member had taken from scrapy-redis's queue (its
    # pops are destructive): listed, fetched by no one else.
    lost = sorted({f"/page/{i}" for i in range(60)} - set(fetches))
    print(f"lost with the killed member ({len(lost)}):", lost)
    assert len(lost) + len(fetches) == 60


def in_progress(server: ScriptedServer) -> list[Seen]:
    return [s for s in server.seen("/page/", prefix=True) if s.finished is None]


def test_redis_away_mid_crawl_each_process_goes_on_with_its_share(
    server_factory: Callable[[], ScriptedServer], tmp_path: Path
) -> None:
    # The scheduler's Redis stays; the store's (where the fleet's places are) goes away.
    with (
        RedisServer.start(tmp_path / "queue") as queue,
        RedisServer.start(tmp_path / "store") as store,
    ):
        server, urls = site(server_factory, "User-agent: *\nAllow: /\n", pages=60, delay=0.3)
        fleet = fleet_for(tmp_path, queue.url, store.url, CONCURRENT_REQUESTS_PER_DOMAIN=3)
        spread(fleet, urls)
        assert server.wait_for("/page/", count=10, prefix=True, timeout=120)
        store.kill()
        down_at = time.monotonic()
        assert server.wait_until(lambda: len(server.seen("/page/", prefix=True)) >= 35, timeout=120)
        store.restart()
        results = fleet.wait(timeout=180)
    assert [r.exit_code for r in results] == [0, 0, 0]
    seen = pages(server)
    assert sorted(s.path for s in seen) == sorted(f"/page/{i}" for i in range(60))
    # Redis away: 3 places, 3 members last seen: 1 each, still 3 at most at the site.
    assert most_at_once([s for s in seen if s.time > down_at]) <= 3
    for result in results:
        warned = result.log.count("Redis unavailable for the fleet's download slots")
        assert warned == 1, result.log[-3000:]
    assert sum(r.stat("robotstxt/slot/fleet_local") for r in results) > 0

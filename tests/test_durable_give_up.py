"""A durable job never loses a request because the crawl stopped waiting (SPEC C4).

Real crawls with the add-on's defaults, retries made quicker where stated (the retry schedule
itself, 0, 5, 15 s after 503s, is tested on the parts: tests/test_crawl_parts.py): a site whose
robots.txt answers 503 for a while. With JOBDIR or a Redis store the requests the crawl gives
up on are kept for the job's next run; without, they are dropped with the reason, as fast as
before.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from _crawl import run_crawl
from _fleet import Fleet, Site, readme_block
from _redis_server import RedisServer
from _servers import Reply, ScriptedServer
from test_multiprocess_redis import spawn_crawl

#: The add-on with its defaults (the harness's base settings turn ROBOTSTXT_OBEY off).
ADDON = {"ADDONS": {"scrapy_rep.Addon": 0}, "ROBOTSTXT_OBEY": True}
RULES = "User-agent: *\nDisallow: /page/no/\n"
#: The fates of a held request (README "Stats"): each held request is counted in one of them.
FATES = (
    "robotstxt/released",
    "robotstxt/held_dropped",
    "robotstxt/held_kept_for_next_run",
    "robotstxt/held_persisted",
    "robotstxt/held_dropped_on_close",
)


def site_urls(server: ScriptedServer) -> tuple[list[str], list[str]]:
    """20 allowed and 10 disallowed (once robots.txt answers) pages, interleaved."""
    allowed = [server.url(f"/page/ok/{i}") for i in range(20)]
    disallowed = [server.url(f"/page/no/{i}") for i in range(10)]
    return allowed, disallowed


def interleaved(allowed: list[str], disallowed: list[str]) -> list[str]:
    urls = []
    for i, url in enumerate(allowed):
        urls.append(url)
        if i % 2:
            urls.append(disallowed[i // 2])
    return urls


def assert_fates_add_up(stats: Mapping[str, Any]) -> None:
    held = stats.get("robotstxt/held", 0)
    assert held == sum(stats.get(name, 0) for name in FATES), dict(stats)


def test_a_given_up_jobdir_job_keeps_its_requests_and_the_resumed_job_fetches_them(
    http_server: ScriptedServer, tmp_path: Path
) -> None:
    site = http_server
    site.route("/robots.txt", Reply(503))
    allowed, disallowed = site_urls(site)
    # Stated: quicker retries (REP_RETRY_FAST_DELAY 0.5 s, default 5 s), in both runs.
    job = {**ADDON, "JOBDIR": str(tmp_path / "job"), "REP_RETRY_FAST_DELAY": 0.5}
    first = run_crawl(interleaved(allowed, disallowed), job, timeout=120)
    # 503 at 0, 0.5 and 1.5 s (REP_RETRY_FAST_DELAY doubling), then given up at the next idle
    # check: nothing is dropped, all 30 wait in the JOBDIR.
    assert site.count("/robots.txt") == 3
    assert first.stat("robotstxt/gave_up") == 1
    assert first.stat("robotstxt/held_dropped") == 0
    assert first.stat("robotstxt/held_kept_for_next_run") == 30
    assert_fates_add_up(first.stats)
    assert first.stats["elapsed_time_seconds"] < 15
    assert "are kept for the job's next run in" in first.log
    assert "resume the job with the same JOBDIR" in first.log
    assert "30 held request(s) stay in" in first.log
    assert site.count("/page/", prefix=True) == 0

    # The site recovers; the job is resumed with the same JOBDIR (no start requests).
    site.robots(RULES)
    second = run_crawl([], job)
    assert second.stat("robotstxt/held_restored") == 30
    assert sorted(second.responses) == sorted(allowed)
    assert all(site.count(url[len(site.origin) :]) == 1 for url in allowed)
    assert site.count("/page/no/", prefix=True) == 0
    assert second.stat("robotstxt/forbidden_before_schedule") == 10
    assert second.stat("robotstxt/released") == 30
    assert_fates_add_up(second.stats)
    assert not (tmp_path / "job" / "robotstxt-held.sqlite3").exists()


def test_a_job_killed_after_three_failures_tries_robots_txt_again_before_giving_up(
    http_server: ScriptedServer, tmp_path: Path
) -> None:
    site = http_server
    # Three 503s, then the site hangs: the process is killed while its store says "3 failures,
    # next attempt due in 4 s".
    site.route("/robots.txt", Reply(503), Reply(503), Reply(503), Reply(hang=True))
    allowed, disallowed = site_urls(site)
    job = {**ADDON, "JOBDIR": str(tmp_path / "job")}
    # Stated for the first run only: quicker retries (0, 1, 3 s), and no give-up of its own
    # before the kill (the subject is the resumed run, which has the defaults).
    crawl = spawn_crawl(
        interleaved(allowed, disallowed),
        {**job, "REP_RETRY_FAST_DELAY": 1, "REP_GIVE_UP_AFTER": 0},
        tmp_path / "first",
    )
    try:
        assert wait_for_text(tmp_path / "first" / "crawl.log", ": unreachable (HTTP 503", 3)
        crawl.send_signal(signal.SIGKILL)
        assert crawl.wait(timeout=30) == -signal.SIGKILL
    finally:
        if crawl.poll() is None:
            crawl.kill()
            crawl.wait()
    assert site.count("/robots.txt") == 3

    site.robots(RULES)
    started = time.monotonic()
    second = run_crawl([], job, timeout=120)
    assert second.stat("robotstxt/held_restored") == 30
    # The first spider_idle came before the stored retry time: nothing was given up, the
    # attempt due then was made, and it succeeded.
    assert second.stat("robotstxt/gave_up") == 0
    assert site.count("/robots.txt") == 4
    assert sorted(second.responses) == sorted(allowed)
    assert site.count("/page/no/", prefix=True) == 0
    assert_fates_add_up(second.stats)
    assert time.monotonic() - started < 60


def test_without_jobdir_a_given_up_origin_is_dropped_with_the_reason_as_fast_as_before(
    http_server: ScriptedServer,
) -> None:
    site = http_server
    site.route("/robots.txt", Reply(503))
    allowed, disallowed = site_urls(site)
    # Stated: quicker retries (0, 0.5, 1.5 s; with the default 5 s: 0, 5, 15 s).
    quick = {**ADDON, "REP_RETRY_FAST_DELAY": 0.5}
    result = run_crawl(interleaved(allowed, disallowed), quick, timeout=120)
    assert site.count("/robots.txt") == 3
    assert result.stat("robotstxt/gave_up") == 1
    assert result.stat("robotstxt/held_dropped") == 30
    assert result.stat("robotstxt/held_kept_for_next_run") == 0
    assert_fates_add_up(result.stats)
    assert result.stats["elapsed_time_seconds"] < 15
    assert (
        f"Dropped 30 request(s) for {site.origin}, not downloaded: its robots.txt failed 3 "
        "times in a row (HTTP 503)" in result.log
    )
    assert "set JOBDIR, or a Redis REP_STORE, to keep such requests" in result.log


def test_a_fleet_whose_only_site_fails_ends_and_its_next_run_fetches_every_page(
    server_factory: Callable[[], ScriptedServer], redis_server: RedisServer, tmp_path: Path
) -> None:
    site = Site.build(server_factory, origins=1, pages=12, robots=lambda _: Reply(503))
    seeds = [site.servers[0].url(f"/page/{i}") for i in range(site.pages)]
    overrides = {
        "REDIS_URL": redis_server.url,
        "REP_STORE": redis_server.url,
        "MAX_IDLE_TIME_BEFORE_CLOSE": 3,
        "REP_LEASE_POLL_INTERVAL": 0.1,
        "REP_STORE_TIMEOUT": 10,
        # Stated: quicker retries (0, 1, 3 s), so the fleet gives up sooner.
        "REP_RETRY_FAST_DELAY": 1,
        # Each member takes some of the seeds.
        "REDIS_START_URLS_BATCH_SIZE": 6,
    }
    fleet = Fleet(tmp_path / "run1", redis_server.url, readme_block(), overrides)
    fleet.seed(seeds)
    fleet.start(2)
    results = fleet.wait(timeout=120)
    assert [r.exit_code for r in results] == [0, 0]
    assert sum(site.fetched().values()) == 0
    kept = sum(r.stat("robotstxt/held_kept_for_next_run") for r in results)
    assert kept == site.pages
    assert sum(r.stat("robotstxt/held_dropped") for r in results) == 0
    for result in results:
        assert_fates_add_up(result.stats)

    # The site answers again; the fleet's next run (no new seeds) takes what was kept.
    site.servers[0].robots("User-agent: *\nDisallow: /page/private\n")
    again = Fleet(tmp_path / "run2", redis_server.url, readme_block(), overrides)
    again.start(2)
    results = again.wait(timeout=120)
    assert [r.exit_code for r in results] == [0, 0]
    assert site.lost() == []
    assert site.private_fetches() == 0
    assert sum(r.stat("robotstxt/held_restored") for r in results) == site.pages
    assert sum(r.stat("robotstxt/held_adopted") for r in results) == 0
    for result in results:
        assert_fates_add_up(result.stats)


def wait_for_text(path: Path, text: str, count: int, timeout: float = 60) -> bool:
    """Wait until ``path`` (a crawl's log) holds ``text`` ``count`` times."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text("utf-8", "replace").count(text) >= count:
            return True
        time.sleep(0.05)
    return False

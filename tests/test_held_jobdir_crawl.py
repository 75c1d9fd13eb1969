"""A real crawl with JOBDIR, killed with SIGKILL while it holds requests, then resumed."""

from __future__ import annotations

import signal
import sqlite3
from collections import Counter
from contextlib import closing
from pathlib import Path

from _crawl import RunningCrawl, run_crawl
from _servers import Reply, ScriptedServer
from test_middleware_basic import settings
from test_multiprocess_redis import spawn_crawl

from scrapy_rep.storage.held._jobdir import HELD_DB

PAGES = 20


def test_kill_9_while_holding_then_resume_fetches_every_held_request(
    http_server: ScriptedServer, http_server2: ScriptedServer, tmp_path: Path
) -> None:
    pending, known = http_server, http_server2
    # The first robots.txt request never gets an answer (the process dies waiting); the next does.
    pending.route("/robots.txt", Reply(hang=True), Reply.text("User-agent: *\nDisallow: /page/2\n"))
    known.robots("User-agent: *\nDisallow:\n")
    job = settings(JOBDIR=str(tmp_path / "job"), REP_STORE="memory://")
    held = [pending.url(f"/page/{i}") for i in range(1, 4)]
    crawl = spawn_crawl([*held, known.url("/page/0")], job, tmp_path / "first")
    try:
        # Start requests are taken in order: once known's page is asked for, all three of
        # pending's were held, and its robots.txt is on its way.
        assert known.wait_for("/page/0", timeout=60)
        assert pending.wait_for("/robots.txt", timeout=60)
        crawl.send_signal(signal.SIGKILL)
        assert crawl.wait(timeout=30) == -signal.SIGKILL
    finally:
        if crawl.poll() is None:
            crawl.kill()
            crawl.wait()
    assert pending.count("/page/", prefix=True) == 0

    # Resumed with no start requests at all: only the JOBDIR can bring them back.
    second = run_crawl([], job)
    assert pending.count("/page/1") == 1
    assert pending.count("/page/3") == 1
    assert pending.count("/page/2") == 0
    assert sorted(second.responses) == [pending.url("/page/1"), pending.url("/page/3")]
    assert second.stat("robotstxt/forbidden_before_schedule") == 1


def test_kill_9_during_a_pause_then_resume_downloads_each_page_once(
    http_server: ScriptedServer, tmp_path: Path
) -> None:
    site = http_server
    site.robots("User-agent: *\nAllow: /\n")
    # Every page says "slow down" for 3 s: the origin pauses and each page goes back to wait,
    # held in the JOBDIR (those that went out, those in the download slot, the rest).
    site.outage(Reply(503, headers={"Retry-After": "3"}))
    job = settings(JOBDIR=str(tmp_path / "job"))
    urls = [site.url(f"/page/{i}") for i in range(PAGES)]
    first = RunningCrawl.start(urls, job, tmp_path / "first", say_idle=True)
    try:
        # Idle while paused: nothing in the scheduler or the downloader, every page held.
        first.idle_stats(lambda stats: stats.get("robotstxt/pause/paused", 0) >= 1, timeout=60)
    finally:
        assert first.kill() == -signal.SIGKILL
    assert _held(tmp_path / "job") == PAGES
    assert site.count("/page/", prefix=True) > 0  # some went out (and got 503)
    # Scrapy's dupefilter had usually not flushed the fingerprints of the pages it let through
    # (a buffered file); Scrapy 2.14 writes them through: the checks below hold either way.
    lost = (tmp_path / "job" / "requests.seen").stat().st_size == 0
    site.outage(None)

    # Resumed with the same start requests, as `scrapy crawl` does: the held copies (sent with
    # dont_filter) and the spider's copies (which the dupefilter no longer knows) meet.
    resumed = run_crawl(urls, job)
    answered = Counter(s.path for s in site.seen("/page/", prefix=True) if s.status == 200)
    assert answered == {f"/page/{i}": 1 for i in range(PAGES)}
    assert sorted(resumed.responses) == sorted(urls)
    assert resumed.stat("robotstxt/held_restored") == PAGES
    # One copy of each page filtered; those the dupefilter lost were filed again first.
    assert resumed.stat("dupefilter/filtered") == PAGES
    assert (resumed.stat("robotstxt/held_refiled") > 0) == lost


def _held(jobdir: Path) -> int:
    with closing(sqlite3.connect(jobdir / HELD_DB)) as db:
        (count,) = db.execute("SELECT COUNT(*) FROM held").fetchone()
    return int(count)

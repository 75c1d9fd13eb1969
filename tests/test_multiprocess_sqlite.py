"""robots.txt results surviving a crawl in a SQLite file: later runs reuse them (SPEC B3)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from _crawl import Start, run_crawl
from _servers import Reply, ScriptedServer
from test_middleware_basic import settings

from scrapy_rep.storage.results._sqlite import SQLiteBackend

RULES = "User-agent: *\nDisallow: /page/private\n"
PATHS = ("/page/a", "/page/b", "/page/private")


def test_second_run_within_the_lifetime_fetches_no_robots_txt(
    server_factory: Callable[..., ScriptedServer], tmp_path: Path
) -> None:
    servers = [server_factory() for _ in range(3)]
    for server in servers:
        server.robots(RULES)
    urls = [s.url(p) for s in servers for p in PATHS]
    allowed = sorted(s.url(p) for s in servers for p in PATHS if p != "/page/private")
    crawl_settings = settings(REP_STORE=f"sqlite://{tmp_path / 'robots.sqlite3'}")
    first = run_crawl(urls, crawl_settings)
    second = run_crawl(urls, crawl_settings)
    assert sorted(first.responses) == allowed
    assert sorted(second.responses) == allowed
    assert first.stat("robotstxt/request_count") == 3
    assert second.stat("robotstxt/request_count") == 0
    for server in servers:
        assert server.count("/robots.txt") == 1
        assert server.count("/page/private") == 0


def test_jobdir_keeps_robots_txt_for_the_next_run(
    http_server: ScriptedServer, tmp_path: Path
) -> None:
    http_server.robots(RULES)
    jobdir = tmp_path / "job"
    # dont_filter: the resumed job's dupefilter remembers the first run's URLs.
    urls = [Start(http_server.url(p), dont_filter=True) for p in PATHS]
    first = run_crawl(urls, settings(JOBDIR=str(jobdir)))
    assert (jobdir / "robotstxt.sqlite3").is_file()
    second = run_crawl(urls, settings(JOBDIR=str(jobdir)))
    assert first.stat("robotstxt/request_count") == 1
    assert second.stat("robotstxt/request_count") == 0
    assert http_server.count("/robots.txt") == 1
    assert http_server.count("/page/private") == 0
    assert http_server.count("/page/a") == 2


def test_server_error_on_a_later_run_uses_the_stored_last_good_copy(
    http_server: ScriptedServer, tmp_path: Path
) -> None:
    db = tmp_path / "robots.sqlite3"
    http_server.route(
        "/robots.txt",
        Reply.text(RULES, headers={"Cache-Control": "max-age=1"}),
        Reply(503),
    )
    urls = [http_server.url(p) for p in PATHS]
    crawl_settings = settings(REP_STORE=f"sqlite://{db}", REP_CACHE_MIN_LIFETIME=0)
    first = run_crawl(urls, crawl_settings)
    assert http_server.count("/robots.txt") == 1
    assert sorted(first.responses) == sorted(http_server.url(p) for p in PATHS[:2])

    backend = SQLiteBackend(db, prefix="scrapy-rep:", timeout=2.0, entry_ttl=86400.0)
    backend.connect()
    stored = backend.get(http_server.origin)
    assert stored is not None and stored.body == RULES.encode()
    assert stored.meta["good"]["expires_at"] <= stored.meta["good"]["fetched_at"] + 1  # max-age=1
    # The next run comes after the copy expired: age it in the store rather than wait for it.
    stored.meta["good"]["expires_at"] = time.time() - 1
    backend.put(http_server.origin, stored)
    backend.close()

    second = run_crawl(urls, crawl_settings)
    statuses = [seen.status for seen in http_server.seen("/robots.txt")]
    assert statuses[0] == 200
    assert len(statuses) >= 2 and set(statuses[1:]) == {503}  # the refresh failed
    assert sorted(second.responses) == sorted(http_server.url(p) for p in PATHS[:2])
    assert http_server.count("/page/private") == 0
    assert http_server.count("/page/a") == 2
    assert second.stat("robotstxt/response_status_count/503") >= 1

"""Start requests are taken lazily while origins wait for robots.txt (StartIntakeMiddleware).

A real crawl with a SQLite store (reads in a thread pool, so nothing of a held origin is in
Downloader.active while its store read runs) over 60 origins at CONCURRENT_REQUESTS 4. Taken
all at once, every origin's robots.txt is fetched before any page; taken lazily, pages come
while robots.txt of later origins is still unfetched. And a start request waits while the
engine backs out (every downloader place busy), as Scrapy's lazy start recipe does.
"""

from __future__ import annotations

from pathlib import Path

from _crawl import run_crawl
from _servers import Reply, ScriptedServer, html_page

from scrapy_rep.crawl._compat import START_INTAKE

SITES = 60


def test_pages_come_before_the_last_robots_txt_with_an_async_store(
    http_server: ScriptedServer, tmp_path: Path
) -> None:
    http_server.robots("User-agent: *\nAllow: /\n")
    http_server.route("/home", Reply(body=html_page("home", [])))
    hosts = {f"site{n:02d}.test": "127.0.0.1" for n in range(SITES)}
    settings = {
        "ADDONS": {"scrapy_rep.Addon": 0},
        "ROBOTSTXT_OBEY": True,
        "CONCURRENT_REQUESTS": 4,
        "REP_STORE": f"sqlite:///{tmp_path / 'robots.sqlite3'}",
    }
    result = run_crawl([http_server.url("/home", host=h) for h in hosts], settings, hosts=hosts)
    assert len(result.responses) == SITES
    reached = result.reached_downloader
    robots = [i for i, url in enumerate(reached) if url.endswith("/robots.txt")]
    pages = [i for i, url in enumerate(reached) if url.endswith("/home")]
    assert len(robots) == SITES, reached[:5]
    if not START_INTAKE:
        return  # Scrapy 2.11/2.12: start requests are taken as Scrapy takes them (no pacing)
    # The first site's page before the last site's robots.txt: intake was not all at once,
    # and at most about CONCURRENT_REQUESTS origins were resolved ahead of the first page.
    assert pages[0] < robots[-1]
    assert sum(i < pages[0] for i in robots) <= 2 * settings["CONCURRENT_REQUESTS"]


def test_no_start_request_is_taken_while_every_downloader_place_is_busy(
    http_server: ScriptedServer,
) -> None:
    # Slow pages keep both places busy while robots.txt answers at once: a start request taken
    # whenever an origin is resolved would be scheduled with both places taken.
    http_server.robots("User-agent: *\nAllow: /\n")
    http_server.route("/home", Reply(body=html_page("home", []), delay=0.2))
    hosts = {f"site{n:02d}.test": "127.0.0.1" for n in range(12)}
    settings = {
        "ADDONS": {"scrapy_rep.Addon": 0},
        "ROBOTSTXT_OBEY": True,
        "CONCURRENT_REQUESTS": 2,
    }
    result = run_crawl([http_server.url("/home", host=h) for h in hosts], settings, hosts=hosts)
    assert len(result.responses) == len(hosts)
    assert len(result.start_scheduled_active) == len(hosts)
    if not START_INTAKE:
        return  # Scrapy 2.11/2.12: start requests are taken as Scrapy takes them (no pacing)
    assert max(result.start_scheduled_active) < settings["CONCURRENT_REQUESTS"], (
        result.start_scheduled_active
    )

"""SPEC B3 in real crawls: lifetime, Cache-Control, refresh, stale copies; Crawl-delay."""

from __future__ import annotations

import itertools

from _crawl import Start, run_crawl
from _servers import ScriptedServer
from test_middleware_basic import settings


def test_short_crawl_fetches_robots_txt_once(http_server: ScriptedServer) -> None:
    http_server.robots("User-agent: *\nDisallow: /page/a\n")
    result = run_crawl(
        [http_server.url("/page/1")],
        settings(),
        extra=[
            Start(http_server.url("/page/a"), at=1.0),
            Start(http_server.url("/page/2"), at=1.0),
        ],
    )
    assert http_server.count("/robots.txt") == 1
    assert http_server.count("/page/a") == 0
    assert http_server.count("/page/2") == 1
    assert result.stat("robotstxt/refresh") == 0


def test_cache_control_max_age_shortens_the_lifetime(http_server: ScriptedServer) -> None:
    http_server.robots("User-agent: *\nDisallow: /page/a\n", headers={"Cache-Control": "max-age=1"})
    run_crawl(
        [http_server.url("/page/1")],
        settings(REP_CACHE_MIN_LIFETIME=0),
        # About a second after the first copy (max-age=1) expired.
        extra=[Start(http_server.url("/page/2"), at=2.0)],
    )
    assert http_server.count("/robots.txt") == 2


def test_crawl_delay_is_applied_when_enabled(http_server: ScriptedServer) -> None:
    http_server.robots("User-agent: *\nCrawl-delay: 0.5\nDisallow: /page/private\n")
    urls = [http_server.url(f"/page/{i}") for i in range(3)]
    result = run_crawl(urls, settings(REP_CRAWL_DELAY=True, RANDOMIZE_DOWNLOAD_DELAY=False))
    times = [s.time for s in http_server.seen("/page/", prefix=True)]
    assert len(times) == 3
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= 0.45
    assert result.stat("robotstxt/crawl_delay_applied") >= 1


def test_crawl_delay_is_ignored_by_default(http_server: ScriptedServer) -> None:
    http_server.robots("User-agent: *\nCrawl-delay: 5\n")
    urls = [http_server.url(f"/page/{i}") for i in range(3)]
    result = run_crawl(urls, settings(), timeout=30)
    assert http_server.count("/page/", prefix=True) == 3
    times = [s.time for s in http_server.seen("/page/", prefix=True)]
    assert max(times) - min(times) < 4
    assert result.stat("robotstxt/crawl_delay_applied") == 0


def test_parsed_cache_evictions_reload_from_the_store(
    http_server: ScriptedServer, http_server2: ScriptedServer
) -> None:
    http_server.robots("User-agent: *\nDisallow: /page/no\n")
    http_server2.robots("User-agent: *\nDisallow: /page/no\n")
    servers = (http_server, http_server2)
    later = [Start(s.url(p), at=1.0) for s in servers for p in ("/page/no", "/page/2")]
    result = run_crawl(
        [s.url("/page/1") for s in servers], settings(REP_PARSED_CACHE_SIZE=1), extra=later
    )
    # One parsed robots.txt fits in memory; the other origin's comes back from
    # the store (no second fetch) when its later requests come.
    for server in servers:
        assert server.count("/robots.txt") == 1
        assert server.count("/page/1") == 1
        assert server.count("/page/2") == 1
        assert server.count("/page/no") == 0
    assert result.stat("robotstxt/store_hit") >= 1
    assert result.stat("robotstxt/forbidden") == 2

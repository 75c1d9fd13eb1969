"""SPEC B3 in real crawls: lifetime, Cache-Control, refresh, stale copies; Crawl-delay."""

from __future__ import annotations

import itertools

from _crawl import Start, run_crawl
from _servers import Reply, ScriptedServer
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


def test_expired_copy_serves_while_it_is_refreshed(http_server: ScriptedServer) -> None:
    http_server.route(
        "/robots.txt",
        Reply.text("User-agent: *\nDisallow: /page/a\n"),
        Reply.text(
            "User-agent: *\nDisallow: /page/c\n",
            delay=0.3,
            headers={"Cache-Control": "max-age=60"},
        ),
    )
    result = run_crawl(
        [http_server.url("/page/1")],
        settings(REP_CACHE_LIFETIME=1, REP_CACHE_MIN_LIFETIME=0),
        extra=[
            Start(http_server.url("/page/a"), at=1.5),
            Start(http_server.url("/page/b"), at=1.5),
            Start(http_server.url("/page/c"), at=3.0),
            Start(http_server.url("/page/d"), at=3.0),
        ],
    )
    assert http_server.count("/robots.txt") == 2
    # At 1.5 s the expired copy still decided (nothing was held for the refresh)...
    assert http_server.count("/page/a") == 0
    assert http_server.count("/page/b") == 1
    # ...and from then on the refreshed one.
    assert http_server.count("/page/c") == 0
    assert http_server.count("/page/d") == 1
    assert result.stat("robotstxt/refresh") == 1
    assert result.stat("robotstxt/held") == 1  # only the very first request


def test_cache_control_max_age_shortens_the_lifetime(http_server: ScriptedServer) -> None:
    http_server.robots("User-agent: *\nDisallow: /page/a\n", headers={"Cache-Control": "max-age=1"})
    run_crawl(
        [http_server.url("/page/1")],
        settings(REP_CACHE_MIN_LIFETIME=0),
        extra=[Start(http_server.url("/page/2"), at=3.0)],
    )
    assert http_server.count("/robots.txt") == 2


def test_cache_min_lifetime_bounds_max_age(http_server: ScriptedServer) -> None:
    http_server.robots("User-agent: *\nDisallow: /page/a\n", headers={"Cache-Control": "max-age=0"})
    run_crawl(
        [http_server.url("/page/1")],
        settings(REP_CACHE_MIN_LIFETIME=60),
        extra=[Start(http_server.url("/page/2"), at=1.5)],
    )
    assert http_server.count("/robots.txt") == 1


def test_server_error_on_refresh_keeps_the_good_copy(http_server: ScriptedServer) -> None:
    http_server.route("/robots.txt", Reply.text("User-agent: *\nDisallow: /page/a\n"), Reply(500))
    result = run_crawl(
        [http_server.url("/page/1")],
        settings(REP_CACHE_LIFETIME=1, REP_CACHE_MIN_LIFETIME=0, REP_RETRY_DELAY=0.2),
        extra=[
            Start(http_server.url("/page/2"), at=1.5),
            Start(http_server.url("/page/a"), at=2.5),
            Start(http_server.url("/page/3"), at=2.5),
        ],
    )
    assert http_server.count("/robots.txt") >= 2
    assert http_server.count("/page/2") == 1
    assert http_server.count("/page/3") == 1
    assert http_server.count("/page/a") == 0
    assert result.stat("robotstxt/held") == 1
    assert result.stat("robotstxt/stale_served") >= 1
    assert "serving the last good copy" in result.log


def test_server_error_after_stale_max_age_holds(http_server: ScriptedServer) -> None:
    http_server.route("/robots.txt", Reply.text("User-agent: *\nDisallow:\n"), Reply(500))
    result = run_crawl(
        [http_server.url("/page/1")],
        settings(
            REP_CACHE_LIFETIME=0.5,
            REP_CACHE_MIN_LIFETIME=0,
            REP_STALE_MAX_AGE=1,
            REP_RETRY_DELAY=0.2,
            REP_HOLD_TIMEOUT=1,
        ),
        extra=[
            Start(http_server.url("/page/2"), at=0.7),
            Start(http_server.url("/page/3"), at=2.0),
        ],
    )
    assert http_server.count("/page/1") == 1
    assert http_server.count("/page/2") == 1  # copy expired but younger than 1 s
    assert http_server.count("/page/3") == 0  # copy too old and robots.txt failing
    assert result.stat("robotstxt/held_dropped") == 1


def test_unreachable_allow_after(http_server: ScriptedServer) -> None:
    http_server.route("/robots.txt", Reply(500))
    result = run_crawl(
        [http_server.url("/page/1")],
        settings(REP_UNREACHABLE_ALLOW_AFTER=0.5, REP_RETRY_DELAY=1, REP_HOLD_TIMEOUT=10),
        extra=[Start(http_server.url("/page/2"), at=1.5)],
    )
    # /page/1 waits for the retry (which fails again, after 0.5 s of failure);
    # /page/2 comes when the origin is treated as having no robots.txt.
    assert http_server.count("/page/1") == 1
    assert http_server.count("/page/2") == 1
    assert "allow_all" in result.log


def test_crawl_delay_is_applied_when_enabled(http_server: ScriptedServer) -> None:
    http_server.robots("User-agent: *\nCrawl-delay: 1\nDisallow: /page/private\n")
    urls = [http_server.url(f"/page/{i}") for i in range(3)]
    result = run_crawl(urls, settings(REP_CRAWL_DELAY=True, RANDOMIZE_DOWNLOAD_DELAY=False))
    times = [s.time for s in http_server.seen("/page/", prefix=True)]
    assert len(times) == 3
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= 0.9
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
    assert result.stat("robotstxt/forbidden_before_schedule") == 2

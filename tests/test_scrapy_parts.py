"""Scrapy's own parts keep working with scrapy-rep: the HTTP cache, SitemapSpider, the request's
proxy, and a robots.txt that never answers. Real crawls, the add-on's defaults."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _crawl import Start, run_crawl
from _servers import ForwardProxy, Reply, ScriptedServer

ADDON = {"ADDONS": {"scrapy_rep.Addon": 0}, "ROBOTSTXT_OBEY": True}
ALLOW = "User-agent: *\nDisallow: /private\n"


# -- the HTTP cache ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cache",
    [
        {},
        {
            "HTTPCACHE_POLICY": "scrapy.extensions.httpcache.RFC2616Policy",
            "HTTPCACHE_STORAGE": "scrapy.extensions.httpcache.DbmCacheStorage",
        },
    ],
    ids=["default-policy", "rfc2616-dbm"],
)
def test_the_http_cache_never_replays_a_robots_txt_failure(
    http_server: ScriptedServer, tmp_path: Path, cache: dict[str, str]
) -> None:
    site = http_server
    pages = [site.url("/page/1"), site.url("/page/2")]
    config = {
        **ADDON,
        **cache,
        "HTTPCACHE_ENABLED": True,
        "HTTPCACHE_DIR": str(tmp_path / "httpcache"),
        "REP_RETRY_FAST_DELAY": 0.2,
    }
    # Run 1: robots.txt answers 503; every retry reaches the server, nothing is crawled.
    site.route("/robots.txt", Reply(503))
    first = run_crawl(pages, config)
    assert site.count("/robots.txt") >= 3
    assert site.count("/robots.txt") == first.stat("robotstxt/request_count")
    assert first.responses == []
    assert first.stat("robotstxt/gave_up") == 1
    # Run 2, same cache: robots.txt is back; the pages are crawled.
    site.robots(ALLOW)
    second = run_crawl(pages, config)
    assert sorted(second.responses) == pages
    assert site.count("/page/", prefix=True) == 2
    # Run 3, same cache: robots.txt now disallows a page, and that is obeyed.
    site.robots("User-agent: *\nDisallow: /page/2\n")
    before = site.count("/robots.txt")
    third = run_crawl(pages, config)
    assert site.count("/robots.txt") == before + 1
    assert third.responses == [site.url("/page/1")]
    assert third.stat("robotstxt/forbidden") == 1
    if not cache:  # DummyPolicy: the user's page still comes from the cache
        assert third.stat("httpcache/hit") == 1


# -- SitemapSpider ----------------------------------------------------------------------------

SITEMAP = """<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
{}</urlset>
"""


def _sitemap(site: ScriptedServer, path: str, pages: list[str]) -> None:
    entries = "".join(f"<url><loc>{site.url(page)}</loc></url>\n" for page in pages)
    site.route(path, Reply(200, SITEMAP.format(entries), headers={"Content-Type": "text/xml"}))


def test_sitemap_spider_reads_the_middlewares_copy_of_robots_txt(
    http_server: ScriptedServer,
) -> None:
    site = http_server
    site.robots(f"User-agent: *\nDisallow: /private\nSitemap: {site.url('/sitemap.xml')}\n")
    _sitemap(site, "/sitemap.xml", ["/page/1", "/page/2", "/private/3"])
    result = run_crawl(
        [],
        {**ADDON, "LOG_LEVEL": "DEBUG"},
        spider="sitemap",
        sitemap_urls=[site.url("/robots.txt")],
    )
    assert site.count("/robots.txt") == 1
    assert result.stat("robotstxt/request_count") == 1
    assert sorted(result.responses) == [site.url("/page/1"), site.url("/page/2")]
    assert site.count("/private/3") == 0
    assert result.stat("robotstxt/forbidden") == 1
    assert "['robotstxt_copy']" in result.log  # Scrapy's "Crawled (200)" line shows the flag


def test_sitemap_spider_after_a_redirect_resolves_relative_sitemaps_against_the_final_url(
    http_server: ScriptedServer,
) -> None:
    site = http_server
    site.route("/robots.txt", Reply.redirect("/moved/robots.txt"))
    site.robots("")  # never asked: the route above answers /robots.txt
    site.route(
        "/moved/robots.txt", Reply.text("User-agent: *\nDisallow: /private\nSitemap: map.xml\n")
    )
    _sitemap(site, "/moved/map.xml", ["/page/1", "/private/2"])
    site.route("/robots.txt", Reply.redirect("/moved/robots.txt"))
    result = run_crawl([], ADDON, spider="sitemap", sitemap_urls=[site.url("/robots.txt")])
    assert site.count("/robots.txt") == 1
    assert site.count("/moved/robots.txt") == 1
    assert site.count("/moved/map.xml") == 1
    assert result.responses == [site.url("/page/1")]
    assert result.stat("robotstxt/forbidden") == 1


def test_sitemap_spider_gets_the_404_the_middleware_got(http_server: ScriptedServer) -> None:
    site = http_server  # /robots.txt is not routed: 404, everything allowed
    result = run_crawl([], ADDON, spider="sitemap", sitemap_urls=[site.url("/robots.txt")])
    assert site.count("/robots.txt") == 1
    assert [(e.url, e.status) for e in result.errbacks] == [(site.url("/robots.txt"), 404)]


def test_sitemap_spider_waits_while_robots_txt_is_retried(http_server: ScriptedServer) -> None:
    site = http_server
    robots = f"User-agent: *\nDisallow: /private\nSitemap: {site.url('/sitemap.xml')}\n"
    site.route("/robots.txt", Reply(503), Reply.text(robots))
    _sitemap(site, "/sitemap.xml", ["/page/1", "/private/2"])
    result = run_crawl(
        [],
        {**ADDON, "REP_RETRY_FAST_DELAY": 0.2},
        spider="sitemap",
        sitemap_urls=[site.url("/robots.txt")],
    )
    assert site.count("/robots.txt") == 2  # the failure, then the answer: no third request
    assert result.stat("robotstxt/request_count") == 2
    assert result.responses == [site.url("/page/1")]


# -- the request's proxy ----------------------------------------------------------------------


@pytest.fixture
def proxy() -> Iterator[ForwardProxy]:
    proxy = ForwardProxy.start(credentials="crawler:s3cret")
    yield proxy
    proxy.close()


def test_robots_txt_goes_through_the_requests_proxy(
    http_server: ScriptedServer, proxy: ForwardProxy
) -> None:
    site = http_server
    site.robots(ALLOW)
    meta = {"proxy": proxy.url_with_credentials()}
    starts = [Start(site.url(path), meta=meta) for path in ("/page/1", "/private/2")]
    result = run_crawl(starts, ADDON)
    assert result.responses == [site.url("/page/1")]
    assert [seen.path for seen in proxy.requests] == [site.url("/robots.txt"), site.url("/page/1")]
    # The origin saw nothing directly: every request it got came through the proxy.
    assert [seen.path for seen in site.requests] == ["/robots.txt", "/page/1"]
    assert all(seen.headers.get("via") == "1.1 test-proxy" for seen in site.requests)


def test_a_proxys_407_holds_the_origin_instead_of_allowing_everything(
    http_server: ScriptedServer, proxy: ForwardProxy
) -> None:
    site = http_server
    site.robots(ALLOW)
    meta = {"proxy": proxy.proxy_url}  # no credentials: the proxy answers 407
    result = run_crawl(
        [Start(site.url("/page/1"), meta=meta)],
        {**ADDON, "REP_RETRY_DELAY": 0.2},
        spider="errback_yields",
    )
    assert {seen.path for seen in proxy.requests} == {site.url("/robots.txt")}  # no page
    assert site.requests == []
    assert result.stat("robotstxt/unreachable") == 1
    (errback,) = result.errbacks
    assert "the proxy asks for credentials (HTTP 407)" in errback.message


def test_a_proxy_status_error_is_the_proxys_failure_not_the_sites(
    http_server: ScriptedServer, proxy: ForwardProxy
) -> None:
    site = http_server
    proxy.fail_with(
        Reply(404, headers={"Proxy-Status": 'ExampleProxy; error=dns_timeout; details="x"'})
    )
    result = run_crawl(
        [Start(site.url("/page/1"), meta={"proxy": proxy.url_with_credentials()})],
        {**ADDON, "REP_RETRY_DELAY": 0.2},
    )
    assert result.responses == []  # a 404 from the site would have allowed everything
    assert result.stat("robotstxt/unreachable") == 1
    assert "proxy error dns_timeout" in result.log


def test_meta_keys_named_by_the_setting_are_copied_to_the_robots_txt_request(
    server_factory: Callable[..., ScriptedServer],
) -> None:
    site = server_factory()
    site.robots(ALLOW)
    meta = {"download_slot": "shared-slot", "my_plugin": "on"}
    result = run_crawl(
        [Start(site.url("/page/1"), meta=meta)],
        {**ADDON, "REP_FETCH_META_KEYS": ["my_plugin"], "LOG_LEVEL": "DEBUG"},
    )
    assert result.responses == [site.url("/page/1")]
    # download_slot is no longer in the list: robots.txt goes in its own host's slot.
    assert result.stat("robotstxt/request_count") == 1


# -- a robots.txt that never answers ----------------------------------------------------------


def test_a_robots_txt_that_never_answers_costs_rep_fetch_timeout_per_attempt(
    server_factory: Callable[..., ScriptedServer],
) -> None:
    # DOWNLOAD_TIMEOUT is Scrapy's default (180, the harness's 15 put back): each attempt at the
    # silent robots.txt ends at REP_FETCH_TIMEOUT, the origin is given up, a healthy site beside
    # it (a slow page too) is crawled. Delays shortened here; with every default the give-up
    # comes within 150 s (test_crawl_parts.py, ..._given_up_within_150_s_with_the_defaults).
    silent, healthy = server_factory(), server_factory()
    silent.route("/robots.txt", Reply(hang=True))
    healthy.robots(ALLOW)
    healthy.route("/page/slow", Reply(200, "slow page", delay=4))
    starts = [silent.url("/page/1"), healthy.url("/page/1"), healthy.url("/page/slow")]
    fast = {"REP_FETCH_TIMEOUT": 1, "REP_RETRY_DELAY": 0.5}
    result = run_crawl(starts, {**ADDON, **fast, "DOWNLOAD_TIMEOUT": 180}, timeout=60)
    assert sorted(result.responses) == [healthy.url("/page/1"), healthy.url("/page/slow")]
    assert silent.count("/page/", prefix=True) == 0
    assert result.stat("robotstxt/gave_up") == 1
    # Attempts at 0, 1 + 0.5 and 2.5 + 1 s: each waited REP_FETCH_TIMEOUT, not 180 s.
    first, second, third = (seen.time for seen in silent.seen("/robots.txt"))
    assert 1.5 - 0.1 <= second - first < 5
    assert 2.0 - 0.1 <= third - second < 5
    assert result.stats["elapsed_time_seconds"] < 30

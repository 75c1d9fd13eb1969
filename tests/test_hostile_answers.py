"""A site's answers can never make the crawler hammer it, hang, or lose requests: real crawls
(the add-on's defaults unless stated) against sites that answer "come back in 0 s", with a
date in the past, with a header no parser expects, or through a proxy that fails."""

from __future__ import annotations

import time
from collections.abc import Callable

from _crawl import CrawlResult, Start, run_crawl
from _servers import ForwardProxy, Reply, ScriptedServer, html_page

ADDON = {"ADDONS": {"scrapy_rep.Addon": 0}, "ROBOTSTXT_OBEY": True}
PAGES = 20


def _pages(server: ScriptedServer, host: str, count: int = PAGES) -> list[str]:
    return [server.url(f"/page/{i}", host=host) for i in range(count)]


def _errbacks(result: CrawlResult, host: str) -> set[str]:
    return {e.url for e in result.errbacks if e.url is not None and f"//{host}:" in e.url}


def _no_error(result: CrawlResult) -> None:
    assert " ERROR: " not in result.log and "Traceback" not in result.log, result.log[-3000:]


def test_come_back_in_0_s_or_in_1970_is_a_backoff_not_a_loop(
    server_factory: Callable[..., ScriptedServer],
) -> None:
    # a.test's and b.test's pages, and c.test's robots.txt, answer 503 for ever, asking to
    # come back at once (before: ~600 requests a second, and a crawl that never ended).
    hosts = {"a.test": "127.0.0.1", "b.test": "127.0.0.1", "c.test": "127.0.0.1"}
    a, b, c = server_factory(), server_factory(), server_factory()
    for server in (a, b):
        server.robots("User-agent: *\nAllow: /\n")
    a.outage(Reply(503, headers={"Retry-After": "0"}))
    b.outage(Reply(503, headers={"Retry-After": "Thu, 01 Jan 1970 00:00:00 GMT"}))
    c.route("/robots.txt", Reply(503, headers={"Retry-After": "0"}))
    starts = [*_pages(a, "a.test"), *_pages(b, "b.test"), *_pages(c, "c.test")]
    # The delays shortened (defaults: 2 s, 60 s, 5 s), so a loop would show in seconds; the
    # backoff with the defaults: test_pause_parts.py (test_answers_asking_for_0_s_back_off_...)
    # and test_crawl_parts.py (test_retry_after_and_fast_retry_for_503).
    fast = {"REP_PAUSE_DELAY": 0.5, "REP_PAUSE_GIVE_UP_AFTER": 4, "REP_RETRY_FAST_DELAY": 1}
    started = time.monotonic()
    result = run_crawl(starts, {**ADDON, **fast}, hosts=hosts, timeout=90)
    took = time.monotonic() - started
    assert took < 60, took
    assert result.close_reason == "finished"
    # The backoff doubles from REP_PAUSE_DELAY (0.5, 1, 2 s) until REP_PAUSE_GIVE_UP_AFTER
    # (4 s): the first burst, then a probe per pause.
    assert len(a.seen("/page/", prefix=True)) <= PAGES + 5
    assert len(b.seen("/page/", prefix=True)) <= PAGES + 5
    # robots.txt: 0, 1, 3 s (REP_RETRY_FAST_DELAY, doubling), then REP_GIVE_UP_AFTER.
    assert c.count("/robots.txt") == 3
    assert c.seen("/page/", prefix=True) == []
    # Nothing lost: every request was given up with its errback.
    for server, host in ((a, "a.test"), (b, "b.test"), (c, "c.test")):
        assert _errbacks(result, host) == set(_pages(server, host)), host
    # Each give-up counted by what gave it up: c.test's robots.txt; a.test's and b.test's
    # pauses (their robots.txt answered).
    assert result.stat("robotstxt/gave_up") == 1
    assert result.stat("robotstxt/pause/gave_up") == 2
    assert result.stat("robotstxt/pause/paused") == 2
    # The answers that paused are counted as Scrapy counts every response.
    assert result.stat("downloader/response_status_count/503") >= len(
        [s for s in (*a.requests, *b.requests, *c.requests) if s.status == 503]
    )
    _no_error(result)


def test_a_retry_after_no_parser_expects_is_absent_and_breaks_nothing(
    server_factory: Callable[..., ScriptedServer],
) -> None:
    # "²" is a digit to str.isdigit(), not to RFC 9110: before, it raised, the origin was
    # retried for ever uncounted, and an unreachable origin beside it was never given up.
    hosts = {"d.test": "127.0.0.1", "e.test": "127.0.0.1", "f.test": "127.0.0.1"}
    d, f = server_factory(), server_factory()
    d.route("/robots.txt", Reply(503, headers={"Retry-After": "\u00b2"}))
    f.robots("User-agent: *\nAllow: /\n")
    f.route("/page/0", Reply(503, headers={"Retry-After": "\u00b2"}), Reply(200, html_page("", [])))
    # The search script of f.test fails whatever its query: one broken page, no pause.
    f.route("/search", Reply(500))
    dead = ScriptedServer.start()
    dead_url = dead.url("/page/0", host="e.test")
    dead.close()  # connection refused from now on
    faster = {"REP_RETRY_DELAY": 1, "REP_RETRY_FAST_DELAY": 1}
    searches = [f.url(f"/search?q={i}", host="f.test") for i in range(1, 4)]
    starts = [d.url("/page/0", host="d.test"), dead_url, f.url("/page/0", host="f.test")]
    result = run_crawl(
        [*starts, *searches],
        {**ADDON, **faster, "RETRY_ENABLED": False},
        hosts=hosts,
        timeout=60,
    )
    # Both given up after 3 failures at 0, 1 and 3 s, as either would be alone.
    assert result.stats["elapsed_time_seconds"] < 20
    assert d.count("/robots.txt") == 3
    assert result.stat("robotstxt/gave_up") == 2
    assert set(result.errback_urls) >= {starts[0], dead_url}
    # The page's "²" is no Retry-After: f.test pauses REP_PAUSE_DELAY, then gets the page.
    assert "Pausing http://f.test" in result.log
    assert result.statuses[starts[2]] == 200
    assert f.count("/search", prefix=True) == 3
    assert "different pages" not in result.log
    assert result.stat("robotstxt/pause/paused") == 1
    _no_error(result)


def test_a_proxys_503_pauses_that_proxy_not_the_site(
    server_factory: Callable[..., ScriptedServer],
) -> None:
    site = server_factory()
    bad_proxy, good_proxy = ForwardProxy.start(), ForwardProxy.start()
    try:
        # The bad proxy answers 503 itself, without a Proxy-Status saying so.
        bad_proxy.fail_with(Reply(503))
        site.robots("User-agent: *\nAllow: /\n")
        rotating = {
            "DOWNLOADER_MIDDLEWARES": {"_rotating.RotatingProxies": 610},
            "ROTATING_PROXIES": [bad_proxy.proxy_url, good_proxy.proxy_url, ""],
        }
        pages = [site.url(f"/page/{i}") for i in range(15)]
        # REP_PAUSE_DELAY shortened (default 2 s): the bad route's pauses, doubling while the
        # crawl lasts, end sooner.
        fast = {"REP_PAUSE_DELAY": 0.5}
        result = run_crawl(pages, {**ADDON, **rotating, **fast}, timeout=90)
        # Every page through another route; only the bad proxy's route paused (the built-in:
        # 10 of 15, RetryMiddleware's retries landing on the bad proxy again).
        assert {seen.path for seen in site.seen("/page/", prefix=True) if seen.status == 200} == {
            f"/page/{i}" for i in range(15)
        }
        assert result.errbacks == []
        assert f"via {bad_proxy.proxy_url}" in result.log
        assert result.stat("robotstxt/pause/paused") >= 1
    finally:
        bad_proxy.close()
        good_proxy.close()


def test_a_failing_proxy_is_not_a_failing_site(
    server_factory: Callable[..., ScriptedServer],
) -> None:
    # 20 requests through a proxy that answers 503 to everything (no Proxy-Status), listed
    # before 20 direct ones to the same site. Before: robots.txt fetched 3 times through that
    # proxy, the site judged unreachable and all 40 dropped (Scrapy's built-in: the 20 direct
    # pages downloaded).
    site = server_factory()
    site.robots("User-agent: *\nAllow: /\n")
    proxy = ForwardProxy.start()
    try:
        proxy.fail_with(Reply(503))
        proxied = [site.url(f"/page/{i}") for i in range(PAGES)]
        direct = [site.url(f"/page/{i}") for i in range(PAGES, 2 * PAGES)]
        starts = [*(Start(url, meta={"proxy": proxy.proxy_url}) for url in proxied), *direct]
        fast = {"REP_PAUSE_DELAY": 0.5, "REP_PAUSE_GIVE_UP_AFTER": 4}
        result = run_crawl(starts, {**ADDON, **fast}, timeout=90)
        # robots.txt got no answer through the proxy, and was fetched the direct requests' way.
        assert site.count("/robots.txt") == 1
        assert result.stat("robotstxt/other_way") >= 1
        assert f"got no answer through {proxy.proxy_url} (HTTP 503)" in result.log
        assert result.stat("robotstxt/gave_up") == 0
        # The direct pages downloaded; the proxied ones met the proxy's 503s, paused that
        # route only, and were given up with it, each errback told why.
        assert {seen.path for seen in site.seen("/page/", prefix=True) if seen.status == 200} == {
            f"/page/{i}" for i in range(PAGES, 2 * PAGES)
        }
        assert {e.url for e in result.errbacks} == set(proxied)
        assert all("asked to slow down" in e.message for e in result.errbacks)
        assert f"Pausing {site.url('/')[:-1]} via {proxy.proxy_url}" in result.log
        _no_error(result)
    finally:
        proxy.close()


def test_a_request_marked_rep_dont_pause_is_not_held_by_a_pause(
    server_factory: Callable[..., ScriptedServer],
) -> None:
    site = server_factory()
    site.robots("User-agent: *\nAllow: /\n")
    site.route("/page/0", Reply(503, headers={"Retry-After": "6"}), Reply(200, html_page("", [])))
    # Scheduled a second into the pause: the marked one goes at once, the other waits for it.
    marked = Start(site.url("/page/1"), meta={"rep_dont_pause": True}, at=1.0)
    plain = Start(site.url("/page/2"), at=1.0)
    result = run_crawl([site.url("/page/0")], ADDON, extra=[marked, plain], timeout=60)
    answered = site.seen("/page/0")[0].time
    assert site.seen("/page/1")[0].time < answered + 5
    assert site.seen("/page/2")[0].time >= answered + 5.9
    assert result.stat("robotstxt/pause/paused") == 1

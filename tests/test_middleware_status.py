"""SPEC B2/B4 in real crawls: status codes, network failures, redirects, size, encoding."""

from __future__ import annotations

import gzip
from collections.abc import Callable

from _crawl import run_crawl
from _servers import Reply, ScriptedServer, closed_port
from test_middleware_basic import settings

RULES = "User-agent: *\nDisallow: /page/private\n"


def pages(server: ScriptedServer) -> list[str]:
    return [server.url("/page/public"), server.url("/page/private")]


def assert_rules_applied(server: ScriptedServer) -> None:
    assert server.count("/page/public") == 1
    assert server.count("/page/private") == 0


def assert_everything_allowed(server: ScriptedServer) -> None:
    assert server.count("/page/public") == 1
    assert server.count("/page/private") == 1


def test_4xx_means_no_restrictions(server_factory: Callable[..., ScriptedServer]) -> None:
    statuses = (404, 401, 403, 410)
    # One origin per status, all in one crawl.
    servers = [server_factory() for _ in statuses]
    for server, status in zip(servers, statuses, strict=True):
        server.route("/robots.txt", Reply(status, RULES))
    result = run_crawl([url for server in servers for url in pages(server)], settings())
    for server, status in zip(servers, statuses, strict=True):
        assert_everything_allowed(server)
        assert result.stat(f"robotstxt/response_status_count/{status}") == 1
        line = f"robots.txt of {server.origin}: no robots.txt (status {status}): everything "
        assert line in result.log


def test_429_with_retry_after_then_200(http_server: ScriptedServer) -> None:
    http_server.route("/robots.txt", Reply.retry_after(429, 2), Reply.text(RULES))
    # Without Retry-After (or with one shorter than REP_RETRY_FAST_DELAY) the next try would
    # come after 1 s: it comes 2 s later, as Retry-After asks.
    result = run_crawl(pages(http_server), settings(REP_RETRY_FAST_DELAY=1), timeout=30)
    assert_rules_applied(http_server)
    robots = http_server.seen("/robots.txt")
    assert len(robots) == 2
    assert 1.9 <= robots[1].time - robots[0].time < 5
    # Both pages were held outside the downloader's places, the first at the final gate, the
    # other outside the scheduler, then released and checked.
    assert result.stat("robotstxt/held") == 2
    assert result.stat("robotstxt/released") == 2
    assert result.stat("robotstxt/rescheduled") == 0
    assert result.stat("robotstxt/forbidden_before_schedule") == 1
    assert result.stat("robotstxt/unreachable") == 1
    assert result.stat("robotstxt/recovered") == 1
    # Nothing of the origin was downloaded while robots.txt answered 429.
    first_page = min(s.time for s in http_server.seen("/page/", prefix=True))
    assert first_page > robots[1].time


def test_timeout_reset_and_truncated_answers_are_server_errors(
    server_factory: Callable[..., ScriptedServer],
) -> None:
    # One origin per failure, all in one crawl: each robots.txt fails once, then answers.
    hang, reset, truncated = server_factory(), server_factory(), server_factory()
    hang.route("/robots.txt", Reply(hang=True), Reply.text(RULES))
    reset.route("/robots.txt", Reply(reset=True), Reply.text(RULES))
    body = RULES + "#" * 5000
    truncated.route("/robots.txt", Reply.text(body, truncate_at=100), Reply.text(RULES))
    servers = (hang, reset, truncated)
    urls = [url for server in servers for url in pages(server)]
    result = run_crawl(urls, settings(DOWNLOAD_TIMEOUT=1, REP_RETRY_DELAY=0.2))
    for server in servers:
        assert_rules_applied(server)
        assert server.count("/robots.txt") == 2
    failures = {k: v for k, v in result.stats.items() if k.startswith("robotstxt/exception_count/")}
    # Scrapy's own key: "<class 'twisted.internet.error.TimeoutError'>", or
    # scrapy.exceptions.DownloadTimeoutError on newer Scrapy.
    timeouts = [k for k in failures if k.endswith("TimeoutError'>")]
    assert len(timeouts) == 1
    assert timeouts[0].startswith("robotstxt/exception_count/<class '")
    assert failures[timeouts[0]] == 1
    assert sum(failures.values()) == 3  # one per origin
    assert result.stat("robotstxt/unreachable") == 3
    # Per origin, the first page was held at the final gate and the other outside the scheduler.
    assert result.stat("robotstxt/released") == 6
    assert result.stat("robotstxt/rescheduled") == 0


def test_refused_connection_holds_then_drops(unused_port: int) -> None:
    urls = [f"http://127.0.0.1:{unused_port}/page/{name}" for name in "abc"]
    with closed_port() as ftp_port:
        # An FTP origin refusing connections is unreachable the same way (SPEC B1: ftp too).
        ftp = f"ftp://127.0.0.1:{ftp_port}"
        # Scrapy's RetryMiddleware enabled, as in a default project.
        crawl_settings = settings(RETRY_ENABLED=True, REP_RETRY_DELAY=0.2, REP_HOLD_TIMEOUT=1)
        result = run_crawl([*urls, f"{ftp}/file.txt"], crawl_settings)
    assert result.stat("robotstxt/held_dropped") == 3 + 1
    assert result.stat("robotstxt/unreachable") == 2
    assert result.stat("robotstxt/request_count") >= 2 * 2  # each origin tried again
    assert any("ConnectionRefused" in k for k in result.stats)
    # One download per attempt: no RetryMiddleware retries stacked on the back-off.
    assert result.stat("retry/count") == 0
    assert "Gave up retrying" not in result.log
    failures = [v for k, v in result.stats.items() if k.startswith("robotstxt/exception_count/")]
    assert sum(failures) == result.stat("robotstxt/request_count")
    assert result.responses == []
    # One line for the origin (not one per request or per retry) saying what is
    # waited for, for how long, and which setting shortens it; the failure in words.
    waiting = [line for line in result.log.splitlines() if "Waiting for the robots.txt" in line]
    (line,) = [line for line in waiting if f"of http://127.0.0.1:{unused_port} " in line]
    assert f"of http://127.0.0.1:{unused_port} (unreachable: connection refused)" in line
    # Refused at 0, 0.2 and 0.6 s: the 3rd failure (REP_GIVE_UP_AFTER) comes before
    # REP_HOLD_TIMEOUT=1, unless a slow first attempt (a loaded machine) puts it after; the
    # line names whichever limit comes first, and what shortens it.
    if "if it keeps failing (3 failures in a row: REP_GIVE_UP_AFTER)" in line:
        assert "to wait less, lower REP_GIVE_UP_AFTER=3 or REP_RETRY_DELAY=0.2s" in line
    else:
        assert "to wait less, lower REP_HOLD_TIMEOUT=1s" in line
    assert "[scrapy_rep.crawl.robotstxt_middleware] WARNING" in line
    assert f"127.0.0.1:{unused_port}: unreachable (connection refused): nothing of it" in result.log
    assert [line for line in waiting if f"of {ftp} " in line]
    assert len(waiting) == 2, waiting


def test_redirect_chain_of_5_is_followed_and_of_6_means_no_robots(
    server_factory: Callable[..., ScriptedServer],
) -> None:
    five, six = server_factory(), server_factory()
    five.redirect_chain("/robots.txt", 5, final=Reply.text(RULES))
    six.redirect_chain("/robots.txt", 6, final=Reply.text(RULES))
    result = run_crawl([*pages(five), *pages(six)], settings())
    assert_rules_applied(five)
    assert five.count("/redirect/final") == 1
    # The 6th redirect (from /redirect/5) is not followed: everything allowed.
    assert_everything_allowed(six)
    assert six.count("/redirect/5") == 1
    assert six.count("/redirect/final") == 0
    assert result.stat("robotstxt/redirect_count") == 5 + 5
    assert result.stat("robotstxt/redirect_limit") == 1


def test_redirect_to_another_origin(
    http_server: ScriptedServer, http_server2: ScriptedServer
) -> None:
    http_server.route("/robots.txt", Reply.redirect(http_server2.url("/elsewhere.txt"), 302))
    http_server2.route("/elsewhere.txt", Reply.text(RULES))
    result = run_crawl(pages(http_server), settings())
    assert_rules_applied(http_server)
    assert http_server2.count("/elsewhere.txt") == 1
    # The other origin's own robots.txt was not needed.
    assert http_server2.count("/robots.txt") == 0
    assert result.stat("robotstxt/redirect_count") == 1


def test_meta_refresh_is_not_followed(http_server: ScriptedServer) -> None:
    html = '<html><head><meta http-equiv="refresh" content="0; url=/real.txt"></head></html>'
    http_server.route("/robots.txt", Reply(200, html, headers={"Content-Type": "text/html"}))
    http_server.route("/real.txt", Reply.text("User-agent: *\nDisallow: /\n"))
    run_crawl(pages(http_server), settings())
    assert http_server.count("/real.txt") == 0
    assert_everything_allowed(http_server)


def test_html_served_as_robots_txt(http_server: ScriptedServer) -> None:
    html = "<html><body><p>User-agent: *</p>\n<p>Disallow: /page/private</p></body></html>"
    http_server.route("/robots.txt", Reply(200, html, headers={"Content-Type": "text/html"}))
    run_crawl(pages(http_server), settings())
    # Lines like "<p>Disallow: ..." have an unknown key: no rules (as Google).
    assert_everything_allowed(http_server)


def test_gzip_encoded_robots_txt(http_server: ScriptedServer) -> None:
    http_server.route("/robots.txt", Reply.text(RULES, gzip=True))
    result = run_crawl(pages(http_server), settings())
    assert_rules_applied(http_server)
    assert http_server.seen("/robots.txt")[0].headers.get("accept-encoding")
    assert result.stat("robotstxt/truncated") == 0


def test_2mb_robots_txt_stops_early_and_ignores_rules_after_500kib(
    http_server: ScriptedServer,
) -> None:
    filler = ("# " + "x" * 97 + "\n") * 6000  # 600,000 bytes of comments
    body = "User-agent: *\nDisallow: /page/early\n" + filler + "Disallow: /page/private\n"
    body += filler * 3  # about 2.4 MB in all
    http_server.route("/robots.txt", Reply.text(body, chunk_size=16384, chunk_delay=0.01))
    urls = [*pages(http_server), http_server.url("/page/early")]
    result = run_crawl(urls, settings())
    assert_everything_allowed(http_server)  # /page/private's rule sits after 500 KiB
    assert http_server.count("/page/early") == 0  # the rule before it applies
    sent = http_server.seen("/robots.txt")[0]
    assert sent.client_closed
    assert sent.bytes_sent < 1_000_000
    assert result.stat("robotstxt/truncated") == 1
    assert "truncated" in result.log


def test_gzip_bomb_is_cut_after_decompression(http_server: ScriptedServer) -> None:
    body = (
        "User-agent: *\nDisallow: /page/early\n" + "#" * 3_000_000 + "\nDisallow: /page/private\n"
    )
    compressed = gzip.compress(body.encode())
    assert len(compressed) < 100_000
    http_server.route(
        "/robots.txt",
        Reply(200, compressed, headers={"Content-Type": "text/plain", "Content-Encoding": "gzip"}),
    )
    urls = [*pages(http_server), http_server.url("/page/early")]
    result = run_crawl(urls, settings())
    assert_everything_allowed(http_server)
    assert http_server.count("/page/early") == 0
    assert result.stat("robotstxt/truncated") == 1

"""A hostile site and its robots.txt, in real crawls (SPEC B2 redirects, B4 size).

A site controls its robots.txt answer. It must not make the crawler read anything but
http(s)/ftp through it (file:, data:, a FIFO, /dev/zero, s3:, ...), nor eat its memory
with a compression bomb. Every crawl runs under an address-space limit (RLIMIT_AS), so a
regression fails with MemoryError instead of swapping, and peak RSS is asserted to stay
within ``RSS_BOUND`` of the crawl's baseline.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _bombs import CODINGS, EARLY, LATE, bomb, encoded
from _crawl import CrawlResult, run_crawl
from _servers import Reply, ScriptedServer
from scrapy.utils.test import get_crawler
from test_explain import scrapy_robots
from test_middleware_basic import MIDDLEWARE, settings

from scrapy_rep import RobotsTxtMiddleware
from scrapy_rep.crawl.guard_middleware import check_wiring

GUARDED: dict[str, Any] = MIDDLEWARE["DOWNLOADER_MIDDLEWARES"]

#: Address space of a crawl process: a normal crawl needs well under 600 MiB.
MEMORY_LIMIT = 1 << 30
#: Peak RSS a robots.txt may add to a crawl (measured: a few MiB).
RSS_BOUND = 100 << 20

RULES = "User-agent: *\nDisallow: /page/private\n"


def crawl(*servers: ScriptedServer, **extra: object) -> CrawlResult:
    urls = [
        server.url(path)
        for server in servers
        for path in ("/page/public", "/page/private", "/page/early")
    ]
    result = run_crawl(urls, settings(**extra), memory_limit=MEMORY_LIMIT, timeout=60)
    assert result.max_rss is not None and result.max_rss_at_open is not None
    assert result.max_rss - result.max_rss_at_open < RSS_BOUND
    return result


def assert_everything_allowed(server: ScriptedServer) -> None:
    assert server.count("/page/public") == 1
    assert server.count("/page/private") == 1


def log_lines(result: CrawlResult, text: str) -> list[str]:
    return [line for line in result.log.splitlines() if text in line]


# -- redirects that must not be followed ----------------------------------------------------


@pytest.fixture
def local_rules(tmp_path: Path) -> Path:
    """A local file with rules that must never be obeyed as a site's robots.txt."""
    path = tmp_path / "passwd"
    path.write_text(RULES)
    return path


#: Redirect targets a robots.txt answer must not make the crawler follow, and what the log
#: says is wrong with each.
UNFOLLOWABLE = [
    ("javascript:alert(1)", "javascript: scheme"),
    ("about:blank", "about: scheme"),
    ("s3://bucket/robots.txt", "s3: scheme"),
    ("ftp://127.0.0.1/robots.txt", "ftp: scheme"),  # ftp only from an ftp origin
    ("http://[::1/robots.txt", "not a valid URL"),
    ("http://[fe80::zz]/robots.txt", "IPv6"),
    ("http://127.0.0.1:99999/robots.txt", "not a valid URL"),
    ("http://127.0.0.1:0/robots.txt", "no valid host and port"),
    ("http://:80/robots.txt", "no valid host and port"),
    ("data:text/plain,User-agent:%20*%0ADisallow:%20/", "data: scheme"),
    ("file:///dev/zero", "file: scheme"),
]


def test_unfollowable_redirects_mean_no_robots_txt(
    server_factory: Callable[..., ScriptedServer], local_rules: Path, tmp_path: Path
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it for reading would block the reactor forever
    cases = [*UNFOLLOWABLE, (local_rules.as_uri(), "file: scheme"), (fifo.as_uri(), "file: scheme")]
    # One origin per redirect target, all in one crawl.
    servers = [server_factory() for _ in cases]
    for server, (location, _) in zip(servers, cases, strict=True):
        server.route("/robots.txt", Reply.redirect(location))
    no_location = server_factory()
    no_location.route("/robots.txt", Reply(302))
    result = crawl(*servers, no_location)
    # "No robots.txt" (SPEC B2, as more than 5 redirects): everything allowed, per origin.
    for server, (location, problem) in zip(servers, cases, strict=True):
        assert_everything_allowed(server)
        (line,) = log_lines(result, f"robots.txt at {server.url('/robots.txt')}: ")
        assert f"redirect to {location!r} not followed: " in line
        assert problem in line
        assert line.endswith("no robots.txt, everything allowed")
    assert_everything_allowed(no_location)
    (line,) = log_lines(result, f"robots.txt at {no_location.url('/robots.txt')}: ")
    assert "no Location header" in line
    assert result.stat("robotstxt/redirect_refused") == len(servers) + 1
    assert result.stat("robotstxt/redirect_count") == 0
    assert result.stat("robotstxt/request_count") == len(servers) + 1
    assert all(url.startswith("http://") for url in result.reached_downloader)


# -- compression: bounded decoding, truncated body used -------------------------------------


def reply(coding: str, body: bytes) -> Reply:
    header = "deflate" if coding == "raw-deflate" else coding
    return Reply.text(body, headers={"Content-Encoding": header})


def test_compressed_robots_txt_is_obeyed(server_factory: Callable[..., ScriptedServer]) -> None:
    # One origin per coding, all in one crawl.
    servers = [server_factory() for _ in CODINGS]
    for server, coding in zip(servers, CODINGS, strict=True):
        server.route("/robots.txt", reply(coding, encoded(coding, EARLY + LATE)))
    result = crawl(*servers)
    for server, coding in zip(servers, CODINGS, strict=True):
        assert server.count("/page/public") == 1, coding
        assert server.count("/page/private") == 0, coding
        assert server.count("/page/early") == 0, coding
        accepted = server.seen("/robots.txt")[0].headers["accept-encoding"]
        assert coding.removeprefix("raw-") in accepted
    assert result.stat("robotstxt/truncated") == 0


def test_compression_bombs_are_cut_with_bounded_memory(
    server_factory: Callable[..., ScriptedServer],
) -> None:
    # One origin per coding, all in one crawl: every bomb decoded at once stays in the bound.
    servers = [server_factory() for _ in CODINGS]
    for server, coding in zip(servers, CODINGS, strict=True):
        body = bomb(coding)
        assert len(body) < 500_000
        server.route("/robots.txt", reply(coding, body))
    result = crawl(*servers)
    # SPEC B4: the first 512,000 decoded bytes are used, the rest ignored (not a failure).
    for server, coding in zip(servers, CODINGS, strict=True):
        assert server.count("/page/early") == 0, coding
        assert_everything_allowed(server)
        (line,) = log_lines(result, f"robots.txt of {server.origin}: ")
        assert "cut at 500 KiB" in line, coding
    assert result.stat("robotstxt/truncated") == len(CODINGS)
    assert result.stat("robotstxt/unreachable") == 0


def test_corrupt_compressed_body_is_a_broken_response(http_server: ScriptedServer) -> None:
    http_server.route(
        "/robots.txt",
        Reply.text(b"not gzip at all", headers={"Content-Encoding": "gzip"}),
        Reply.text(RULES),
    )
    result = crawl(http_server, REP_RETRY_DELAY=0.2)
    # SPEC B2: a broken response is a server error: held, fetched again, then obeyed.
    assert http_server.count("/robots.txt") == 2
    assert http_server.count("/page/private") == 0
    assert (
        result.stat("robotstxt/exception_count/<class 'scrapy_rep.core.decode.DecodeError'>") == 1
    )
    assert "DecodeError" in result.log


# -- wiring and defence in depth ------------------------------------------------------------


def test_guard_refuses_a_robots_txt_request_rewritten_to_a_local_file(
    http_server: ScriptedServer, local_rules: Path
) -> None:
    http_server.robots("User-agent: *\nDisallow: /\n")
    middlewares = {**GUARDED, "_hostile.RewriteRobotsTxt": 500}
    result = crawl(
        http_server,
        DOWNLOADER_MIDDLEWARES=middlewares,
        TEST_REWRITE_TO=local_rules.as_uri(),
    )
    # Neither the local file nor the site's robots.txt was read: nothing to obey.
    assert http_server.count("/robots.txt") == 0
    assert_everything_allowed(http_server)
    assert result.stat("robotstxt/scheme_refused") == 1
    assert f"Refused to fetch robots.txt from {local_rules.as_uri()!r} (file:)" in result.log
    assert all(url.startswith("http://") for url in result.reached_downloader)


def test_middleware_without_guard_is_a_startup_error(http_server: ScriptedServer) -> None:
    http_server.robots(RULES)
    middlewares = {
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
        "scrapy_rep.RobotsTxtMiddleware": 100,
    }
    result = run_crawl(
        [http_server.url("/page/public")],
        settings(DOWNLOADER_MIDDLEWARES=middlewares),
        check=False,
    )
    assert result.responses == []
    assert http_server.requests == []
    assert 'add "scrapy_rep.RobotsTxtGuard": 950, to DOWNLOADER_MIDDLEWARES' in result.log


@pytest.mark.parametrize(
    ("components", "message"),
    [
        ({"scrapy_rep.RobotsTxtGuard": None}, 'add "scrapy_rep.RobotsTxtGuard": 950,'),
        ({"scrapy_rep.RobotsTxtGuard": 500}, "not above HttpCompressionMiddleware (590)"),
        (
            {
                "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": 960,
            },
            "not above HttpCompressionMiddleware (960)",
        ),
    ],
)
def test_guard_below_decompression_is_refused(components: dict[str, Any], message: str) -> None:
    crawler = get_crawler(None, settings(DOWNLOADER_MIDDLEWARES={**GUARDED, **components}))
    with pytest.raises(ValueError, match=re.escape(message)):
        check_wiring(crawler.settings)


def test_guard_with_compression_disabled_or_the_addon_is_fine() -> None:
    check_wiring(get_crawler(None, settings(COMPRESSION_ENABLED=False)).settings)
    check_wiring(get_crawler(None, {"ADDONS": {"scrapy_rep.Addon": 0}}).settings)
    addon = get_crawler(None, {"ADDONS": {"scrapy_rep.Addon": 0}}).settings
    check_wiring(addon, RobotsTxtMiddleware)


def test_the_middleware_after_the_guard_is_refused_with_the_orders_to_use() -> None:
    """The guard is built with what the middleware serves it: the middleware must come first
    (and look at a request before the guard's last look)."""
    middlewares = {**GUARDED, "scrapy_rep.RobotsTxtMiddleware": 960}
    crawler = get_crawler(None, settings(DOWNLOADER_MIDDLEWARES=middlewares))
    with pytest.raises(ValueError) as refused:
        check_wiring(crawler.settings, RobotsTxtMiddleware)
    assert str(refused.value) == (
        "scrapy_rep.RobotsTxtMiddleware is at 960 in DOWNLOADER_MIDDLEWARES, not below "
        "scrapy_rep.RobotsTxtGuard (950), which must see every request after it: use "
        '"scrapy_rep.RobotsTxtMiddleware": 100 and "scrapy_rep.RobotsTxtGuard": 950,'
    )


# -- the explain command fetches through the same code --------------------------------------


def test_explain_command_refuses_a_file_redirect_and_cuts_a_bomb(
    tmp_path: Path, server_factory: Callable[..., ScriptedServer], local_rules: Path
) -> None:
    redirecting, bombing = server_factory(), server_factory()
    redirecting.route("/robots.txt", Reply.redirect(local_rules.as_uri()))
    bombing.route("/robots.txt", reply("br", bomb("br")))
    urls = [redirecting.url("/page/private"), bombing.url("/page/early")]
    # A regression would fail the asserts below (old Scrapy: the br bomb is dropped whole).
    done = scrapy_robots("--json", *urls, cwd=tmp_path)
    redirected, bombed = json.loads(done.stdout)
    assert redirected["allowed"] is True
    assert redirected["source"]["outcome"] == "no_robots"
    assert "file: scheme" in redirected["source"]["error"]
    assert bombed["allowed"] is False
    assert bombed["source"]["truncated"] is True
    assert "not followed" in done.stderr

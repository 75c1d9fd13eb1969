"""The real-server harness itself, proven against Scrapy's BUILT-IN robots.txt middleware.

Nothing of scrapy_rep is enabled here: these tests show the servers, the crawl subprocess and the
IDN resolver work, and document the stall of the built-in middleware.
"""

from __future__ import annotations

import threading
from pathlib import Path

from _crawl import Interrupt, Start, run_crawl
from _servers import FtpServer, Reply, ScriptedServer

OBEY = {"ROBOTSTXT_OBEY": True}
NO_RETRY = {"RETRY_ENABLED": False}


def test_builtin_middleware_skips_disallowed_and_fetches_allowed(
    http_server: ScriptedServer,
) -> None:
    http_server.robots("User-agent: *\nDisallow: /page/private\n")
    ok, private = http_server.url("/page/ok"), http_server.url("/page/private")

    result = run_crawl([ok, private], OBEY)

    assert http_server.paths()[0] == "/robots.txt"
    assert http_server.count("/page/ok") == 1
    assert http_server.count("/page/private") == 0
    assert result.responses == [ok]
    assert [(e.url, e.exception) for e in result.errbacks] == [(private, "IgnoreRequest")]
    assert result.stat("robotstxt/forbidden") == 1
    assert result.close_reason == "finished"


def test_follow_links_and_dupefilter(http_server: ScriptedServer) -> None:
    http_server.links("/page/1", ["/page/2", "/page/3"])
    http_server.links("/page/2", ["/page/1", "/page/3"])

    result = run_crawl([http_server.url("/page/1")], follow_links=True)

    assert sorted(http_server.paths()) == ["/page/1", "/page/2", "/page/3"]
    assert len(result.responses) == 3
    assert result.stat("dupefilter/filtered") >= 1


def test_gzip_encoded_robots(http_server: ScriptedServer) -> None:
    http_server.route(
        "/robots.txt", Reply.text("User-agent: *\nDisallow: /page/private\n", gzip=True)
    )

    result = run_crawl([http_server.url("/page/ok"), http_server.url("/page/private")], OBEY)

    robots = http_server.seen("/robots.txt")[0]
    assert "gzip" in robots.headers["accept-encoding"]
    assert http_server.count("/page/private") == 0
    assert result.stat("robotstxt/forbidden") == 1


def test_http_and_https_on_one_host_have_their_own_robots(
    http_server: ScriptedServer, https_server: ScriptedServer
) -> None:
    http_server.robots("User-agent: *\nDisallow: /page/a\n")
    https_server.robots("User-agent: *\nDisallow: /page/b\n")
    urls = [s.url(p) for s in (http_server, https_server) for p in ("/page/a", "/page/b")]

    result = run_crawl(urls, OBEY)

    assert https_server.url().startswith("https://127.0.0.1:")
    assert sorted(http_server.paths()) == ["/page/b", "/robots.txt"]
    assert sorted(https_server.paths()) == ["/page/a", "/robots.txt"]
    assert sorted(result.responses) == sorted([urls[1], urls[2]])


def test_ftp_fetch_through_scrapy_ftp_handler(ftp_server: FtpServer, unused_port: int) -> None:
    ftp_server.write("robots.txt", "User-agent: *\nDisallow: /secret.txt\n")
    ftp_server.write("file.txt", "hello over ftp")
    ftp_server.write("secret.txt", "no")
    unreachable = f"ftp://127.0.0.1:{unused_port}/file.txt"

    result = run_crawl(
        [ftp_server.url("/file.txt"), ftp_server.url("/secret.txt"), unreachable],
        {**OBEY, **NO_RETRY},
    )

    assert result.responses == [ftp_server.url("/file.txt")]
    assert sorted(ftp_server.retrieved) == ["/file.txt", "/robots.txt"]
    failed = {e.url: e.exception for e in result.errbacks}
    assert failed[ftp_server.url("/secret.txt")] == "IgnoreRequest"
    assert failed[unreachable] == "ConnectionRefusedError"


def test_idn_host_mapped_to_loopback(http_server: ScriptedServer) -> None:
    unicode_url = http_server.url("/page/1", host="müller.test")
    punycode_url = http_server.url("/page/2", host="xn--mller-kva.test")

    result = run_crawl([unicode_url, punycode_url], hosts={"müller.test": "127.0.0.1"})

    hosts = {s.path: s.headers["host"] for s in http_server.requests}
    expected = f"xn--mller-kva.test:{http_server.port}"
    assert hosts == {"/page/1": expected, "/page/2": expected}
    assert len(result.responses) == 2


def test_streamed_body_records_bytes_sent(http_server: ScriptedServer) -> None:
    body = b"x" * (2 * 1024 * 1024)
    http_server.route("/page/big", Reply.text(body, chunk_size=64 * 1024, chunk_delay=0.02))

    whole = run_crawl([http_server.url("/page/big")])
    first = http_server.seen("/page/big")[0]
    stopped = run_crawl([http_server.url("/page/big")], {"DOWNLOAD_MAXSIZE": 1024 * 1024})
    assert http_server.wait_for("/page/big", 2, finished=True)
    second = http_server.seen("/page/big")[1]

    assert whole.responses == [http_server.url("/page/big")]
    assert (first.bytes_sent, first.client_closed) == (len(body), False)
    assert stopped.responses == []
    assert second.client_closed
    assert second.bytes_sent < len(body)


def test_reset_hang_and_truncated_answers_fail_the_request(http_server: ScriptedServer) -> None:
    http_server.route("/page/reset", Reply(reset=True))
    http_server.route("/page/hang", Reply(hang=True))
    http_server.route("/page/cut", Reply(200, b"y" * 1000, truncate_at=10))
    urls = [http_server.url(p) for p in ("/page/reset", "/page/hang", "/page/cut")]

    result = run_crawl(urls, {**NO_RETRY, "DOWNLOAD_TIMEOUT": 1})

    assert result.responses == []
    failed = {e.url: e.exception for e in result.errbacks}
    # Scrapy >= 2.14 wraps download errors in its own exception classes.
    assert failed[urls[0]] in {"ResponseNeverReceived", "DownloadFailedError"}
    assert failed[urls[1]] in {"TimeoutError", "DownloadTimeoutError"}
    assert failed[urls[2]] in {"ResponseFailed", "ResponseDataLossError"}


def test_reply_sequences_with_retry_middleware(http_server: ScriptedServer) -> None:
    http_server.route("/page/flaky", Reply(500), Reply(200, b"ok"))
    http_server.route("/page/busy", Reply.retry_after(429, 1), Reply(200, b"ok"))

    result = run_crawl([http_server.url("/page/flaky"), http_server.url("/page/busy")])

    statuses = [(s.path, s.status) for s in http_server.requests]
    assert sorted(statuses) == [
        ("/page/busy", 200),
        ("/page/busy", 429),
        ("/page/flaky", 200),
        ("/page/flaky", 500),
    ]
    assert http_server.seen("/page/busy")[0].status == 429
    assert set(result.statuses.values()) == {200}


def test_redirect_chain_across_servers(
    http_server: ScriptedServer, http_server2: ScriptedServer
) -> None:
    chain = http_server.redirect_chain(
        "/page/start", 3, Reply(200), target=http_server2.url("/page/landing")
    )

    result = run_crawl([http_server.url("/page/start")])

    assert http_server.paths() == chain[:-1]
    assert http_server2.paths() == ["/page/landing"]
    assert http_server.port != http_server2.port
    assert result.responses == [http_server2.url("/page/landing")]


def test_extra_requests_keep_the_spider_open(http_server: ScriptedServer) -> None:
    late = http_server.url("/page/late")

    result = run_crawl([http_server.url("/page/1")], extra=[Start(late, at=0.5)])

    assert http_server.count("/page/late") == 1
    assert result.responses[-1] == late
    assert result.response_times[-1] >= 0.5


def test_sigint_stops_a_jobdir_crawl_midway(http_server: ScriptedServer, tmp_path: Path) -> None:
    urls = [Start(http_server.url(f"/page/slow?{i}")) for i in range(40)]
    for i in range(40):
        http_server.route(f"/page/slow?{i}", Reply(200, b"slow", delay=0.2))
    jobdir = tmp_path / "job"

    result = run_crawl(
        urls,
        {"JOBDIR": str(jobdir), "CONCURRENT_REQUESTS": 2},
        interrupt=Interrupt(http_server, "/page/slow", 4),
    )

    assert result.interrupted
    assert result.close_reason == "shutdown"
    first_run = http_server.count("/page/slow", prefix=True)
    assert 4 <= first_run < 40
    assert (jobdir / "requests.queue").is_dir()

    # Start requests not yet scheduled are not in the JOBDIR: restart with the same list (the
    # persisted dupefilter skips what the first run already scheduled), as a user would.
    resumed = run_crawl(urls, {"JOBDIR": str(jobdir), "CONCURRENT_REQUESTS": 8})

    assert resumed.close_reason == "finished"
    assert len(resumed.responses) == 40 - first_run
    assert sorted(http_server.paths()) == sorted(f"/page/slow?{i}" for i in range(40))


def test_closespider_pagecount(http_server: ScriptedServer) -> None:
    urls = [http_server.url(f"/page/{i}") for i in range(30)]

    result = run_crawl(urls, {"CLOSESPIDER_PAGECOUNT": 3, "CONCURRENT_REQUESTS": 1})

    assert result.close_reason == "closespider_pagecount"
    assert 3 <= len(result.responses) < 30


def test_builtin_middleware_stalls_other_origins(
    http_server: ScriptedServer, http_server2: ScriptedServer
) -> None:
    """With Scrapy's own middleware, requests waiting for origin A's robots.txt hold every
    downloader slot, so origin B gets nothing until A answers.

    A's robots.txt is released as soon as B has served 3 pages, or after 3 s. A middleware
    without the stall gets the release from B's progress; the built-in one only by the timeout.
    """
    a, b = http_server, http_server2
    release = threading.Event()
    a.route("/robots.txt", Reply.text("User-agent: *\nDisallow: /never\n", release=release))
    b.robots("User-agent: *\nDisallow: /never\n")
    trigger = b.when(lambda: b.count("/page/", prefix=True) >= 3, release.set, timeout=3.0)
    starts = [Start(a.url(f"/page/a{i}"), priority=1) for i in range(12)]
    starts += [Start(b.url(f"/page/b{i}")) for i in range(6)]

    result = run_crawl(starts, {**OBEY, "CONCURRENT_REQUESTS": 4})

    assert trigger.fired.is_set() and not trigger.condition_met
    a_robots = a.seen("/robots.txt")[0]
    b_pages = b.seen("/page/", prefix=True)
    assert a_robots.finished is not None and trigger.fired_at is not None
    assert len(b_pages) == 6 and len(result.responses) == 18
    assert min(p.time for p in b_pages) >= trigger.fired_at

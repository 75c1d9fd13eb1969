"""SPEC B1 in real crawls: one robots.txt per scheme + host + port; IDN hosts; FTP."""

from __future__ import annotations

from _crawl import run_crawl
from _servers import FtpServer, ScriptedServer
from test_middleware_basic import settings


def test_scheme_and_port_each_make_an_origin_with_its_own_robots_txt(
    http_server: ScriptedServer, http_server2: ScriptedServer, https_server: ScriptedServer
) -> None:
    # One host (127.0.0.1): http on two ports, https on a third; each disallows its own page.
    http_server.robots("User-agent: *\nDisallow: /page/a\n")
    http_server2.robots("User-agent: *\nDisallow: /page/b\n")
    https_server.robots("User-agent: *\nDisallow: /page/b\n")
    servers = (http_server, http_server2, https_server)
    urls = [s.url(p) for s in servers for p in ("/page/a", "/page/b")]
    result = run_crawl(urls, settings())
    assert http_server.paths().count("/page/a") == 0
    assert http_server.paths().count("/page/b") == 1
    for other in (http_server2, https_server):
        assert other.paths().count("/page/a") == 1
        assert other.paths().count("/page/b") == 0
    for server in servers:
        assert server.count("/robots.txt") == 1
    assert result.stat("robotstxt/forbidden") == 3


def test_idn_host_and_its_punycode_are_one_origin(http_server: ScriptedServer) -> None:
    # tests/_resolver.py maps the name to 127.0.0.1 inside the crawl (see its docstring).
    http_server.robots("User-agent: *\nDisallow: /page/private\n")
    urls = [
        http_server.url("/page/1", host="müller.test"),
        http_server.url("/page/2", host="xn--mller-kva.test"),
        http_server.url("/page/3", host="MÜLLER.test"),
        http_server.url("/page/private", host="müller.test"),
    ]
    result = run_crawl(urls, settings(), hosts={"müller.test": "127.0.0.1"})
    assert http_server.count("/robots.txt") == 1
    robots = http_server.seen("/robots.txt")[0]
    assert robots.headers["host"] == f"xn--mller-kva.test:{http_server.port}"
    assert sorted(p for p in http_server.paths() if p.startswith("/page/")) == [
        "/page/1",
        "/page/2",
        "/page/3",
    ]
    assert result.stat("robotstxt/forbidden_before_schedule") == 1


def test_host_names_compare_case_insensitively(http_server: ScriptedServer) -> None:
    http_server.robots("User-agent: *\nDisallow: /page/private\n")
    urls = [
        http_server.url("/page/1", host="Example.test"),
        http_server.url("/page/private", host="EXAMPLE.TEST"),
    ]
    run_crawl(urls, settings(), hosts={"example.test": "127.0.0.1"})
    assert http_server.count("/robots.txt") == 1
    assert http_server.count("/page/private") == 0
    assert http_server.count("/page/1") == 1


def test_ftp_robots_txt(ftp_server: FtpServer) -> None:
    ftp_server.write("robots.txt", "User-agent: *\nDisallow: /private.txt\n")
    ftp_server.write("public.txt", "public")
    ftp_server.write("private.txt", "private")
    urls = [ftp_server.url("/public.txt"), ftp_server.url("/private.txt")]
    result = run_crawl(urls, settings())
    assert ftp_server.retrieved.count("/robots.txt") == 1
    assert "/public.txt" in ftp_server.retrieved
    assert "/private.txt" not in ftp_server.retrieved
    assert result.stat("robotstxt/forbidden_before_schedule") == 1


def test_ftp_without_robots_txt_allows_everything(ftp_server: FtpServer) -> None:
    ftp_server.write("private.txt", "private")
    result = run_crawl([ftp_server.url("/private.txt")], settings())
    assert ftp_server.retrieved == ["/robots.txt", "/private.txt"]
    assert result.stat("robotstxt/response_status_count/404") == 1

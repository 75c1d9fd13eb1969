"""``scrapy robots --page URL``: a page's robots meta tags and X-Robots-Tag, explained (SPEC D)."""

from __future__ import annotations

import json
from pathlib import Path

from _servers import Reply, ScriptedServer
from test_explain import scrapy_robots

from scrapy_rep import PageRules
from scrapy_rep.core.explain import page_entry
from scrapy_rep.core.explain_text import format_page

PAGE = (
    b"<html><head><meta name='robots' content='noarchive'>"
    b"<meta name='mybot' content='NOFOLLOW'></head><body></body></html>"
)


def _site(srv: ScriptedServer) -> None:
    srv.robots("User-agent: *\nDisallow: /private/\n")
    headers = {"Content-Type": "text/html", "X-Robots-Tag": ["otherbot: noindex", "mybot: noindex"]}
    srv.route("/page/a", Reply(200, PAGE, headers=headers))
    srv.route("/moved", Reply.redirect("/page/b"))


def test_page_rules_in_json(tmp_path: Path, http_server: ScriptedServer) -> None:
    _site(http_server)
    result = scrapy_robots(
        "--page",
        "--json",
        "--user-agent",
        "MyBot",
        http_server.url("/page/a"),
        http_server.url("/moved"),
        http_server.url("/private/x"),
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr
    page, moved, private = (entry["page"] for entry in json.loads(result.stdout))
    assert page == {
        "url": http_server.url("/page/a"),
        "status": 200,
        "noindex": True,
        "nofollow": True,
        "unavailable_after": None,
        "directives": {
            "otherbot": ["noindex"],
            "mybot": ["noindex", "nofollow"],
            "*": ["noarchive"],
        },
        # Nothing states a usage preference for it (SPEC G3).
        "usage": {
            label: {"value": None, "sources": []} for label in ("train-ai", "ai-use", "search")
        },
    }
    assert moved["url"] == http_server.url("/page/b")
    assert (moved["noindex"], moved["nofollow"]) == (False, False)
    # robots.txt disallows it: the page is not fetched.
    assert private == {"url": http_server.url("/private/x"), "error": "robots.txt disallows it"}
    assert http_server.count("/private/x") == 0
    assert http_server.count("/page/a") == 1


def test_page_rules_in_text_for_another_token(tmp_path: Path, http_server: ScriptedServer) -> None:
    _site(http_server)
    url = http_server.url("/page/a")
    result = scrapy_robots("--page", "--user-agent", "OtherBot", url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    page_line = result.stdout.splitlines()[-1]
    # Headers scoped to other crawlers are shown; meta tags only for robots and our tokens.
    assert page_line == (
        "  page:   HTTP 200, noindex (otherbot: noindex; mybot: noindex; *: noarchive)"
    )


def test_page_needs_fetching(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nAllow: /\n")
    result = scrapy_robots("--page", "--file", str(robots), "http://a.test/", cwd=tmp_path)
    assert result.returncode == 2
    assert "--page fetches the pages" in result.stderr


def test_format_page() -> None:
    entry = page_entry("http://a.test/b", 200, PageRules())
    assert format_page(entry, "http://a.test/b") == (
        "HTTP 200, index, follow (no robots meta tags or X-Robots-Tag)"
    )
    assert format_page(entry, "http://a.test/").endswith(", at http://a.test/b")
    assert format_page({"url": "u", "error": "boom"}) == "not fetched: boom"

"""Page-level rules in real crawls (SPEC D): links of nofollow pages are never requested.

One local site, each page a case linking to a child of its own; the server counts
which children were requested. The crawler is ``HarnessBot`` (its User-Agent).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from _crawl import CrawlResult, run_crawl
from _servers import Reply, ScriptedServer

ADDON = {
    "ADDONS": {"scrapy_rep.Addon": 0},
    # The harness sets ROBOTSTXT_OBEY = False at project priority, above the add-on's.
    "ROBOTSTXT_OBEY": True,
    "USER_AGENT": "HarnessBot/1.0 (+https://x.test)",
}


def _html(head: str, links: list[str]) -> str:
    anchors = "".join(f"<a {attrs}>x</a>" for attrs in links)
    return f"<html><head><title>t</title>{head}</head><body>{anchors}</body></html>"


# case → (head, X-Robots-Tag lines, content type, child followed?, item noindex?)
CASES: dict[str, tuple[str, list[str], str, bool, bool]] = {
    "plain": ("", [], "text/html", True, False),
    "meta-nofollow": ('<meta name="robots" content="nofollow">', [], "text/html", False, False),
    "header-nofollow": ("", ["nofollow"], "text/html", False, False),
    "meta-none-upper": ('<META NAME="ROBOTS" CONTENT="NONE">', [], "text/html", False, True),
    "meta-several": (
        '<meta name="robots" content="noarchive"><meta name="HarnessBot" content="NoFollow">',
        [],
        "text/html",
        False,
        False,
    ),
    "header-several": ("", ["noarchive", "harnessbot: nofollow"], "text/html", False, False),
    "meta-noindex": ('<meta name="robots" content="index, noindex">', [], "text/html", True, True),
    "header-otherbot": ("", ["otherbot: nofollow, noindex"], "text/html", True, False),
    "meta-otherbot": ('<meta name="otherbot" content="none">', [], "text/html", True, False),
    "unavailable-past": ("", ["unavailable_after: 2001-01-01"], "text/html", True, True),
    "unavailable-future": (
        '<meta name="robots" content="unavailable_after: 25-Jun-2999 15:00:00 PST">',
        [],
        "text/html",
        True,
        False,
    ),
    # Not HTML: the meta tag in the body is not read, the header is.
    "plain-text-meta": ('<meta name="robots" content="none">', [], "text/plain", True, False),
    "plain-text-header": ("", ["noindex"], "text/plain", True, True),
}


def _site(srv: ScriptedServer) -> list[str]:
    srv.robots("User-agent: *\nAllow: /\n")
    starts = []
    for case, (head, lines, content_type, _, _) in CASES.items():
        links = [f'href="/page/child-{case}"', f'rel="nofollow" href="/page/relchild-{case}"']
        headers: dict[str, str | list[str]] = {"Content-Type": content_type}
        if lines:
            headers["X-Robots-Tag"] = lines
        srv.route(f"/page/{case}", Reply(200, _html(head, links), headers=headers))
        starts.append(srv.url(f"/page/{case}"))
    return starts


def _crawl(srv: ScriptedServer, settings: dict[str, Any]) -> CrawlResult:
    return run_crawl(_site(srv), settings, follow_links=True, items=True)


def _children(srv: ScriptedServer, prefix: str = "/page/child-") -> set[str]:
    return {path[len(prefix) :] for path in srv.paths() if path.startswith(prefix)}


def _marked(result: CrawlResult) -> set[str]:
    return {
        item["url"].rsplit("/", 1)[1] for item in result.items if item.get("rep_noindex") is True
    }


def test_nofollow_pages_links_never_requested_and_noindex_items_marked(
    http_server: ScriptedServer,
) -> None:
    result = _crawl(http_server, {**ADDON, "LOG_LEVEL": "DEBUG"})

    followed = {case for case, spec in CASES.items() if spec[3]}
    assert _children(http_server) == followed
    # rel="nofollow" on single links is a hint, not obeyed by default.
    assert _children(http_server, "/page/relchild-") == followed
    assert all(http_server.count(f"/page/{case}") == 1 for case in CASES)

    noindex = {case for case, spec in CASES.items() if spec[4]}
    assert _marked(result) == noindex
    # Every page (and child) still gives its item: marking drops nothing.
    assert len(result.items) == len(CASES) + 2 * len(followed)
    assert result.stat("robotspage/items/marked") == len(noindex)
    nofollow = len(CASES) - len(followed)
    assert result.stat("robotspage/pages/nofollow") == nofollow
    assert result.stat("robotspage/pages/noindex") == len(noindex)
    assert result.stat("robotspage/requests/nofollow") == 2 * nofollow
    # One log line per page, not one per dropped link.
    assert result.log.count("the page says nofollow") == nofollow
    assert "Dropped 2 request(s) from " + http_server.url("/page/header-nofollow") in result.log
    # Filtered as DepthMiddleware filters, no errback; in the drop path's closing summary.
    assert result.errbacks == []
    origin = http_server.url("/").rstrip("/")
    # Several pages: the words are the first page's.
    summary = (
        f"scrapy-rep dropped {2 * nofollow} request(s), not downloaded, from 1 origin(s):\n"
        f"  {origin}: {2 * nofollow} nofollow (first: the page {origin}/page/"
    )
    assert summary in result.log
    assert "says nofollow)" in result.log


def test_noindex_items_dropped_and_rel_nofollow_obeyed_when_asked(
    http_server: ScriptedServer,
) -> None:
    result = _crawl(
        http_server, {**ADDON, "REP_PAGE_NOINDEX": "drop", "REP_PAGE_RELNOFOLLOW": True}
    )

    followed = {case for case, spec in CASES.items() if spec[3]}
    noindex = {case for case, spec in CASES.items() if spec[4]}
    assert _children(http_server) == followed
    html_followed = {case for case in followed if CASES[case][2] == "text/html"}
    # rel="nofollow" links of HTML pages are skipped; a text/plain page has no HTML links.
    assert _children(http_server, "/page/relchild-") == followed - html_followed
    scraped = {item["url"].rsplit("/", 1)[1] for item in result.items}
    assert not scraped & noindex
    assert set(CASES) - noindex <= scraped
    assert result.stat("robotspage/items/dropped") == len(noindex)
    assert result.stat("robotspage/requests/rel_nofollow") == len(html_followed)
    assert not _marked(result)


def _scrapy_view(srv: ScriptedServer, result: CrawlResult) -> tuple[list[str], list[str]]:
    pages = sorted(path for path in srv.paths() if path != "/robots.txt")
    # Items as the paths they came from: the two crawls run against different ports.
    return pages, sorted(repr({**item, "url": urlsplit(item["url"]).path}) for item in result.items)


@pytest.mark.parametrize(
    "off",
    [{"REP_PAGE_RULES": False}, {"ROBOTSTXT_OBEY": False}],
    ids=["REP_PAGE_RULES", "ROBOTSTXT_OBEY"],
)
def test_turned_off_is_scrapy_exactly(server_factory: Any, off: dict[str, Any]) -> None:
    plain_srv, off_srv = server_factory(), server_factory()
    plain = _crawl(plain_srv, {"USER_AGENT": ADDON["USER_AGENT"]})
    turned_off = _crawl(off_srv, {**ADDON, **off})

    assert _scrapy_view(off_srv, turned_off) == _scrapy_view(plain_srv, plain)
    assert not any(key.startswith("robotspage/") for key in turned_off.stats)
    assert not any("rep_noindex" in item for item in turned_off.items)
    assert "PageRobotsMiddleware" not in turned_off.log
    # Plain Scrapy follows every page's links, nofollow or not.
    assert _children(plain_srv) == set(CASES)

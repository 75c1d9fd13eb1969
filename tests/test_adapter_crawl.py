"""ROBOTSTXT_PARSER = "scrapy_rep.RobotParser" under Scrapy's own middleware, in a real crawl."""

from __future__ import annotations

from _crawl import run_crawl
from _servers import ScriptedServer

# Each rule is one Protego reads differently from Google, so the pages fetched
# show which parser decided.
ROBOTS = """\
User-agent: testbot
Disallowed: /typo-key
Disallow: /d/
Allow: /d/index.html
Disallow /no-colon

User-agent: *
Disallow: /
"""


def test_builtin_middleware_with_our_parser(http_server: ScriptedServer) -> None:
    http_server.robots(ROBOTS)
    # The other pages are linked from the first one, so they are checked after
    # robots.txt is in: Scrapy 2.19's built-in middleware lets requests that
    # waited for robots.txt while it downloaded through unchecked (all but the
    # first waiter get None from the shared Deferred), whatever the parser.
    http_server.links("/page/ok", ["/typo-key/1", "/d/", "/d/other", "/no-colon/x", "/page/ok2"])
    result = run_crawl(
        [http_server.url("/page/ok")],
        follow_links=True,
        settings={
            "ROBOTSTXT_OBEY": True,
            "ROBOTSTXT_PARSER": "scrapy_rep.RobotParser",
            "USER_AGENT": "TestBot/1.0 (+https://example.invalid/bot)",
        },
    )
    fetched = set(http_server.paths())
    assert {"/robots.txt", "/page/ok", "/d/", "/page/ok2"} <= fetched
    assert not fetched & {"/typo-key/1", "/d/other", "/no-colon/x"}
    assert http_server.count("/robots.txt") == 1
    assert result.stat("robotstxt/forbidden") == 3


def test_browser_like_user_agent_obeys_star_unless_configured(http_server: ScriptedServer) -> None:
    http_server.robots(ROBOTS)
    browser = "Mozilla/5.0 (compatible; TestBot/1.0; +https://example.invalid/bot)"
    settings = {
        "ROBOTSTXT_OBEY": True,
        "ROBOTSTXT_PARSER": "scrapy_rep.RobotParser",
        "USER_AGENT": browser,
    }
    result = run_crawl([http_server.url("/page/a")], settings)
    assert "/page/a" not in http_server.paths()  # '*' disallows everything for "Mozilla"
    assert "obeyed as 'Mozilla'" in result.log

    result = run_crawl(
        [http_server.url("/page/b")], {**settings, "ROBOTSTXT_USER_AGENT": "TestBot"}
    )
    assert "/page/b" in http_server.paths()

"""A verdict belongs to the request it was given for: real crawls in which, after an
allowed page, the spider makes a request by an everyday idiom that copies that page's meta or
request (``response.follow(..., meta=response.meta)``, ``Request(..., meta=dict(response.meta))``,
``response.request.replace(...)``), and one with a downloader middleware at 400 that sets
another User-Agent. Whatever the copy carries of the allowed page's admission, robots.txt is
obeyed: the server never receives a disallowed page, nor any page as an agent whose group
disallows it.

Everything is judged from the server's side (the paths it received and their User-Agent), so
a drop anywhere in scrapy-rep counts, and a download slipping past it cannot hide.
"""

from __future__ import annotations

from typing import Any

import pytest
from _crawl import CrawlResult, Start, run_crawl
from _servers import Reply, ScriptedServer, html_page
from _set_user_agent import STAT as USER_AGENT_SET

ROBOTS = "User-agent: *\nDisallow: /private/\n\nUser-agent: blockedbot\nDisallow: /\n"
USER_AGENT = "TestBot/1.0 (+http://127.0.0.1)"
BLOCKED_AGENT = "blockedbot/1.0"
SETTINGS: dict[str, Any] = {
    "ADDONS": {"scrapy_rep.Addon": 0},
    "ROBOTSTXT_OBEY": True,
    # A User-Agent of the `*` group, so only /private/ is disallowed to it.
    "USER_AGENT": USER_AGENT,
    # Each server answer is scripted: a retry would only add requests to read past.
    "RETRY_ENABLED": False,
}
START = "/page/start"
ALLOWED = "/page/allowed"
ALSO_ALLOWED = "/page/also"
PRIVATE = "/private/x.html"
#: Meta the spider sets on every page it requests, so a copy carries the spider's own keys
#: besides those Scrapy and scrapy-rep put in ``response.meta``.
START_META = {"harness_mark": "start"}
FOLLOW_META = {"harness_mark": "followed"}

#: Everyday idioms that copy meta or a request, done once after one allowed page (see
#: CopiedMetaSpider).
IDIOMS = [
    pytest.param("follow", id="1-follow-control"),
    pytest.param("follow_meta", id="2-follow-meta=response.meta"),
    pytest.param("request_meta", id="3-Request-meta=dict(response.meta)"),
    pytest.param("replace_url", id="4-request.replace-url"),
    pytest.param("replace_user_agent", id="5-request.replace-User-Agent"),
]
#: The page whose meta or request is copied: the origin's first request (let through with a
#: token of its own, on which the final gate releases the origin's claim) and a page followed
#: once robots.txt was known (the token of the origin's state).
AFTER = [
    pytest.param(START, id="after-first-request"),
    pytest.param(ALLOWED, id="after-followed-page"),
]


def _serve(server: ScriptedServer, links: list[str]) -> None:
    server.robots(ROBOTS)
    server.links(START, links)
    # A real page, so a download that slips through is an ordinary 200 to the spider.
    server.route(
        PRIVATE, Reply(200, html_page("private", []), headers={"Content-Type": "text/html"})
    )


def _user_agent(seen_headers: dict[str, str]) -> str:
    return seen_headers.get("user-agent", "")


def _agents(server: ScriptedServer, path: str) -> list[str]:
    """The User-Agent of each request the server received for ``path``, in arrival order."""
    return [_user_agent(seen.headers) for seen in server.seen(path)]


def _assert_nothing_forbidden_downloaded(server: ScriptedServer, result: CrawlResult) -> None:
    """The server received no /private/ page and nothing as blockedbot (whose group disallows
    everything), and scrapy-rep counted what it dropped."""
    received = [(seen.path, _user_agent(seen.headers)) for seen in server.requests]
    private = [(path, agent) for path, agent in received if path.startswith("/private/")]
    as_blocked = [(path, agent) for path, agent in received if "blockedbot" in agent.lower()]
    assert not private, f"disallowed pages downloaded: {private}; server saw {received}"
    assert not as_blocked, f"pages downloaded as blockedbot: {as_blocked}; server saw {received}"
    assert result.stat("robotstxt/forbidden") > 0, result.stats


@pytest.mark.parametrize("idiom", IDIOMS)
@pytest.mark.parametrize("after", AFTER)
def test_a_copy_of_an_allowed_page_s_meta_or_request_admits_nothing(
    http_server: ScriptedServer, after: str, idiom: str
) -> None:
    _serve(http_server, [ALLOWED])
    result = run_crawl(
        [Start(http_server.url(START), meta=START_META)],
        SETTINGS,
        spider="copied_meta",
        follow_links=True,
        follow_meta=FOLLOW_META,
        copy={
            "idiom": idiom,
            "after": http_server.url(after),
            "target": PRIVATE,
            "user_agent": BLOCKED_AGENT,
        },
        timeout=30,
    )
    # The allowed pages were downloaded, first as the crawl's own agent: the copy was made
    # from a page that went through scrapy-rep's gates like any other.
    assert _agents(http_server, START)[:1] == [USER_AGENT]
    assert _agents(http_server, ALLOWED)[:1] == [USER_AGENT]
    copied = result.probe.get("copied_from")
    assert copied is not None, "the spider never made its copy"
    assert copied["url"] == http_server.url(after)
    if idiom != "follow":
        # The copy carries the page's meta: the spider's mark and Scrapy's keys with it.
        assert {"harness_mark", "depth", "download_slot"} <= set(copied["copy_meta_keys"])
    _assert_nothing_forbidden_downloaded(http_server, result)


def test_a_user_agent_set_by_a_downloader_middleware_is_obeyed(
    http_server: ScriptedServer,
) -> None:
    # Pages the start page links to, allowed to the crawl's agent, get blockedbot's at 400:
    # after scrapy-rep's gates (100) and before the guard's last look (950).
    _serve(http_server, [ALLOWED, ALSO_ALLOWED])
    result = run_crawl(
        [Start(http_server.url(START), meta=START_META)],
        {
            **SETTINGS,
            "DOWNLOADER_MIDDLEWARES": {"_set_user_agent.SetUserAgent": 400},
            "SET_USER_AGENT": BLOCKED_AGENT,
            "SET_USER_AGENT_PATHS": [ALLOWED, ALSO_ALLOWED],
        },
        follow_links=True,
        follow_meta=FOLLOW_META,
        timeout=30,
    )
    assert _agents(http_server, START) == [USER_AGENT]
    # The middleware did rewrite them (so the pages were requested and passed the gates).
    assert result.stat(USER_AGENT_SET) >= 2, result.stats
    _assert_nothing_forbidden_downloaded(http_server, result)
    assert http_server.count(ALLOWED) == http_server.count(ALSO_ALLOWED) == 0

"""PageRobotsMiddleware on its own, with a real Crawler (crawls: test_page_crawl.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

import pytest
import scrapy
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse, Request, Response, TextResponse
from scrapy.utils.test import get_crawler

from scrapy_rep import PageRobotsMiddleware, PageRules
from scrapy_rep.crawl.page_middleware import META_KEY

URL = "http://site.test/page"


class Declared(scrapy.Item):
    title = scrapy.Field()
    rep_noindex = scrapy.Field()


class Undeclared(scrapy.Item):
    title = scrapy.Field()


@dataclass(frozen=True)
class Frozen:
    rep_noindex: bool = False


def middleware(**settings: Any) -> PageRobotsMiddleware:
    # A crawler that names itself: no USER_AGENT warning among the stats counted here.
    identified = {"ROBOTSTXT_OBEY": True, "USER_AGENT": "MyBot/1.0 (+https://mybot.example)"}
    crawler = get_crawler(settings_dict={**identified, **settings})
    return PageRobotsMiddleware.from_crawler(crawler)


def html(head: str, body: str = "", headers: dict[str, Any] | None = None) -> HtmlResponse:
    request = Request(URL, headers={"User-Agent": "MyBot/1.0"})
    page = f"<html><head>{head}</head><body>{body}</body></html>".encode()
    return HtmlResponse(URL, body=page, headers=headers, request=request)


def run(mw: PageRobotsMiddleware, response: Response, output: Iterable[Any]) -> list[Any]:
    mw.process_spider_input(response)
    return list(mw.process_spider_output(response, output))


def stats(mw: PageRobotsMiddleware) -> dict[str, Any]:
    assert mw.crawler.stats is not None
    return mw.crawler.stats.get_stats()


def test_rules_are_on_the_meta_before_the_callback_and_computed_once() -> None:
    mw = middleware()
    response = html('<meta name="mybot" content="nofollow">')
    mw.process_spider_input(response)
    rules = response.meta[META_KEY]
    assert isinstance(rules, PageRules) and rules.nofollow and not rules.noindex
    assert mw.rules(response) is rules
    assert stats(mw) == {"robotspage/pages/nofollow": 1}


def test_rules_copied_with_the_meta_are_not_reused() -> None:
    mw = middleware()
    parent = html('<meta name="robots" content="none">')
    mw.process_spider_input(parent)
    child = html("")
    child.request.meta.update(parent.meta)  # type: ignore[union-attr]
    mw.process_spider_input(child)
    assert child.meta[META_KEY] == PageRules()
    request = Request(URL + "/a")
    assert run(mw, child, [request]) == [request]


def test_off_and_misconfigured() -> None:
    with pytest.raises(NotConfigured):
        middleware(REP_PAGE_RULES=False)
    with pytest.raises(NotConfigured):
        middleware(ROBOTSTXT_OBEY=False)
    with pytest.raises(ValueError, match="REP_PAGE_NOINDEX must be 'mark' or 'drop'"):
        middleware(REP_PAGE_NOINDEX="hide")
    with pytest.raises(ValueError, match="REP_PAGE_RULES must be True or False"):
        middleware(REP_PAGE_RULES="sometimes")
    with pytest.raises(ValueError, match="REP_PAGE_NOINDEX_FIELD"):
        middleware(REP_PAGE_NOINDEX_FIELD="")


def test_noindex_marks_items_that_can_carry_the_mark(caplog: pytest.LogCaptureFixture) -> None:
    mw = middleware()
    response = html('<meta name="robots" content="noindex">')
    items = [{"a": 1}, Declared(title="t"), Undeclared(title="u"), Undeclared(title="v"), Frozen()]
    with caplog.at_level(logging.WARNING):
        out = run(mw, response, items)
    assert out == items
    assert out[0]["rep_noindex"] is True and out[1]["rep_noindex"] is True
    assert "rep_noindex" not in out[2]
    assert stats(mw)["robotspage/items/marked"] == 2
    assert stats(mw)["robotspage/items/unmarked"] == 3
    assert caplog.text.count("cannot be marked") == 2  # once per item type


def test_a_field_of_your_own() -> None:
    out = run(
        middleware(REP_PAGE_NOINDEX_FIELD="title"),
        html("", headers={"X-Robots-Tag": "noindex"}),
        [Undeclared(title="u")],
    )
    assert out[0]["title"] is True


def test_nofollow_drops_requests_items_pass_and_opt_outs() -> None:
    mw = middleware(REP_PAGE_NOINDEX="drop")
    response = html('<meta name="robots" content="nofollow">')
    kept = Request(URL + "/own", meta={"dont_obey_robotstxt": True})
    out = run(mw, response, [Request(URL + "/a"), {"a": 1}, kept, Request(URL + "/b")])
    assert out == [{"a": 1}, kept]
    assert stats(mw)["robotspage/requests/nofollow"] == 2
    # A response fetched with dont_obey_robotstxt is not judged at all.
    ignored = html('<meta name="robots" content="none">')
    ignored.request.meta["dont_obey_robotstxt"] = True  # type: ignore[union-attr]
    request = Request(URL + "/c")
    assert run(mw, ignored, [request, {"b": 2}]) == [request, {"b": 2}]
    assert META_KEY not in ignored.meta


def test_rel_nofollow_only_when_asked() -> None:
    body = (
        '<a rel="NoFollow ugc" href="/x#frag">x</a><a href="/y">y</a>'
        '<a rel="nofollow" href="http://other.test/z?b=2&amp;a=1">z</a><a rel="noopener" href="/w">'
    )
    wanted = [Request(f"{URL[:-5]}/{p}") for p in ("x", "y", "w")]
    wanted.append(Request("http://other.test/z?a=1&b=2"))
    assert run(middleware(), html("", body), wanted) == wanted
    mw = middleware(REP_PAGE_RELNOFOLLOW=True)
    assert run(mw, html("", body), wanted) == [wanted[1], wanted[2]]
    assert stats(mw)["robotspage/requests/rel_nofollow"] == 2


def test_non_html_is_judged_by_its_headers_only() -> None:
    mw = middleware()
    request = Request(URL)
    body = b'<meta name="robots" content="none">'
    text = TextResponse(URL, body=body, headers={"Content-Type": "text/plain"}, request=request)
    assert [r.url for r in run(mw, text, [Request(URL + "/a")])] == [URL + "/a"]
    assert text.meta[META_KEY] == PageRules()
    headers = {"X-Robots-Tag": ["noarchive", "NONE"]}
    pdf = Response(URL, body=body, headers=headers, request=Request(URL))
    assert run(mw, pdf, [Request(URL + "/a")]) == []


def test_async_output_is_filtered_the_same() -> None:
    mw = middleware(REP_PAGE_NOINDEX="drop")
    response = html("", headers={"X-Robots-Tag": "mybot: none"})

    async def output() -> AsyncIterator[Any]:
        yield Request(URL + "/a")
        yield {"a": 1}

    async def collect() -> list[Any]:
        return [x async for x in mw.process_spider_output_async(response, output())]

    assert asyncio.run(collect()) == []
    assert stats(mw)["robotspage/requests/nofollow"] == 1
    assert stats(mw)["robotspage/items/dropped"] == 1


def _spider_middlewares(**settings: Any) -> list[str]:
    from scrapy.core.spidermw import SpiderMiddlewareManager

    from scrapy_rep.crawl.addon import component_path

    crawler = get_crawler(settings_dict={"ADDONS": {"scrapy_rep.Addon": 0}, **settings})
    return [
        component_path(m)
        for m in SpiderMiddlewareManager._get_mwlist_from_settings(crawler.settings)
    ]


def test_the_addon_wires_it_nearest_the_spider_and_the_user_wins() -> None:
    ours = "scrapy_rep.crawl.page_middleware.PageRobotsMiddleware"
    enabled = _spider_middlewares()
    # After DepthMiddleware (900): nearest the spider of Scrapy's own that change requests.
    assert (
        enabled.index(ours) == enabled.index("scrapy.spidermiddlewares.depth.DepthMiddleware") + 1
    )
    assert ours not in _spider_middlewares(SPIDER_MIDDLEWARES={ours: None})
    assert ours not in _spider_middlewares(
        SPIDER_MIDDLEWARES={"scrapy_rep.PageRobotsMiddleware": None}
    )
    moved = _spider_middlewares(SPIDER_MIDDLEWARES={PageRobotsMiddleware: 10})
    assert moved.index(ours) < moved.index("scrapy.spidermiddlewares.depth.DepthMiddleware")

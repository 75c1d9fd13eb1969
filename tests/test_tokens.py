"""``scrapy_rep.core.tokens.CrawlerTokens``: the one place that decides a crawler's tokens
(SPEC C1, C2).

Pure unit tests: no Scrapy, settings are a plain mapping with ``getlist``.
"""

from __future__ import annotations

from typing import Any

import pytest

from scrapy_rep import RobotsTxt
from scrapy_rep.core.tokens import CrawlerTokens, clean_cut, suggest_token


class Settings(dict[str, Any]):
    """The two methods ``from_settings`` reads, with Scrapy's ``getlist`` splitting on commas."""

    def getlist(self, name: str, default: Any = None) -> list[Any]:
        value = self.get(name, default) or []
        return value.split(",") if isinstance(value, str) else list(value)


def tokens(warned: list[str] | None = None, **settings: Any) -> CrawlerTokens:
    sink = warned if warned is not None else []
    return CrawlerTokens.from_settings(Settings(settings), warn=sink.append)


def test_precedence_list_then_setting_then_header() -> None:
    both = tokens(REP_USER_AGENTS=["mybot-news", "mybot"], ROBOTSTXT_USER_AGENT="other")
    assert both.fixed == ("mybot-news", "mybot")
    assert both.for_header(b"Header/1") == ("mybot-news", "mybot")
    single = tokens(ROBOTSTXT_USER_AGENT="MyBot/2.0", USER_AGENT="Demo/1")
    assert single.fixed == ("MyBot",)
    assert single.default == ("MyBot",)
    header = tokens(USER_AGENT="DemoBot/0.1 (+https://d)")
    assert header.fixed is None
    assert header.default == ("DemoBot",)
    assert header.for_header(None) == ("DemoBot",)
    assert header.for_header(b"") == ("DemoBot",)
    assert header.for_header(b"Other/1") == ("Other",)
    assert header.for_header("Other/1") == ("Other",)
    assert header.for_header("123/1") == ()  # no product token: only '*' applies
    assert tokens(REP_USER_AGENTS="otherbot,mybot").fixed == ("otherbot", "mybot")
    assert tokens().default == ()


def test_header_cache_is_bounded() -> None:
    crawler = tokens(USER_AGENT="DemoBot/1")
    for n in range(2_000):
        assert crawler.for_header(f"Bot{'x' * (n % 50)}-{n}/1".encode()) == (
            f"Bot{'x' * (n % 50)}-",
        )
    assert len(crawler._by_header) <= 256


def test_header_mozilla_warns_once_per_instance_with_the_crawlers_own_token() -> None:
    warned: list[str] = []
    crawler = tokens(warned, USER_AGENT="DemoBot/1")
    header = "Mozilla/5.0 (compatible; NewsBot/2.1; +https://n)"
    assert crawler.for_header(header) == ("Mozilla",)
    assert crawler.for_header(b"Mozilla/5.0 (X11; Linux x86_64)") == ("Mozilla",)
    assert len(warned) == 1
    assert "ROBOTSTXT_USER_AGENT = 'NewsBot'" in warned[0]
    # Another crawler (another instance) is told too: no process-wide flag.
    other: list[str] = []
    tokens(other, USER_AGENT="DemoBot/1").for_header(header)
    assert len(other) == 1


def test_user_agent_setting_is_not_warned_again_at_run_time() -> None:
    warned: list[str] = []
    user_agent = "Mozilla/5.0 (compatible; DemoBot/1.0)"
    crawler = tokens(warned, USER_AGENT=user_agent)
    assert len(crawler.warnings) == 1  # the startup warning covers it
    assert crawler.for_header(user_agent.encode()) == ("Mozilla",)
    assert warned == []


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"USER_AGENT": "MyBot/1.0 (+https://mybot.example)"}, []),
        ({"USER_AGENT": "Scrapy/2.19 (+https://scrapy.org)"}, []),
        (
            {"USER_AGENT": "Mozilla/5.0 (compatible; MyBot/1.0)"},
            ["browser-like", "ROBOTSTXT_USER_AGENT = 'MyBot'"],
        ),
        (
            {"USER_AGENT": "Mozilla/5.0 (X11; Linux x86_64)"},
            ["browser-like", "ROBOTSTXT_USER_AGENT = 'MyBot'"],
        ),
        ({"USER_AGENT": "Mozilla/5.0", "ROBOTSTXT_USER_AGENT": "MyBot"}, []),
        ({"USER_AGENT": "Mozilla/5.0", "REP_USER_AGENTS": ["mybot-news", "mybot"]}, []),
        ({"USER_AGENT": ""}, ["no product token", "ROBOTSTXT_USER_AGENT"]),
        ({"USER_AGENT": "2bot/1.0"}, ["no product token"]),
        (
            {"ROBOTSTXT_USER_AGENT": "My Bot/1.0"},
            ["value 'My Bot/1.0'", "reads it as 'My'", "ROBOTSTXT_USER_AGENT = 'MyBot'"],
        ),
        ({"ROBOTSTXT_USER_AGENT": "MyBot/2.0"}, ["obeyed as 'MyBot': set it to 'MyBot'"]),
        ({"ROBOTSTXT_USER_AGENT": "/x"}, ["not a product token", "only '*' groups apply"]),
        ({"ROBOTSTXT_USER_AGENT": "mozilla"}, ["browser's token"]),
        # A browser's header in ROBOTSTXT_USER_AGENT: advise the crawler's own
        # token, never 'Mozilla'.
        (
            {
                "ROBOTSTXT_USER_AGENT": "Mozilla/5.0",
                "USER_AGENT": "Mozilla/5.0 (compatible; DemoBot/1.0)",
            },
            ["browser's token", "ROBOTSTXT_USER_AGENT = 'DemoBot'"],
        ),
        ({"REP_USER_AGENTS": ["ok-bot", "bad bot!"]}, ["REP_USER_AGENTS value 'bad bot!'"]),
        ({"REP_USER_AGENTS": ["ok-bot", "!!"]}, ["is ignored"]),
    ],
)
def test_startup_warnings(settings: dict[str, Any], expected: list[str]) -> None:
    warnings = tokens(**settings).warnings
    if not expected:
        assert warnings == ()
    else:
        assert len(warnings) == 1
        for part in expected:
            assert part in warnings[0]
        assert "set it to 'Mozilla'" not in warnings[0]
        assert "= 'Mozilla'" not in warnings[0]


@pytest.mark.parametrize(
    ("value", "suggested"),
    [
        ("Mozilla/5.0 (compatible; MyBot/1.0; +https://x)", "MyBot"),
        ("Mozilla/5.0 (X11; Linux x86_64)", "MyBot"),
        ("My Bot/1.0", "MyBot"),
        ("news_bot2", "news_bot"),
        ("", "MyBot"),
    ],
)
def test_suggest_token(value: str, suggested: str) -> None:
    assert suggest_token(value) == suggested


@pytest.mark.parametrize(
    ("value", "clean"),
    [
        ("MyBot", True),
        ("MyBot/1.0 (+https://x)", True),
        (" MyBot ", True),
        ("My Bot/1.0", False),
        ("bot2", False),
        ("", False),
        ("/1.0", False),
    ],
)
def test_clean_cut(value: str, clean: bool) -> None:
    assert clean_cut(value) is clean


def test_none_tokens_mean_only_the_star_group() -> None:
    rt = RobotsTxt.parse(
        b"User-agent: a\nDisallow: /a\nCrawl-delay: 2\n\nUser-agent: *\nDisallow: /x\n"
    )
    for _ in range(2):  # the second time through the cached last question
        assert rt.allowed("http://e/x", None) is False
        assert rt.allowed("http://e/a", None) is True
    assert rt.allowed("http://e/a", "a") is False
    assert rt.decide("http://e/x", None).reason == "no token given; used *"
    assert rt.crawl_delay(None) is None
    assert rt.crawl_delay("a") == 2.0

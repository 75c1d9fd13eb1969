"""The ROBOTSTXT_PARSER adapter: Scrapy's RobotParser interface, SPEC C1 and C2."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from scrapy.utils.test import get_crawler

from scrapy_rep import RobotParser
from scrapy_rep.crawl._tokens import settings_tokens

BODY = b"""User-agent: mybot
Disallow: /mybot-only
Crawl-delay: 3

User-agent: mybot-news
Disallow: /news-only

User-agent: *
Disallow: /private
Crawl-delay: 9
"""


def parser(body: bytes = BODY, **settings: Any) -> RobotParser:
    return RobotParser.from_crawler(get_crawler(settings_dict=settings), body)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"<html><body>Not found</body></html>",
        bytes(range(256)) * 50,
        "Disallow: /é\n".encode("latin-1"),
        b"User-agent: *\nDisallow: /x\n" + b"A" * 2_000_000,
    ],
    ids=["empty", "html", "binary", "latin-1", "2MB"],
)
def test_any_body_is_accepted(body: bytes) -> None:
    assert parser(body).allowed("http://example.com/page", "MyBot/1.0") is True


@pytest.mark.parametrize(
    ("user_agent", "url", "allowed"),
    [
        ("MyBot/1.0 (+https://mybot.example)", "http://e/mybot-only", False),
        ("MyBot/1.0 (+https://mybot.example)", "http://e/private", True),
        (b"MyBot/1.0", b"http://e/mybot-only", False),
        ("Scrapy/2.19.0 (+https://scrapy.org)", "http://e/private", False),
        ("Scrapy/2.19.0 (+https://scrapy.org)", "http://e/mybot-only", True),
    ],
)
def test_user_agent_header_becomes_product_token(
    user_agent: str | bytes, url: str | bytes, allowed: bool
) -> None:
    assert parser().allowed(url, user_agent) is allowed


def test_browser_like_user_agent_is_mozilla_and_warns_once_per_crawler(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rp = parser()
    ua = "Mozilla/5.0 (compatible; MyBot/1.0; +https://x)"
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        assert rp.allowed("http://e/mybot-only", ua) is True  # obeys * as "Mozilla"
        assert rp.allowed("http://e/private", ua) is False
        assert rp.allowed("http://e/x", b"Mozilla/5.0 (X11)") is True
    warnings = [r for r in caplog.records if "ROBOTSTXT_USER_AGENT" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].name == "scrapy_rep"
    assert "'Mozilla'" in warnings[0].getMessage()
    assert "ROBOTSTXT_USER_AGENT = 'MyBot'" in warnings[0].getMessage()


def test_from_crawler_without_crawler() -> None:
    # Scrapy's own parsers accept crawler=None (its interface tests rely on it).
    rp = RobotParser.from_crawler(None, BODY)  # type: ignore[arg-type]
    assert rp.allowed("http://e/mybot-only", "MyBot/1.0") is False
    assert rp.allowed("http://e/private", "MyBot/1.0") is True
    assert rp.allowed("http://e/private", "*") is False
    assert rp.crawl_delay("MyBot") == 3.0
    assert rp.allowed("http://e/private", None) is False  # no header: only '*'


UNICODE = """User-Agent: *
Disallow: /wiki/K%C3%A4ytt%C3%A4j%C3%A4:
Disallow: /raw/é
""".encode()


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://site.local/wiki/K%C3%A4ytt%C3%A4j%C3%A4:", False),
        # A raw non-ASCII URL is encoded as Scrapy's Request would encode it.
        ("https://site.local/wiki/Käyttäjä:", False),
        ("https://bücher.example/wiki/Käyttäjä:x", False),
        ("https://site.local/raw/é", False),
        ("https://site.local/raw/%C3%A9", False),
        ("https://site.local/wiki/Käyttäjä", True),
        (b"https://site.local/wiki/K\xc3\xa4ytt\xc3\xa4j\xc3\xa4:", False),
        # Not UTF-8, or not a URL w3lib can split: matched as given, never an error.
        (b"https://site.local/wiki/\xff", True),
        ("https://[::1/wiki/Käyttäjä:", True),
    ],
)
def test_non_ascii_url_is_encoded_like_scrapys_request(url: str | bytes, allowed: bool) -> None:
    assert parser(UNICODE).allowed(url, "MyBot") is allowed


def test_robotstxt_user_agent_wins() -> None:
    rp = parser(ROBOTSTXT_USER_AGENT="MyBot")
    ua = "Mozilla/5.0 (compatible; MyBot/1.0)"
    assert rp.allowed("http://e/mybot-only", ua) is False
    assert rp.allowed("http://e/private", ua) is True


def test_preference_list_setting() -> None:
    rp = parser(REP_USER_AGENTS=["mybot-news", "mybot"], ROBOTSTXT_USER_AGENT="ignored")
    assert rp.allowed("http://e/news-only", "whatever") is False
    assert rp.allowed("http://e/mybot-only", "whatever") is True
    rp = parser(REP_USER_AGENTS="otherbot,mybot")
    assert rp.allowed("http://e/mybot-only", "whatever") is False


def test_sitemaps_method_gives_the_files_sitemap_lines_in_order() -> None:
    body = b"Sitemap: https://e/a.xml\nUser-agent: *\nDisallow: /x\nsitemap: /rel.xml\n"
    rp = RobotParser.from_crawler(None, body)
    assert rp.sitemaps() == ["https://e/a.xml", "/rel.xml"]
    assert RobotParser.from_crawler(None, b"").sitemaps() == []


def test_crawl_delay_of_selected_group() -> None:
    rp = parser()
    assert rp.crawl_delay("MyBot/1.0") == 3.0
    assert rp.crawl_delay(b"Scrapy/2.19") == 9.0
    assert parser(b"User-agent: *\nDisallow: /\n").crawl_delay("x") is None


def test_crawler_tokens_order() -> None:
    # One CrawlerTokens per crawler's settings decides for every component.
    settings = get_crawler(settings_dict={"USER_AGENT": "DemoBot/0.1 (+https://d)"}).settings
    tokens = settings_tokens(settings)
    assert tokens is settings_tokens(settings)
    assert tokens.for_header(None) == ("DemoBot",)
    assert tokens.for_header(b"Other/1") == ("Other",)
    assert tokens.for_header("123/1") == ()
    assert tokens.fixed is None
    fixed = settings_tokens(
        get_crawler(settings_dict={"REP_USER_AGENTS": ["a-bot", "b-bot"]}).settings
    )
    assert fixed.fixed == ("a-bot", "b-bot")
    assert fixed.for_header(b"Other/1") == ("a-bot", "b-bot")


def test_parser_built_from_fixed_tokens() -> None:
    # The middleware hands its robots_parsed receivers a parser built this way.
    rp = RobotParser(BODY, ("mybot-news",))
    assert rp.allowed("http://e/news-only", "Other/1") is False
    assert RobotParser(BODY, None, "MyBot/1").allowed("http://e/mybot-only", b"") is False


def test_version_is_the_installed_metadata() -> None:
    import importlib.metadata

    import scrapy_rep

    # pyproject.toml reads the version from scrapy_rep.__version__: one source.
    assert importlib.metadata.version("scrapy-rep") == scrapy_rep.__version__


def test_importing_core_does_not_import_scrapy() -> None:
    import subprocess
    import sys

    code = "import sys, scrapy_rep; scrapy_rep.RobotsTxt.parse(b''); print('scrapy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

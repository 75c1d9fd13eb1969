"""``ADDONS = {"scrapy_rep.Addon": 0}``: what it turns on, and that user settings still win.

Settings are checked on real Crawler objects (add-ons applied as in a crawl);
one real crawl per priority case runs ``scrapy runspider`` against a local HTTP server.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _servers import Reply, ScriptedServer
from scrapy import Spider
from scrapy.core.downloader.middleware import DownloaderMiddlewareManager
from scrapy.crawler import Crawler
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.test import get_crawler

import scrapy_rep
from scrapy_rep import Addon, RobotParser, RobotsTxtMiddleware
from scrapy_rep.crawl.addon import BUILTIN_MIDDLEWARE, MIDDLEWARE, component_path
from scrapy_rep.crawl.guard_middleware import GUARD, GUARD_ORDER

REPO = Path(__file__).resolve().parent.parent
OURS = component_path(MIDDLEWARE)
BUILTIN = component_path(BUILTIN_MIDDLEWARE)
ADDONS = {"ADDONS": {"scrapy_rep.Addon": 0}}


def crawler(spidercls: type[Spider] | None = None, **settings: Any) -> Crawler:
    return get_crawler(spidercls, {**ADDONS, **settings})


def middlewares(crawler: Crawler) -> list[str]:
    """The downloader middlewares this crawler would run, in order, as import paths."""
    return [
        component_path(m)
        for m in DownloaderMiddlewareManager._get_mwlist_from_settings(crawler.settings)
    ]


def test_addon_turns_everything_on() -> None:
    settings = crawler().settings
    assert settings.getbool("ROBOTSTXT_OBEY") is True
    assert settings["ROBOTSTXT_PARSER"] == "scrapy_rep.RobotParser"
    assert settings.getpriority("ROBOTSTXT_OBEY") == SETTINGS_PRIORITIES["addon"]
    enabled = middlewares(crawler())
    assert OURS in enabled
    assert BUILTIN not in enabled
    # Same place as Scrapy's own robots.txt middleware: before the others.
    without = middlewares(get_crawler(None, {"ROBOTSTXT_OBEY": True}))
    assert enabled.index(OURS) == without.index(BUILTIN)


def test_addon_as_class_key() -> None:
    settings = get_crawler(None, {"ADDONS": {Addon: 0}}).settings
    assert settings.getbool("ROBOTSTXT_OBEY") is True


def test_without_addon_nothing_changes() -> None:
    settings = get_crawler(None, {}).settings
    assert settings.getbool("ROBOTSTXT_OBEY") is False
    assert OURS not in middlewares(get_crawler(None, {}))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ROBOTSTXT_OBEY", False),
        ("ROBOTSTXT_PARSER", "scrapy.robotstxt.ProtegoRobotParser"),
    ],
)
def test_project_setting_beats_addon(name: str, value: Any) -> None:
    settings = crawler(**{name: value}).settings
    assert settings[name] == value
    assert settings.getpriority(name) == SETTINGS_PRIORITIES["project"]


@pytest.mark.parametrize(
    "parser", ["scrapy.robotstxt.ProtegoRobotParser", "scrapy.robotstxt.PythonRobotParser"]
)
def test_another_parser_set_with_the_addon_stops_the_crawl(parser: str) -> None:
    # Protego is Scrapy's default value: set by the project it still asks for another parser's
    # answers, which the add-on's middleware would not give.
    class Custom(Spider):
        name = "custom"
        custom_settings = {"ROBOTSTXT_PARSER": parser}  # noqa: RUF012

    for c in (crawler(ROBOTSTXT_PARSER=parser), crawler(Custom)):
        with pytest.raises(ValueError, match=f"ROBOTSTXT_PARSER='{parser}' is not used"):
            RobotsTxtMiddleware.from_crawler(c)


def test_obey_off_leaves_the_middlewares_alone() -> None:
    c = crawler(ROBOTSTXT_OBEY=False)
    assert OURS not in middlewares(c)
    assert c.settings.getdict("DOWNLOADER_MIDDLEWARES") == {}


def test_readable_repr_in_scrapys_enabled_addons_log() -> None:
    assert repr(Addon()) == f"scrapy_rep.Addon (scrapy-rep {scrapy_rep.__version__})"


def test_spider_custom_settings_beat_addon() -> None:
    class Custom(Spider):
        name = "custom"
        custom_settings = {"ROBOTSTXT_OBEY": False}  # noqa: RUF012

    assert crawler(Custom).settings.getbool("ROBOTSTXT_OBEY") is False


def test_user_middlewares_are_kept() -> None:
    user = {"scrapy.downloadermiddlewares.useragent.UserAgentMiddleware": None}
    c = crawler(DOWNLOADER_MIDDLEWARES=user)
    enabled = middlewares(c)
    assert "scrapy.downloadermiddlewares.useragent.UserAgentMiddleware" not in enabled
    assert OURS in enabled
    assert BUILTIN not in enabled


def test_user_order_for_our_middleware_wins() -> None:
    c = crawler(
        DOWNLOADER_MIDDLEWARES={"scrapy_rep.crawl.robotstxt_middleware.RobotsTxtMiddleware": 650}
    )
    components = c.settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert components == {
        "scrapy_rep.crawl.robotstxt_middleware.RobotsTxtMiddleware": 650,
        BUILTIN_MIDDLEWARE: None,
        GUARD: GUARD_ORDER,
    }
    enabled = middlewares(c)
    assert enabled.count(OURS) == 1
    assert enabled.index(OURS) > enabled.index(
        "scrapy.downloadermiddlewares.httpauth.HttpAuthMiddleware"
    )


def test_user_can_disable_our_middleware_and_keep_builtin() -> None:
    c = crawler(DOWNLOADER_MIDDLEWARES={MIDDLEWARE: None, BUILTIN_MIDDLEWARE: 100})
    enabled = middlewares(c)
    assert OURS not in enabled
    assert BUILTIN in enabled


# Startup checks of the robots.txt token


def test_addon_warns_about_browser_like_user_agent_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        c = crawler(USER_AGENT="Mozilla/5.0 (X11; Linux x86_64)")
        RobotParser.from_crawler(c, b"")
        RobotsTxtMiddleware.from_crawler(c)
    # Under the public logger name, once though three components looked (add-on, parser,
    # middleware).
    messages = [r.getMessage() for r in caplog.records if r.name == "scrapy_rep"]
    assert len(messages) == 1
    assert "set ROBOTSTXT_USER_AGENT = 'MyBot'" in messages[0]


def test_no_token_warning_when_not_obeying(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="scrapy_rep"):
        crawler(USER_AGENT="Mozilla/5.0", ROBOTSTXT_OBEY=False)
    assert not [r for r in caplog.records if r.name.startswith("scrapy_rep")]


# A real crawl with the add-on

_SPIDER = """
import scrapy

class PathsSpider(scrapy.Spider):
    name = "paths"

    def start_requests(self):
        for path in ("/", "/private/page.html", "/public.html"):
            yield scrapy.Request(self.base + path)

    async def start(self):
        for request in self.start_requests():
            yield request

    def parse(self, response):
        yield {"url": response.url}
"""

_ROBOTS = b"User-agent: addonbot\nDisallow: /private/\n\nUser-agent: *\nDisallow: /\n"


@pytest.fixture
def site(http_server: ScriptedServer) -> ScriptedServer:
    http_server.robots(_ROBOTS)
    http_server.route("/private/page.html", Reply(200, b"private"))
    http_server.route("/public.html", Reply(200, b"public"))
    return http_server


def run_spider(tmp_path: Path, base: str, *settings: str) -> tuple[list[str], str]:
    """The paths the spider fetched, and the crawl's log."""
    result = runspider(tmp_path, base, *settings)
    assert result.returncode == 0, result.stderr
    items = tmp_path / "items.json"
    fetched = sorted(item["url"].removeprefix(base) for item in json.loads(items.read_text()))
    return fetched, result.stderr


def runspider(tmp_path: Path, base: str, *settings: str) -> subprocess.CompletedProcess[str]:
    """``scrapy runspider`` of the paths spider with the add-on, its items to items.json."""
    spider = tmp_path / "paths_spider.py"
    spider.write_text(_SPIDER)
    items = tmp_path / "items.json"
    args = ["-s", 'ADDONS={"scrapy_rep.Addon": 0}', "-s", "USER_AGENT=addonbot/1.0"]
    for setting in settings:
        args += ["-s", setting]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "scrapy",
            "runspider",
            str(spider),
            "-a",
            f"base={base}",
            "-O",
            str(items),
            "-s",
            "TELNETCONSOLE_ENABLED=False",
            *args,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_crawl_with_addon_obeys_robots(tmp_path: Path, site: ScriptedServer) -> None:
    fetched, log = run_spider(tmp_path, site.origin)
    assert fetched == ["/", "/public.html"]
    assert "Enabled addons:\n[scrapy_rep.Addon (scrapy-rep " in log
    assert "/private/page.html" not in site.paths()
    assert site.count("/robots.txt") == 1


def test_crawl_user_setting_beats_addon(tmp_path: Path, site: ScriptedServer) -> None:
    fetched, log = run_spider(tmp_path, site.origin, "ROBOTSTXT_OBEY=False")
    assert fetched == ["/", "/private/page.html", "/public.html"]
    # As quiet as Scrapy's own middleware when obeying is off.
    assert [line for line in log.splitlines() if "WARNING" in line and "scrapy_rep" in line] == []
    assert site.count("/robots.txt") == 0


def test_crawl_with_protego_set_explicitly_stops_saying_what_to_change(
    tmp_path: Path, site: ScriptedServer
) -> None:
    parser = "scrapy.robotstxt.ProtegoRobotParser"
    result = runspider(tmp_path, site.origin, f"ROBOTSTXT_PARSER={parser}")
    assert result.returncode != 0
    assert (
        f"ERROR: ROBOTSTXT_PARSER='{parser}' is not used by scrapy_rep.RobotsTxtMiddleware, "
        "which applies Google's rules itself (it was set with -s on the command line): remove "
        "the setting or set it to 'scrapy_rep.RobotParser'"
    ) in result.stderr
    assert site.paths() == []

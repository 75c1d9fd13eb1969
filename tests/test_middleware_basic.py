"""RobotsTxtMiddleware in real crawls: rules, exemptions, settings (SPEC B, C3).

The other tests/test_middleware_*.py files import ``settings`` from here.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from _crawl import Start, run_crawl
from _servers import ScriptedServer
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from scrapy_rep.crawl._settings import MiddlewareSettings, SettingError
from scrapy_rep.crawl.guard_middleware import GUARD
from scrapy_rep.crawl.robotstxt_middleware import RobotsTxtMiddleware

MIDDLEWARE: dict[str, Any] = {
    "ROBOTSTXT_OBEY": True,
    "DOWNLOADER_MIDDLEWARES": {
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
        "scrapy_rep.RobotsTxtMiddleware": 100,
        "scrapy_rep.RobotsTxtGuard": 950,
    },
    "USER_AGENT": "TestBot/1.0 (+http://127.0.0.1)",
    # Tests script every answer, so Scrapy's own retries of pages are off (robots.txt
    # requests are never retried by it: dont_retry, test_middleware_status.py checks that).
    "RETRY_ENABLED": False,
}


def settings(**extra: Any) -> dict[str, Any]:
    return {**MIDDLEWARE, **extra}


def test_rules_allow_and_disallow(http_server: ScriptedServer) -> None:
    http_server.robots("User-agent: *\nDisallow: /page/private\n")
    urls = [http_server.url("/page/public"), http_server.url("/page/private")]
    result = run_crawl(urls, settings())
    assert http_server.count("/robots.txt") == 1
    assert http_server.count("/page/public") == 1
    assert http_server.count("/page/private") == 0
    assert result.responses == [http_server.url("/page/public")]
    assert result.stat("robotstxt/forbidden_before_schedule") == 1
    assert result.stat("robotstxt/request_count") == 1
    assert result.stat("robotstxt/response_count") == 1
    assert result.stat("robotstxt/response_status_count/200") == 1
    line = f"robots.txt of {http_server.origin}: 1 rule (status 200); next fetch in"
    assert line in result.log


def test_user_agent_group_is_obeyed(http_server: ScriptedServer) -> None:
    http_server.robots("User-agent: *\nDisallow: /\n\nUser-agent: testbot\nDisallow: /page/b\n")
    urls = [http_server.url("/page/a"), http_server.url("/page/b")]
    result = run_crawl(urls, settings())
    assert result.responses == [http_server.url("/page/a")]
    assert http_server.count("/page/b") == 0


def test_dont_obey_robotstxt_exempts_a_request(http_server: ScriptedServer) -> None:
    http_server.robots("User-agent: *\nDisallow: /page/\n")
    exempt = Start(http_server.url("/page/exempt"), meta={"dont_obey_robotstxt": True})
    result = run_crawl([exempt, http_server.url("/page/other")], settings())
    assert http_server.count("/page/exempt") == 1
    assert http_server.count("/page/other") == 0
    # The origin's first request waited for robots.txt at the final gate (the exempt one does
    # not count: it asks nothing of robots.txt).
    assert result.stat("robotstxt/forbidden") == 1
    assert result.stat("robotstxt/forbidden_before_download") == 1


def test_disallowed_requests_never_reach_the_scheduler(
    http_server: ScriptedServer, tmp_path: Any
) -> None:
    http_server.robots("User-agent: *\nDisallow: /page/no\n")
    http_server.links("/page/start", [f"/page/no{i}" for i in range(5)] + ["/page/yes"])
    jobdir = tmp_path / "job"
    result = run_crawl(
        [http_server.url("/page/start")], settings(JOBDIR=str(jobdir)), follow_links=True
    )
    assert sorted(result.responses) == sorted(
        [http_server.url("/page/start"), http_server.url("/page/yes")]
    )
    # Only the two allowed pages were enqueued (on disk, as JOBDIR makes it);
    # the five disallowed ones were dropped before reaching the scheduler.
    assert result.stat("scheduler/enqueued") == 2
    assert result.stat("scheduler/enqueued/disk") == 2
    assert result.stat("robotstxt/forbidden_before_schedule") == 5
    # Every drop is also in Scrapy's own stat, which dashboards watch.
    assert result.stat("robotstxt/forbidden") == 5
    assert result.stat("robotstxt/forbidden_before_download") == 0
    assert not any("/page/no" in p for p in http_server.paths())


def test_robotstxt_obey_false_disables_the_middleware(http_server: ScriptedServer) -> None:
    http_server.robots("User-agent: *\nDisallow: /\n")
    result = run_crawl([http_server.url("/page/a")], settings(ROBOTSTXT_OBEY=False))
    assert http_server.count("/robots.txt") == 0
    assert result.responses == [http_server.url("/page/a")]


#: A few of each kind (tests/test_settings_table.py checks every setting): a negative, inf (as
#: `-s` gives it), nan, a minimum above its maximum, a word where seconds are expected, an
#: unknown purpose, a store URL of an unknown kind, the guard missing.
BAD_SETTINGS = [
    pytest.param(*case, id=name)
    for name, case in zip(
        ["word", "purpose", "store", "no guard", "negative", "inf", "nan", "min above max"],
        [
            (
                {"REP_FETCH_TIMEOUT": "ten"},
                "REP_FETCH_TIMEOUT must be a number of seconds over 0, up to 86400, got 'ten'",
            ),
            (
                {"REP_USAGE_PURPOSES": ["nonsense-purpose"]},
                "REP_USAGE_PURPOSES: unknown usage label(s) 'nonsense-purpose': the labels of "
                "draft-ietf-aipref-vocab-08 are train-ai, ai-use, search (a list of them or a "
                "comma-separated string)",
            ),
            (
                {"REP_STORE": "mysql://x"},
                "REP_STORE='mysql://x' is not a store URL: use 'memory://', "
                "'sqlite:///path/to/robots.sqlite3' or 'redis://host:port/db'",
            ),
            (
                {"DOWNLOADER_MIDDLEWARES": {**MIDDLEWARE["DOWNLOADER_MIDDLEWARES"], GUARD: None}},
                f'add "{GUARD}": 950, to DOWNLOADER_MIDDLEWARES',
            ),
            (
                {"REP_HOLD_TIMEOUT": -1},
                "REP_HOLD_TIMEOUT must be a number of seconds from 0 to 31536000, got -1",
            ),
            (
                {"REP_CRAWL_DELAY": True, "REP_CRAWL_DELAY_MAX": "inf"},
                "REP_CRAWL_DELAY_MAX must be a number of seconds from 0 to 86400, got 'inf'",
            ),
            (
                {"REP_RETRY_MAX_DELAY": "nan"},
                "REP_RETRY_MAX_DELAY must be a number of seconds from 0 to 86400, got 'nan'",
            ),
            (
                {"REP_PAUSE_DELAY": 100, "REP_PAUSE_MAX_DELAY": 1},
                "REP_PAUSE_DELAY (100) must not exceed REP_PAUSE_MAX_DELAY (1)",
            ),
        ],
        strict=True,
    )
]


# Each is refused by RobotsTxtMiddleware.from_crawler, in one place (refused_at_startup): the
# user's first ERROR line says it all (setting, value, what is accepted). In-process, every
# case; what a real crawl shows of that path (the run stops before any request, exit status
# non-zero, that line first, before Scrapy's traceback) for one case of each step it takes
# there: a value, the wiring, the store.
@pytest.mark.parametrize(("bad", "message"), BAD_SETTINGS)
def test_bad_setting_is_refused_with_one_error_line_naming_it(
    bad: dict[str, Any], message: str, caplog: pytest.LogCaptureFixture
) -> None:
    crawler = get_crawler(settings_dict=settings(**bad))
    with pytest.raises(SettingError) as refused:
        RobotsTxtMiddleware.from_crawler(crawler)
    assert message in str(refused.value)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.name for r in errors] == ["scrapy_rep"]
    assert message in errors[0].getMessage()
    assert errors[0].getMessage().endswith(". The crawl stops before its first request.")


@pytest.mark.parametrize(
    ("bad", "message"),
    [case for case in BAD_SETTINGS if case.id in ("word", "no guard", "store")],
)
def test_bad_setting_fails_the_crawl_naming_it(
    http_server: ScriptedServer, bad: dict[str, Any], message: str
) -> None:
    result = run_crawl([http_server.url("/page/a")], settings(**bad), check=False)
    errors = [line for line in result.log.splitlines() if " ERROR: " in line]
    assert errors, result.log
    assert " [scrapy_rep] ERROR: " in errors[0] and message in errors[0]
    assert errors[0].endswith(". The crawl stops before its first request.")
    assert result.exit_code != 0
    assert http_server.paths() == []  # stopped at startup: not even robots.txt was asked for


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "REP_HOLD_TIMEOUT",
            -1,
            "REP_HOLD_TIMEOUT must be a number of seconds from 0 to 31536000, got -1",
        ),
        (
            "REP_CACHE_LIFETIME",
            "soon",
            "REP_CACHE_LIFETIME must be a number of seconds from 0 to 31536000, got 'soon'",
        ),
        ("REP_PARSED_CACHE_SIZE", 0, "REP_PARSED_CACHE_SIZE must be a whole number from 1 to"),
        ("REP_LEASE_TTL", 0, "REP_LEASE_TTL must be a number of seconds over 0"),
        ("REP_CRAWL_DELAY", "maybe", "REP_CRAWL_DELAY must be True or False"),
        ("REP_FETCH_TIMEOUT", 0, "REP_FETCH_TIMEOUT must be a number of seconds over 0"),
        ("REP_FETCH_META_KEYS", [1], "REP_FETCH_META_KEYS must be a list of meta keys"),
    ],
)
def test_settings_are_validated(name: str, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        MiddlewareSettings.from_settings(Settings({name: value}))


def test_min_lifetime_above_max_is_rejected() -> None:
    with pytest.raises(ValueError, match="REP_CACHE_MIN_LIFETIME"):
        MiddlewareSettings.from_settings(
            Settings({"REP_CACHE_MIN_LIFETIME": 10, "REP_CACHE_MAX_LIFETIME": 5})
        )


def test_default_settings() -> None:
    config = MiddlewareSettings.from_settings(Settings())
    assert config.limits.cache_lifetime == 86400
    assert config.limits.stale_max_age == 30 * 86400
    assert config.limits.unreachable_allow_after == 30 * 86400
    assert config.hold_timeout == 900
    assert config.crawl_delay is False
    assert config.fetch_timeout == 10
    assert config.fetch_meta_keys == ("download_slot", "bindaddress", "impersonate")
    named = MiddlewareSettings.from_settings(Settings({"REP_FETCH_META_KEYS": "a, b,a"}))
    assert named.fetch_meta_keys == ("a", "b")

"""The public names tools and spiders use: scrapy_rep.explain & co, running_middleware."""

from __future__ import annotations

import subprocess
import sys

import pytest
from scrapy.utils.test import get_crawler
from test_explain import ROBOTS, report

import scrapy_rep
from scrapy_rep import (
    RobotsTxt,
    describe_origin,
    explain,
    format_explanation,
    format_rule,
    running_middleware,
)


def test_explain_a_body_names_the_rule_as_written() -> None:
    result = explain(ROBOTS, "https://a.example/private/x", "MyBot")
    assert result["allowed"] is False
    assert result["rule"] == {
        "allow": False,
        "pattern": "/private/",
        "line": 4,
        "text": "Disallow: /private/",
    }
    assert result["tokens"] == ["MyBot"]
    assert result["source"] == {"given": True}
    assert format_rule(result["rule"]) == "line 4: Disallow: /private/"
    assert format_explanation(result).splitlines() == [
        "DISALLOWED  https://a.example/private/x",
        "  rule:   line 4: Disallow: /private/",
        "  group:  group for MyBot",
        "  tokens: MyBot",
        "  source: given by the caller",
    ]


def test_explain_a_parsed_robotstxt_with_preferred_tokens() -> None:
    robots = RobotsTxt.parse(ROBOTS.decode())
    result = explain(robots, "https://a.example/private/index.html", ["nobody", "other"])
    assert result["allowed"] is True
    assert result["group"] == "other"
    assert result["rule"]["pattern"] == "/private/index.html"
    # No token: only the * group applies (SPEC A3).
    assert explain(robots, "https://a.example/x")["group"] == "*"
    assert format_rule(None) == "no rule matched"


def test_explain_an_origin_report_and_describe_the_origin() -> None:
    down = report(outcome="unreachable", robots=None, status=503, error="HTTP 503")
    result = explain(down, "https://a.example/page", "MyBot")
    assert result["allowed"] is False
    assert result["decided_by"] == "outcome"
    assert result["source"]["status"] == 503
    assert describe_origin(down).startswith("https://a.example/robots.txt: unreachable")
    fetched = explain(report(), "https://a.example/private/x", "MyBot")
    assert fetched["rule"]["line"] == 4
    assert format_explanation([fetched, result]).count("https://a.example/robots.txt") == 2


def test_explain_refuses_what_it_cannot_read() -> None:
    with pytest.raises(TypeError, match=r"robots\.txt body"):
        explain(42, "https://a.example/")


def test_running_middleware_before_the_engine_exists_is_none() -> None:
    crawler = get_crawler(settings_dict={"ADDONS": {"scrapy_rep.Addon": 0}})
    assert running_middleware(crawler) is None


def test_public_names_are_exported_and_explain_needs_no_scrapy() -> None:
    assert scrapy_rep.running_middleware is running_middleware
    assert set(scrapy_rep.__all__) >= {"explain", "format_explanation", "running_middleware"}
    code = (
        "import sys, scrapy_rep; scrapy_rep.explain(b'User-agent: *', 'https://a/'); "
        "print(sorted(m for m in ('scrapy', 'twisted') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"

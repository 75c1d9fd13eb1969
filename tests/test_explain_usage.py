"""Explaining usage preferences: ``scrapy_rep.explain`` and ``scrapy robots`` (SPEC G)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from _servers import Reply, ScriptedServer
from test_explain import scrapy_robots

from scrapy_rep import explain, format_explanation
from scrapy_rep.core.explain_text import headline
from scrapy_rep.core.purpose import Purpose

ROBOTS = b"""\
User-agent: *
Disallow: /private/
Content-Usage: train-ai=y, search=y
Content-Usage: /page/no-train/ train-ai=n
Content-Signal: ai-input=no
"""


def test_explain_shows_each_label_with_the_lines_that_set_it() -> None:
    entry = explain(ROBOTS, "https://site.example/page/no-train/x", "MyBot", ["train-ai"])
    assert entry["usage"] == {
        "train-ai": {
            "value": False,
            "sources": ["robots.txt line 4: Content-Usage: /page/no-train/ train-ai=n"],
        },
        "ai-use": {"value": False, "sources": ["robots.txt line 5: Content-Signal: ai-input=no"]},
        "search": {"value": None, "sources": []},
    }
    assert entry["purpose"] == {
        "labels": ["train-ai"],
        "strict": False,
        "used": False,
        "reason": "train-ai disallowed by robots.txt line 4: Content-Usage: /page/no-train/ "
        "train-ai=n",
    }
    text = format_explanation(entry)
    assert "  usage:  train-ai: disallowed (robots.txt line 4:" in text
    assert "  purpose: train-ai: not used (train-ai disallowed by robots.txt line 4" in text


def test_explain_names_a_file_wide_statement() -> None:
    # SPEC E1: a line above the first group speaks for the whole file, against the group's
    # train-ai=y (line 5 now).
    body = b"Content-Signal: ai-train=no\n\n" + ROBOTS
    entry = explain(body, "https://site.example/page/x", "MyBot", ["train-ai"])
    assert entry["usage"]["train-ai"] == {
        "value": False,
        "sources": ["robots.txt line 1 (file-wide): Content-Signal: ai-train=no"],
    }
    assert entry["usage"]["search"] == {
        "value": True,
        "sources": ["robots.txt line 5: Content-Usage: train-ai=y, search=y"],
    }
    assert entry["purpose"]["used"] is False
    assert entry["purpose"]["reason"] == (
        "train-ai disallowed by robots.txt line 1 (file-wide): Content-Signal: ai-train=no"
    )
    text = format_explanation(entry)
    assert "train-ai: disallowed (robots.txt line 1 (file-wide): Content-Signal:" in text
    # A URL the file disallows: still no preference, file-wide or not.
    private = explain(body, "https://site.example/private/x", "MyBot", ["train-ai"])
    assert private["usage"]["train-ai"] == {"value": None, "sources": []}


def test_a_disallowed_url_carries_no_preference_and_is_not_used() -> None:
    entry = explain(ROBOTS, "https://site.example/private/x", "MyBot", ["search"])
    assert {label: found["value"] for label, found in entry["usage"].items()} == {
        "train-ai": None,
        "ai-use": None,
        "search": None,
    }
    assert entry["purpose"]["used"] is False and entry["purpose"]["reason"] is None
    assert "not fetched: robots.txt disallows it" in format_explanation(entry)


def test_strict_purpose_refuses_what_is_not_stated() -> None:
    from scrapy_rep.core.purpose import Purpose

    entry = explain(ROBOTS, "https://site.example/page/x", "MyBot", Purpose(("search",), True))
    assert entry["purpose"]["used"] is True  # search=y is stated
    entry = explain(
        b"User-agent: *\n", "https://site.example/x", "MyBot", Purpose(("search",), True)
    )
    assert entry["purpose"]["reason"] == "search not stated (REP_USAGE_STRICT = True)"


@pytest.mark.parametrize(
    ("url", "purpose", "verdict", "used"),
    [
        ("/page/x", (), "ALLOWED", True),
        ("/page/x", ("search",), "ALLOWED to crawl; search: allowed", True),
        ("/page/no-train/x", ("train-ai",), "ALLOWED to crawl; train-ai: NOT allowed", False),
        (
            "/page/no-train/x",
            ("search", "train-ai"),
            # The path's line says nothing of search (the longest match speaks alone).
            "ALLOWED to crawl; search: allowed (not stated); train-ai: NOT allowed",
            False,
        ),
        ("/private/x", ("train-ai",), "DISALLOWED", False),
        ("/private/x", (), "DISALLOWED", False),
    ],
)
def test_the_headline_says_what_the_exit_status_counts(
    url: str, purpose: tuple[str, ...], verdict: str, used: bool
) -> None:
    entry = explain(ROBOTS, f"https://s.example{url}", "MyBot", list(purpose))
    assert headline(entry) == (verdict, used)
    assert format_explanation(entry).splitlines()[0] == f"{verdict}  https://s.example{url}"


def test_the_headline_of_a_label_nothing_states() -> None:
    # Nothing states search here: used, unless REP_USAGE_STRICT refuses what is not stated.
    body = b"User-agent: *\nAllow: /\n"
    loose = explain(body, "https://s.example/x", "MyBot", ["search"])
    assert headline(loose) == ("ALLOWED to crawl; search: allowed (not stated)", True)
    strict = explain(body, "https://s.example/x", "MyBot", Purpose(("search",), True))
    assert headline(strict) == (
        "ALLOWED to crawl; search: NOT allowed (not stated; REP_USAGE_STRICT)",
        False,
    )


def _page_entry(gate: bool | None, page: bool | None) -> dict[str, Any]:
    """An online explanation with --page: the gate's and the page's train-ai preference."""

    def usage(value: bool | None) -> dict[str, Any]:
        return {"train-ai": {"value": value, "sources": []}}

    def verdict(value: bool | None) -> dict[str, Any]:
        return {"labels": ["train-ai"], "strict": False, "used": value is not False}

    return {
        "url": "https://s.example/x",
        "allowed": True,
        "usage": usage(gate),
        "purpose": verdict(gate),
        "page": {"url": "https://s.example/x", "usage": usage(page), "purpose": verdict(page)},
    }


def test_the_headline_says_when_the_page_refuses_what_the_gate_let_through() -> None:
    assert headline(_page_entry(None, False)) == (
        "ALLOWED to crawl; train-ai: NOT allowed by the page",
        False,
    )
    # The gate refuses before the page is fetched: the page's own answer does not count.
    assert headline(_page_entry(False, True)) == ("ALLOWED to crawl; train-ai: NOT allowed", False)
    assert headline(_page_entry(True, True)) == ("ALLOWED to crawl; train-ai: allowed", True)


def test_command_headline_and_exit_status_agree(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_bytes(ROBOTS)
    for url, purpose, first, status in (
        ("/page/no-train/a", "train-ai", "ALLOWED to crawl; train-ai: NOT allowed", 1),
        ("/page/a", "train-ai", "ALLOWED to crawl; train-ai: allowed", 0),
        ("/page/a", "", "ALLOWED", 0),
        ("/private/a", "train-ai", "DISALLOWED", 1),
    ):
        result = scrapy_robots(
            "--file", str(robots), "--purpose", purpose, f"https://s.example{url}", cwd=tmp_path
        )
        assert result.stdout.splitlines()[0] == f"{first}  https://s.example{url}", result.stdout
        assert result.returncode == status, (url, purpose, result.stderr)


def test_command_usage_line_lists_every_option(tmp_path: Path) -> None:
    result = scrapy_robots("-h", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    usage = result.stdout.split("Usage\n=====\n", 1)[1].split("\n\n", 1)[0]
    options = result.stdout.split("\nOptions\n=======\n", 1)[1].split("\nGlobal Options", 1)[0]
    flags = set(re.findall(r"^  (--[a-z-]+)", options, re.M))
    assert flags == {"--user-agent", "--file", "--page", "--purpose", "--json"}
    for flag in flags:
        assert f"[{flag}" in usage, (flag, usage)
    assert "refused for the purpose" in result.stdout  # the exit status, in the description


def test_command_with_a_file_and_a_purpose(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_bytes(ROBOTS)
    used = scrapy_robots(
        "--file", str(robots), "--purpose", "train-ai", "https://s.example/page/a", cwd=tmp_path
    )
    assert used.returncode == 0, used.stderr
    assert "purpose: train-ai: its content would be used" in used.stdout
    refused = scrapy_robots(
        "--file",
        str(robots),
        "--purpose",
        "train-ai",
        "--json",
        "https://s.example/page/no-train/a",
        cwd=tmp_path,
    )
    assert refused.returncode == 1  # the crawl would drop it
    (entry,) = json.loads(refused.stdout)
    assert entry["allowed"] is True and entry["purpose"]["used"] is False
    bad = scrapy_robots(
        "--file", str(robots), "--purpose", "ai-train", "https://s.example/", cwd=tmp_path
    )
    assert bad.returncode == 2
    assert "--purpose: unknown usage label(s) 'ai-train'" in bad.stderr
    assert "train-ai, ai-use, search" in bad.stderr


def test_command_online_with_page_headers_and_tdmrep(
    tmp_path: Path, http_server: ScriptedServer
) -> None:
    site = http_server
    site.robots("User-agent: *\nContent-Usage: search=y\n")
    site.route(
        "/.well-known/tdmrep.json",
        Reply.text(json.dumps([{"location": "/page/reserved/*", "tdm-reservation": 1}])),
    )
    site.route("/page/hdr", Reply.text("x", headers={"Content-Usage": "ai-use=n"}))
    result = scrapy_robots(
        "--page",
        "--json",
        "--purpose",
        "train-ai,ai-use",
        site.url("/page/reserved/a"),
        site.url("/page/hdr"),
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr
    reserved, header = json.loads(result.stdout)
    assert reserved["usage"]["train-ai"] == {
        "value": False,
        "sources": ["tdmrep.json rule 1: location /page/reserved/*, tdm-reservation 1"],
    }
    assert reserved["purpose"]["used"] is False
    assert header["purpose"]["used"] is True  # robots.txt and tdmrep.json refuse nothing
    assert header["page"]["usage"]["ai-use"] == {
        "value": False,
        "sources": ["header Content-Usage: ai-use=n"],
    }
    assert header["page"]["usage"]["search"]["value"] is True
    assert header["page"]["purpose"]["used"] is False
    # The crawl downloads it and drops its items: the headline says so, and the exit status.
    assert headline(header) == (
        "ALLOWED to crawl; train-ai: allowed (not stated); ai-use: NOT allowed by the page",
        False,
    )
    assert site.count("/.well-known/tdmrep.json") == 1


def test_command_online_shows_the_gates_and_the_page_levels_answers(
    tmp_path: Path, http_server: ScriptedServer
) -> None:
    # tdmrep.json reserves the page; the page's own meta tag says 0, which supersedes the file
    # (TDMRep): the crawl's gate refuses it (it knows only the file), its page level, given the
    # page, allows it. scrapy robots --page shows both, as the crawl would decide each.
    site = http_server
    site.robots("User-agent: *\nAllow: /\n")
    site.route(
        "/.well-known/tdmrep.json",
        Reply.text(json.dumps([{"location": "/page/reserved/*", "tdm-reservation": 1}])),
    )
    page = b'<html><head><meta name="tdm-reservation" content="0"></head></html>'
    site.route("/page/reserved/a", Reply(200, page, headers={"Content-Type": "text/html"}))
    result = scrapy_robots(
        "--page", "--json", "--purpose", "train-ai", site.url("/page/reserved/a"), cwd=tmp_path
    )
    assert result.returncode == 1, result.stderr
    (entry,) = json.loads(result.stdout)
    assert entry["usage"]["train-ai"]["value"] is False
    assert entry["purpose"]["used"] is False
    assert entry["page"]["usage"]["train-ai"] == {
        "value": True,
        "sources": ['<meta name="tdm-reservation" content="0">'],
    }
    assert entry["page"]["purpose"]["used"] is True
    assert headline(entry) == ("ALLOWED to crawl; train-ai: NOT allowed", False)
    assert entry["documents"][0]["name"] == "tdmrep.json"

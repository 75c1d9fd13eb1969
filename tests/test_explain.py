"""Explanations (scrapy_rep.core.explain) and ``python -m scrapy_rep`` for offline files."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _servers import ScriptedServer

from scrapy_rep import RobotsTxt
from scrapy_rep.__main__ import main, parse_tokens
from scrapy_rep.core.explain import (
    describe_error,
    explain_report,
    explain_rules,
    line_texts,
    origin_source,
)
from scrapy_rep.core.explain_text import format_explanation, format_rule, format_source
from scrapy_rep.crawl.robotstxt_middleware import OriginReport

ROBOTS = b"""\
# test file
User-agent: MyBot
User-agent: other
Disallow: /private/
Allow: /private/index.html
Disallow: /*.pdf$

User-agent: *
Disallow: /
"""

SOURCE = {"file": "robots.txt"}


def entry(url: str, tokens: list[str], body: bytes = ROBOTS) -> dict[str, Any]:
    return explain_rules(RobotsTxt.parse(body), url, tokens, SOURCE, line_texts(body))


def test_disallow_names_rule_line_and_group() -> None:
    result = entry("https://a.example/private/payroll.html", ["MyBot"])
    assert result["allowed"] is False
    assert result["rule"] == {
        "allow": False,
        "pattern": "/private/",
        "line": 4,
        "text": "Disallow: /private/",
    }
    assert result["group"] == "MyBot"
    assert result["reason"] == "group for MyBot"


def test_index_html_allow_also_allows_the_directory() -> None:
    result = entry("https://a.example/private/", ["MyBot"])
    assert result["allowed"] is True
    assert result["rule"]["line"] == 5
    assert result["rule"]["pattern"] == "/private/$"
    assert result["rule"]["text"] == "Allow: /private/index.html"
    # Said as Google's rule, not as if /private/index.html matched /private/.
    assert format_rule(result["rule"]) == (
        "line 5: Allow: /private/index.html, which Google also reads as Allow: /private/$"
    )
    rebuilt = explain_rules(
        RobotsTxt.parse(ROBOTS), "https://a.example/private/", ["MyBot"], SOURCE
    )
    assert format_rule(rebuilt["rule"]).endswith("which Google also reads as Allow: /private/$")
    literal = entry("https://a.example/d/", ["MyBot"], b"User-agent: *\nDisallow: /\nAllow: /d/$\n")
    assert format_rule(literal["rule"]) == "line 3: Allow: /d/$"


def test_dollar_anchor_only_at_the_end() -> None:
    assert entry("https://a.example/x.pdf", ["MyBot"])["allowed"] is False
    assert entry("https://a.example/x.pdf?dl=1", ["MyBot"])["allowed"] is True


def test_star_group_used_when_no_group_names_the_crawler() -> None:
    result = entry("https://a.example/page", ["Unknown"])
    assert result["allowed"] is False
    assert result["group"] == "*"
    assert result["reason"] == "no group for Unknown; used *"
    assert result["rule"]["line"] == 9


def test_preference_list_falls_back_to_second_token() -> None:
    result = entry("https://a.example/private/x", ["mybot-news", "other"])
    assert result["group"] == "other"
    assert result["allowed"] is False


def test_no_rule_matched_is_allowed_and_says_so() -> None:
    result = entry("https://a.example/public", ["MyBot"])
    assert result["allowed"] is True
    assert result["rule"] is None
    assert "rule:   no rule matched" in format_explanation([result])


def test_no_group_at_all() -> None:
    body = b"User-agent: somebot\nDisallow: /\n"
    result = entry("https://a.example/x", ["MyBot"], body)
    assert result["allowed"] is True
    assert result["group"] is None
    assert "no * group" in result["reason"]


def test_text_form() -> None:
    text = format_explanation([entry("https://a.example/private/x", ["MyBot"])])
    assert text.splitlines() == [
        "DISALLOWED  https://a.example/private/x",
        "  rule:   line 4: Disallow: /private/",
        "  group:  group for MyBot",
        "  tokens: MyBot",
        "  source: local file robots.txt",
    ]


def report(**fields: Any) -> OriginReport:
    defaults: dict[str, Any] = {
        "origin": "https://a.example",
        "outcome": "ok",
        "robots": RobotsTxt.parse(ROBOTS),
        "status": 200,
        "redirects": [],
        "truncated": False,
        "fetched_at": 1000.0,
        "expires_at": 87400.0,
        "error": None,
    }
    return OriginReport(**{**defaults, **fields})


def test_fetched_robots_outcome_is_described() -> None:
    fetched = report(
        redirects=["https://b.example/r1", "https://b.example/robots.txt"],
        truncated=True,
        crawl_delay=2.5,
    )
    result = explain_report(fetched, "https://a.example/private/x", ["MyBot"])
    assert result["allowed"] is False
    assert result["rule"]["line"] == 4
    assert result["source"]["status"] == 200
    assert result["rule"]["text"] == "Disallow: /private/"  # rebuilt from the parsed rules
    assert format_source(result["source"]) == (
        "https://a.example/robots.txt: fetched, HTTP 200, "
        "2 redirects (to https://b.example/robots.txt), truncated at 500 KiB, "
        "lifetime 1d (until 1970-01-02 00:16:40 UTC), Crawl-delay 2.5s"
    )
    assert json.loads(json.dumps(result))["source"]["redirects"][0] == "https://b.example/r1"


def test_no_robots_txt_allows_everything() -> None:
    missing = report(outcome="no_robots", robots=None, status=404, expires_at=4600.0)
    result = explain_report(missing, "https://a.example/anything", ["MyBot"])
    assert result["allowed"] is True
    assert result["reason"] == "no robots.txt: everything allowed"
    source = format_source(result["source"])
    assert "no robots.txt, everything allowed, HTTP 404" in source
    assert "lifetime 1h" in source


def test_unreachable_origin_is_disallowed() -> None:
    down = report(
        outcome="unreachable",
        robots=None,
        status=503,
        fetched_at=None,
        expires_at=None,
        error="HTTP 503",
    )
    result = explain_report(down, "https://a.example/page", ["MyBot"])
    assert result["allowed"] is False
    assert result["decided_by"] == "outcome"
    assert format_explanation([result]).splitlines()[1] == (
        "  why:    robots.txt unreachable: the whole origin is disallowed for now "
        "(a crawl holds its requests until robots.txt can be fetched)"
    )
    assert format_source(origin_source(down)).endswith("HTTP 503, error: HTTP 503")


def test_a_failing_origin_gives_its_failures_and_next_attempt_not_a_lifetime() -> None:
    down = report(
        outcome="unreachable",
        robots=None,
        status=None,
        fetched_at=1000.0,
        expires_at=1060.0,
        error="connection refused",
        failures=2,
    )
    assert format_source(origin_source(down)) == (
        "https://a.example/robots.txt: unreachable, the whole origin is disallowed for now, "
        "2 failed attempts in a row, next attempt at 1970-01-01 00:17:40 UTC, "
        "error: connection refused"
    )
    # A good copy served while the refresh fails: the same (its lifetime is over).
    stale = report(stale=True, error="HTTP 500", status=200, failures=1, expires_at=90000.0)
    source = format_source(origin_source(stale))
    assert "stale copy in use (refresh failing), 1 failed attempt in a row, next attempt at" in (
        source
    )
    assert "lifetime" not in source


def test_unreachable_too_long_allows_everything() -> None:
    given_up = report(outcome="allow_all", robots=None, status=None)
    result = explain_report(given_up, "https://a.example/page", ["MyBot"])
    assert result["allowed"] is True
    assert "REP_UNREACHABLE_ALLOW_AFTER" in result["reason"]


def test_stale_copy_is_flagged() -> None:
    stale = report(stale=True, error="HTTP 500")
    result = explain_report(stale, "https://a.example/public", ["MyBot"])
    assert result["allowed"] is True
    assert "stale copy in use" in format_source(result["source"])


def test_unresolved_url_is_reported_as_error() -> None:
    result = describe_error("http://d/x", ["MyBot"], "boom")
    assert result["allowed"] is False
    assert "boom" in format_explanation([result])


@pytest.mark.parametrize(
    ("value", "tokens"),
    [
        ("MyBot", ["MyBot"]),
        ("MyBot/1.0 (+https://x)", ["MyBot"]),
        ("mybot-news, mybot", ["mybot-news", "mybot"]),
        ("*", []),
        ("Mozilla", ["Mozilla"]),  # typed as the token itself: meant
    ],
)
def test_cli_tokens(value: str, tokens: list[str]) -> None:
    assert parse_tokens(value) == tokens


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "My Bot/1.0",
            "'My Bot/1.0': robots.txt reads it as 'My' (a token is letters, '-' and "
            "'_'); give the token your crawler answers to, e.g. MyBot",
        ),
        ("bot2", "'bot2': robots.txt reads it as 'bot'"),
        ("2bot", "'2bot': robots.txt finds no product token in it"),
        ("mybot,news bot", "'news bot': robots.txt reads it as 'news'"),
        (
            "Mozilla/5.0 (compatible; MyBot/1.0)",
            "'Mozilla/5.0 (compatible; MyBot/1.0)': robots.txt reads it as 'Mozilla' (a "
            "browser's token, which almost no site names); give the token your crawler "
            "answers to, e.g. MyBot",
        ),
    ],
)
def test_cli_tokens_refuse_what_robots_txt_would_misread(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        parse_tokens(value)


@pytest.fixture
def robots_file(tmp_path: Path) -> Path:
    path = tmp_path / "robots.txt"
    path.write_bytes(ROBOTS)
    return path


def test_main_exit_status_all_allowed(
    robots_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(robots_file), "MyBot", "http://a/", "http://a/private/"]) == 0
    out = capsys.readouterr().out
    assert out.count("ALLOWED  ") == 2
    assert "DISALLOWED" not in out


def test_main_exit_status_some_disallowed_json(
    robots_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main([str(robots_file), "MyBot", "http://a/", "http://a/private/x", "--json"])
    assert status == 1
    entries = json.loads(capsys.readouterr().out)
    assert [e["allowed"] for e in entries] == [True, False]
    assert entries[1]["rule"]["line"] == 4
    assert entries[1]["source"] == {"file": str(robots_file)}


def _run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy_rep", *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_python_m_exit_codes(robots_file: Path) -> None:
    allowed = _run(str(robots_file), "MyBot", "http://a/")
    assert allowed.returncode == 0, allowed.stderr
    disallowed = _run(str(robots_file), "Unknown", "http://a/")
    assert disallowed.returncode == 1
    assert b"no group for Unknown; used *" in disallowed.stdout
    missing_url = _run(str(robots_file), "MyBot")
    assert missing_url.returncode == 2
    assert b"usage:" in missing_url.stderr
    missing_file = _run(str(robots_file) + ".nope", "MyBot", "http://a/")
    assert missing_file.returncode == 2
    assert b"cannot read" in missing_file.stderr


def test_python_m_reads_stdin() -> None:
    result = _run("-", "MyBot", "http://a/x.pdf", "--json", stdin=ROBOTS)
    assert result.returncode == 1
    assert json.loads(result.stdout)[0]["rule"]["text"] == "Disallow: /*.pdf$"


def test_main_text_names_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(ROBOTS)))
    assert main(["-", "MyBot", "http://a/x.pdf"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "  source: stdin"


def test_main_refuses_a_misread_token(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["-", "My Bot/1.0", "http://a/"])
    assert exited.value.code == 2
    assert "token 'My Bot/1.0': robots.txt reads it as 'My'" in capsys.readouterr().err


# scrapy robots: the Scrapy command (subprocesses, as a user runs it)

REPO = Path(__file__).resolve().parent.parent


def scrapy_robots(
    *args: str, cwd: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    # The tests folder too: settings may name its modules (a DNS resolver, a usage source).
    path = [str(REPO), str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "robots", *args],
        cwd=cwd,
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_command_file_mode_text(robots_file: Path, tmp_path: Path) -> None:
    result = scrapy_robots(
        "--file", str(robots_file), "--user-agent", "MyBot", "http://a/private/x", cwd=tmp_path
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        "DISALLOWED  http://a/private/x",
        "  rule:   line 4: Disallow: /private/",
        "  group:  group for MyBot",
        "  tokens: MyBot",
        f"  source: local file {robots_file}",
    ]


def test_command_reads_stdin(tmp_path: Path) -> None:
    result = scrapy_robots(
        "--file", "-", "--user-agent", "*", "http://a/x", cwd=tmp_path, stdin=ROBOTS.decode()
    )
    assert result.returncode == 1, result.stderr
    assert "  group:  no token given; used *" in result.stdout.splitlines()
    assert result.stdout.splitlines()[-2:] == [
        "  tokens: (none: only * applies)",
        "  source: stdin",
    ]


def test_command_file_mode_json_default_token_outside_project(
    robots_file: Path, tmp_path: Path
) -> None:
    result = scrapy_robots("--file", str(robots_file), "--json", "http://a/", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    [only] = json.loads(result.stdout)
    # Outside a project the default USER_AGENT "Scrapy/x.y (+https://scrapy.org)" → "Scrapy".
    assert only["tokens"] == ["Scrapy"]
    assert only["reason"] == "no group for Scrapy; used *"


def test_command_usage_errors(tmp_path: Path, robots_file: Path) -> None:
    assert scrapy_robots(cwd=tmp_path).returncode == 2
    assert scrapy_robots("not-a-url", cwd=tmp_path).returncode == 2
    missing = scrapy_robots("--file", str(tmp_path / "nope.txt"), "http://a/", cwd=tmp_path)
    assert missing.returncode == 2
    assert "cannot read" in missing.stderr
    misread = scrapy_robots(
        "--file", str(robots_file), "--user-agent", "My Bot/1.0", "http://a/", cwd=tmp_path
    )
    assert misread.returncode == 2
    assert "--user-agent 'My Bot/1.0': robots.txt reads it as 'My'" in misread.stderr
    assert "e.g. MyBot" in misread.stderr


def test_command_names_an_unknown_option_and_refuses_a_browser_user_agent(
    tmp_path: Path, robots_file: Path
) -> None:
    unknown = scrapy_robots("--file", str(robots_file), "-u", "MyBot", "http://a/", cwd=tmp_path)
    assert unknown.returncode == 2
    assert "unrecognized option: '-u'" in unknown.stderr
    assert "URL" not in unknown.stderr.splitlines()[-1]  # not "not an http(s) or ftp URL"
    browser = "Mozilla/5.0 (compatible; MyBot/1.0)"
    refused = scrapy_robots(
        "--file", str(robots_file), "--user-agent", browser, "http://a/", cwd=tmp_path
    )
    assert refused.returncode == 2, refused.stdout
    assert f"--user-agent {browser!r}: robots.txt reads it as 'Mozilla'" in refused.stderr
    assert "e.g. MyBot" in refused.stderr


def test_command_fetches_through_scrapy(
    tmp_path: Path, http_server: ScriptedServer, http_server2: ScriptedServer
) -> None:
    site, bare = http_server, http_server2
    site.robots(ROBOTS)
    result = scrapy_robots(
        "--user-agent",
        "MyBot",
        "--json",
        f"{site.origin}/private/x",
        f"{site.origin}/private/",
        f"{bare.origin}/anything",
        cwd=tmp_path,
    )
    assert site.paths() == ["/robots.txt"]
    assert bare.paths() == ["/robots.txt"]
    assert result.returncode == 1, result.stderr
    disallowed, index, no_robots = json.loads(result.stdout)
    assert disallowed["allowed"] is False
    assert disallowed["rule"]["line"] == 4
    assert disallowed["group"] == "MyBot"
    assert disallowed["source"]["origin"].rstrip("/") == site.origin
    assert disallowed["source"]["status"] == 200
    assert disallowed["source"]["expires_at"] > disallowed["source"]["fetched_at"]
    assert index["allowed"] is True
    assert index["rule"]["pattern"] == "/private/$"
    assert index["rule"]["text"] == "Allow: /private/index.html"
    assert no_robots["decided_by"] == "outcome"
    assert no_robots["allowed"] is True
    assert no_robots["source"]["status"] == 404


def test_command_online_text(tmp_path: Path, http_server: ScriptedServer) -> None:
    site = http_server
    site.robots(ROBOTS)
    result = scrapy_robots("--user-agent", "Unknown", f"{site.origin}/x", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"DISALLOWED  {site.origin}/x"
    assert lines[1] == "  rule:   line 9: Disallow: /"
    assert lines[2] == "  group:  no group for Unknown; used *"
    assert lines[4].startswith(f"  source: {site.origin}/robots.txt: ")
    assert "HTTP 200" in lines[4] and "lifetime" in lines[4]


def test_command_enables_the_middleware_even_when_obey_is_off(
    tmp_path: Path, http_server: ScriptedServer
) -> None:
    site = http_server
    site.robots(ROBOTS)
    result = scrapy_robots(
        "-s",
        "ROBOTSTXT_OBEY=False",
        "--user-agent",
        "MyBot",
        f"{site.origin}/private/x",
        cwd=tmp_path,
    )
    assert site.paths() == ["/robots.txt"]
    assert result.returncode == 1, result.stderr
    assert "note: ROBOTSTXT_OBEY = False in your settings" in result.stderr
    assert "  rule:   line 4: Disallow: /private/" in result.stdout


_DEFAULT_AGENT_WARNING = "WARNING: USER_AGENT 'Scrapy/"


def test_command_online_warns_of_the_default_user_agent_once(
    tmp_path: Path, http_server: ScriptedServer
) -> None:
    http_server.robots(ROBOTS)
    result = scrapy_robots(f"{http_server.origin}/x", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr.count(_DEFAULT_AGENT_WARNING) == 1, result.stderr


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--purpose", "bogus"], "--purpose: unknown usage label(s) 'bogus'"),
        (["-s", "REP_USAGE_PURPOSES=bogus"], "REP_USAGE_PURPOSES: unknown usage label(s)"),
        (["--file", "nope.txt"], "cannot read nope.txt"),
        (["--page", "--file", "-"], "--page fetches the pages: it cannot be used with --file"),
    ],
)
def test_command_usage_error_comes_alone_before_any_warning(
    tmp_path: Path, args: list[str], error: str
) -> None:
    # Scrapy's default USER_AGENT would be warned about, but a usage error comes first, alone.
    result = scrapy_robots(*args, "http://127.0.0.1:9/x", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("Usage\n"), result.stderr
    assert f": error: {error}" in result.stderr
    assert "WARNING" not in result.stderr


def test_command_file_mode_warns_of_the_default_user_agent_once(
    robots_file: Path, tmp_path: Path
) -> None:
    result = scrapy_robots("--file", str(robots_file), "http://a/", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr.count(_DEFAULT_AGENT_WARNING) == 1, result.stderr


def test_command_on_a_down_site_says_unreachable_without_crawl_warnings(
    tmp_path: Path, unused_port: int
) -> None:
    # Nothing is crawled, so nothing is "held": the crawl's hold warning would mislead; the
    # failure reads as words.
    result = scrapy_robots(
        "--user-agent", "MyBot", f"http://127.0.0.1:{unused_port}/x", cwd=tmp_path
    )
    assert f"robots.txt of http://127.0.0.1:{unused_port} is unreachable (connection refused)" in (
        result.stderr
    )
    assert "holding" not in result.stderr.lower()
    assert "Waiting for the robots.txt" not in result.stderr


def test_offline_checker_does_not_import_scrapy() -> None:
    code = (
        "import sys, scrapy_rep.__main__, scrapy_rep.core.explain, scrapy_rep.crawl._tokens; "
        "print(sorted(m for m in ('scrapy', 'twisted') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"

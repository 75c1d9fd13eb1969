"""``cd example_project && scrapy crawl demo``: the README's first command, run for real."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _servers import ScriptedServer

REPO = Path(__file__).resolve().parent.parent
PROJECT = REPO / "example_project"


def scrapy(*args: str, cwd: Path = PROJECT) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def demo() -> subprocess.CompletedProcess[str]:
    return scrapy("crawl", "demo")


def _section(report: str, title: str) -> str:
    match = re.search(rf"^{re.escape(title)}.*?(?=^\S|\Z)", report, re.M | re.S)
    assert match is not None, f"no section {title!r} in:\n{report}"
    return match.group()


def _paths(section: str) -> list[str]:
    return re.findall(r"^  http://127\.0\.0\.1:\d+(/\S*)(?:  \(allowed by .*\))?$", section, re.M)


def test_demo_crawl_succeeds_offline(demo: subprocess.CompletedProcess[str]) -> None:
    assert demo.returncode == 0, demo.stderr
    assert "=== scrapy-rep demo report ===" in demo.stdout
    assert "Crawl closed: finished. robots.txt obeyed as: scrapy-rep-demo" in demo.stdout
    assert "Traceback" not in demo.stderr


def test_demo_report_pages_fetched(demo: subprocess.CompletedProcess[str]) -> None:
    fetched = _section(demo.stdout, "Pages fetched: ")
    assert fetched.startswith("Pages fetched: 11\n")
    assert sorted(_paths(fetched)) == sorted(
        [
            "/",  # main
            "/blog/",
            "/blog/first-post.html",  # otherbot's group disallows /blog/: not ours
            "/private/",  # Allow: /private/index.html also allows /private/
            "/private/index.html",
            "/files/report.pdf?download=1",  # '$' anchors: a query is not the end
            "/archive/2024/final.html",
            "/",  # docs
            "/guide.html",
            "/",  # plain (no robots.txt)
            "/about.html",
        ]
    )
    assert re.search(
        r"^  http://\S+/private/  \(allowed by line 4: Allow: /private/index.html, "
        r"which Google also reads as Allow: /private/\$\)$",
        fetched,
        re.M,
    )


def test_demo_report_dropped_before_scheduling_with_rule_and_line(
    demo: subprocess.CompletedProcess[str],
) -> None:
    dropped = _section(demo.stdout, "Dropped before scheduling")
    assert dropped.startswith("Dropped before scheduling (robots.txt): 4\n")
    reasons = dict(re.findall(r"^  http://127\.0\.0\.1:\d+(/\S*)\n      (.*)$", dropped, re.M))
    assert reasons == {
        "/private/salaries.html": "line 3: Disallow: /private/ (group for scrapy-rep-demo)",
        "/files/report.pdf": "line 5: Disallow: /*.pdf$ (group for scrapy-rep-demo)",
        "/archive/2024/drafts/plan.html": (
            "line 6: Disallow: /archive/*/drafts/ (group for scrapy-rep-demo)"
        ),
        "/tmp/cache.html": "line 2: Disallow: /tmp/ (no group for scrapy-rep-demo; used *)",
    }
    assert "Dropped at the downloader" not in demo.stdout
    assert "Not fetched for other reasons" not in demo.stdout


def test_demo_report_robots_outcome_per_origin(demo: subprocess.CompletedProcess[str]) -> None:
    origins = _section(demo.stdout, "robots.txt per origin:").splitlines()[1:]
    origins = [line.strip() for line in origins if line.strip()]
    assert len(origins) == 3
    main, docs, plain = origins
    assert "HTTP 200" in main and "6 rules" in main and "lifetime" in main
    assert "HTTP 200" in docs and "1 rule," in docs + ","
    assert "HTTP 404" in plain


def test_demo_report_stats(demo: subprocess.CompletedProcess[str]) -> None:
    stats = _section(demo.stdout, "robots.txt stats:")
    assert "robotstxt/request_count: 3" in stats
    assert "robotstxt/response_status_count/404: 1" in stats


def test_robots_command_inside_project_uses_project_token(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_bytes(b"User-agent: scrapy-rep-demo\nDisallow: /private/\n")
    result = scrapy("robots", "--file", str(robots), "http://a.example/private/x")
    assert result.returncode == 1, result.stderr
    assert "group:  group for scrapy-rep-demo" in result.stdout
    assert "line 2: Disallow: /private/" in result.stdout


def _count(report: str, title: str) -> int:
    match = re.search(rf"^{re.escape(title)}: (\d+)$", report, re.M)
    return int(match.group(1)) if match else 0


def test_demo_with_start_url_crawls_that_site_only(http_server: ScriptedServer) -> None:
    # The "real site" path (-a start_url=...), on a local server: no demo site is
    # started, links stay on the start host, CLOSESPIDER_PAGECOUNT bounds the crawl.
    site = http_server
    site.robots("User-agent: scrapy-rep-demo\nDisallow: /page/secret\n")
    site.links("/", ["/page/secret", "https://elsewhere.invalid/", "/gone", "/page/0"])
    for i in range(30):  # a chain, so the page count really stops the crawl
        site.links(f"/page/{i}", [f"/page/{i + 1}"])
    result = scrapy(
        "crawl",
        "demo",
        "-a",
        f"start_url={site.url('/')}",
        "-s",
        "CLOSESPIDER_PAGECOUNT=5",
        "-s",
        "DOWNLOAD_DELAY=0",
    )
    seen = site.paths()
    assert result.returncode == 0, result.stderr
    report = result.stdout
    assert "Crawl closed: closespider_pagecount." in report
    assert "/page/secret" not in seen
    assert seen.count("/robots.txt") == 1
    assert "/page/29" not in seen
    dropped = _section(report, "Dropped before scheduling")
    assert dropped.startswith("Dropped before scheduling (robots.txt): 1\n")
    assert "line 2: Disallow: /page/secret (group for scrapy-rep-demo)" in dropped
    # Every request is accounted for once, and only the disallowed one is blamed
    # on robots.txt (requests cut off by the page count are "not fetched").
    fetched = _count(report, "Pages fetched")
    assert 0 < fetched < len(seen)  # robots.txt and /gone are not pages
    assert _count(report, "Requests made by the spider") == (
        fetched + 1 + _count(report, "Not fetched for other reasons")
    )
    other = _section(report, "Not fetched for other reasons")
    assert re.search(r"/gone\n      HttpError: Ignoring non-200 response", other)
    origins = _section(report, "robots.txt per origin:")
    assert f"{site.origin}/robots.txt: fetched, HTTP 200" in origins
    assert "elsewhere.invalid" not in report

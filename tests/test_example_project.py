"""``cd example_project && scrapy crawl demo``: the README's first command, run for real.

The offline demo must show each thing scrapy-rep does that Scrapy's built-in does not, each
with what happened and why: drops grouped by the reason their errback got, a robots.txt that
fails and recovers, a site that pauses, a page's noindex and nofollow, what a declared purpose
refuses, and two ``scrapy robots`` commands that work on the demo's robots.txt file offline.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.request import ProxyHandler, build_opener

import pytest
from _servers import ScriptedServer

REPO = Path(__file__).resolve().parent.parent
PROJECT = REPO / "example_project"


#: Every run here is ``python -W error::scrapy.exceptions.ScrapyDeprecationWarning -W
#: default::DeprecationWarning -m scrapy ARGS``, as a user checking for deprecations would run
#: it. Python reads the category of a ``-W`` option while it starts, before Scrapy can be
#: imported, and ignores that first one ("Invalid -W option ignored: invalid module name:
#: 'scrapy.exceptions'"): so the run installs the same filter itself, then runs Scrapy's
#: command line (what ``python -m scrapy`` runs). A deprecation then raises where it is warned:
#: Scrapy logs it as an ERROR with a traceback (a signal handler's) or the command fails.
STRICT_WARNINGS = """\
import sys
import warnings
from scrapy.exceptions import ScrapyDeprecationWarning
warnings.filterwarnings("error", category=ScrapyDeprecationWarning)
from scrapy.cmdline import execute
sys.argv[0] = "scrapy"
execute()
"""


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }


def scrapy(*args: str, cwd: Path = PROJECT) -> subprocess.CompletedProcess[str]:
    """``scrapy ARGS`` in ``cwd``, with the warnings filters of ``STRICT_WARNINGS``."""
    env = _env()
    return subprocess.run(
        [sys.executable, "-W", "default::DeprecationWarning", "-c", STRICT_WARNINGS, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@dataclass(frozen=True)
class Run:
    result: subprocess.CompletedProcess[str]
    seconds: float

    @property
    def stdout(self) -> str:
        return self.result.stdout


def crawl_demo(*args: str) -> Run:
    began = time.monotonic()
    result = scrapy("crawl", "demo", *args)
    assert result.returncode == 0, result.stderr
    return Run(result, time.monotonic() - began)


@pytest.fixture(scope="module")
def demo() -> Run:
    return crawl_demo()


@pytest.fixture(scope="module")
def demo_train_ai() -> Run:
    return crawl_demo("-a", "purpose=train-ai")


#: The WARNING lines of ``scrapy crawl demo`` (with or without ``-a purpose=train-ai``), each
#: given once, with its cause: README's "Try it" section lists them. Any other WARNING, an
#: ERROR, a traceback or a Python warning (a deprecation) fails the tests below.
DEMO_WARNINGS = {
    # The flaky origin's robots.txt answers 503 with Retry-After: 5 once: its requests are held,
    # not dropped, while robots.txt is asked again (SPEC B2).
    "held": re.compile(
        r"\[scrapy_rep\.crawl\.robotstxt_middleware\] WARNING: Waiting for the robots\.txt of "
        r"http://127\.0\.0\.1:\d+ \(unreachable: HTTP 503\): its requests are held until it "
        r"answers, "
    ),
    # ... and 5 s later answers 200: the held requests are crawled.
    "recovered": re.compile(
        r"\[scrapy_rep\.crawl\.robotstxt_middleware\] WARNING: robots\.txt of "
        r"http://127\.0\.0\.1:\d+ is reachable again$"
    ),
    # The plain origin's /busy.html answers 503 with Retry-After: 2 once: the origin pauses for
    # 2 s, then the page is fetched again (SPEC H).
    "paused": re.compile(
        r"\[scrapy_rep\.crawl\.robotstxt_middleware\] WARNING: Pausing http://127\.0\.0\.1:\d+ "
        r"for 2s: HTTP 503 with Retry-After 2s at /busy\.html\. "
    ),
}

#: A line that warns: a log record at WARNING or above, a Python warning as the warnings module
#: prints it ("…/signal.py:191: ScrapyDeprecationWarning: …"), or a traceback.
_WARNS = re.compile(r" (?:WARNING|ERROR|CRITICAL): |\w+Warning: |^Traceback ")


def check_warnings(stderr: str, allowed: dict[str, re.Pattern[str]]) -> None:
    """The lines of ``stderr`` that warn are those ``allowed`` expects, each once."""
    warned = [line for line in stderr.splitlines() if _WARNS.search(line)]
    python_warnings = [line for line in warned if re.search(r"\w+Warning: ", line)]
    assert not [line for line in python_warnings if "scrapy_rep" in line], stderr
    unexplained = [line for line in warned if not any(p.search(line) for p in allowed.values())]
    assert unexplained == [], stderr
    counts = {name: sum(bool(p.search(line)) for line in warned) for name, p in allowed.items()}
    assert counts == dict.fromkeys(allowed, 1), stderr


@pytest.mark.parametrize("run", ["demo", "demo_train_ai"])
def test_demo_warns_only_of_what_readme_lists(run: str, request: pytest.FixtureRequest) -> None:
    demo: Run = request.getfixturevalue(run)
    check_warnings(demo.result.stderr, DEMO_WARNINGS)


@contextmanager
def serving_demo_site(cwd: Path, env: dict[str, str]) -> Iterator[dict[str, str]]:
    """The demo site served on its own (``python -m example_project.demo_site`` run in
    ``cwd``) inside the block: origin name -> its URL, ending in "/". Its first lines say
    where it listens, once it does: read, not waited for."""
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "example_project.demo_site"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        lines = [process.stdout.readline() for _ in range(4)]
        # Exited (an import error): nothing more comes, and its stderr says why.
        assert all(lines), process.stderr.read()
        urls = dict(line.strip().split(": ", 1) for line in lines)
        assert set(urls) == {"main", "docs", "plain", "flaky"}, urls
        yield urls
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def demo_site() -> Iterator[dict[str, str]]:
    """The demo site served from inside example_project/, as README's "Try it" runs it."""
    with serving_demo_site(PROJECT, _env()) as urls:
        yield urls


def test_demo_site_serves_from_the_repository_root() -> None:
    # A user in a checkout, with nothing added to PYTHONPATH.
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    with serving_demo_site(REPO, env) as urls:
        # Straight to the loopback site, whatever proxy the environment names.
        opener = build_opener(ProxyHandler({}))
        with opener.open(f"{urls['main']}robots.txt", timeout=30) as response:
            assert response.read() == (PROJECT / "demo_robots.txt").read_bytes()


def test_robots_command_on_the_demo_site_warns_of_nothing(demo_site: dict[str, str]) -> None:
    url = f"{demo_site['main']}blog/"
    result = scrapy("robots", url)
    assert result.returncode == 0, result.stderr
    assert f"ALLOWED  {url}\n" in result.stdout
    assert "  source: " in result.stdout and "/robots.txt: fetched, HTTP 200" in result.stdout
    check_warnings(result.stderr, {})


def _section(report: str, title: str) -> str:
    match = re.search(rf"^{re.escape(title)}.*?(?=^\S|\Z)", report, re.M | re.S)
    assert match is not None, f"no section {title!r} in:\n{report}"
    return match.group()


def _paths(section: str) -> list[str]:
    return re.findall(r"^  http://127\.0\.0\.1:\d+(/\S*)(?:  \(allowed by .*\))?$", section, re.M)


def _drops(section: str) -> dict[str, str]:
    """Dropped path -> the line saying why, in a section of the drops."""
    return dict(re.findall(r"^    http://127\.0\.0\.1:\d+(/\S*)\n        (.*)$", section, re.M))


def _seconds(pattern: str, text: str) -> float:
    match = re.search(pattern, text, re.M)
    assert match is not None, f"{pattern!r} not in:\n{text}"
    return float(match.group(1))


def test_demo_crawl_succeeds_offline_in_seconds(demo: Run) -> None:
    assert "=== scrapy-rep demo report ===" in demo.stdout
    assert "Crawl closed: finished. robots.txt obeyed as: scrapy-rep-demo" in demo.stdout
    assert "Declared purpose (REP_USAGE_PURPOSES): none" in demo.stdout
    assert "Traceback" not in demo.result.stderr
    crawled = re.findall(r"Crawled \(\d+\) <GET (\S+)>", demo.result.stderr)
    assert crawled and all(url.startswith("http://127.0.0.1:") for url in crawled)
    # Retry-After 5 on robots.txt and 2 on the paused page: a few seconds, not minutes.
    assert demo.seconds < 30


def test_demo_report_pages_fetched(demo: Run) -> None:
    fetched = _section(demo.stdout, "Pages fetched: ")
    assert fetched.startswith("Pages fetched: 15\n")
    assert sorted(_paths(fetched)) == sorted(
        [
            "/",  # main
            "/blog/",
            "/blog/first-post.html",  # otherbot's group disallows /blog/: not ours
            "/private/",  # Allow: /private/index.html also allows /private/
            "/private/index.html",
            "/files/report.pdf?download=1",  # '$' anchors: a query is not the end
            "/archive/2024/final.html",
            "/search.html",  # noindex, nofollow: fetched, its links not followed
            "/",  # docs
            "/guide.html",
            "/",  # plain (no robots.txt)
            "/about.html",
            "/busy.html",  # after the pause its 503 started
            "/",  # flaky (robots.txt 503, then 200)
            "/status.html",
        ]
    )
    assert re.search(
        r"^  http://\S+/private/  \(allowed by line 4: Allow: /private/index.html, "
        r"which Google also reads as Allow: /private/\$\)$",
        fetched,
        re.M,
    )
    assert "Items scraped: 15 (the spider yields one per page)" in demo.stdout


def test_demo_report_drops_grouped_by_errback_reason(demo: Run) -> None:
    dropped = _section(demo.stdout, "Dropped by scrapy-rep: ")
    assert dropped.startswith(
        "Dropped by scrapy-rep: 4 (each errback got scrapy_rep.RequestDropped; by its .reason)\n"
        "  disallowed: 4, a robots.txt rule forbids them "
        "(robotstxt/forbidden_before_schedule: 4)\n"
    )
    assert _drops(dropped) == {
        "/private/salaries.html": "line 3: Disallow: /private/ (group for scrapy-rep-demo)",
        "/files/report.pdf": "line 5: Disallow: /*.pdf$ (group for scrapy-rep-demo)",
        "/archive/2024/drafts/plan.html": (
            "line 6: Disallow: /archive/*/drafts/ (group for scrapy-rep-demo)"
        ),
        "/tmp/cache.html": "line 2: Disallow: /tmp/ (no group for scrapy-rep-demo; used *)",
    }
    assert "  usage: " not in dropped  # no purpose declared: nothing refused for its use
    assert "Not fetched for other reasons" not in demo.stdout


def test_demo_closing_summary_counts_each_reason_as_the_report_does(demo: Run) -> None:
    # The report: 4 disallowed (3 of the main origin, 1 of docs) and 3 links of the nofollow
    # page; the log's closing summary counts them the same, each under its own words.
    match = re.search(
        r"INFO: scrapy-rep dropped 7 request\(s\), not downloaded, from 2 origin\(s\):\n"
        r"  (http://127\.0\.0\.1:\d+): 6 = (.*)\n"
        r"  http://127\.0\.0\.1:\d+: (.*)\n",
        demo.result.stderr,
    )
    assert match is not None, demo.result.stderr
    main, kinds, docs = match.groups()
    disallowed, nofollow = sorted(kinds.split(" + "))
    # Three rules disallowed them: the words are the first one's.
    assert re.fullmatch(
        r"3 disallowed \(first: Forbidden by robots\.txt: Disallow: \S+ \(line \d\); "
        r"group for scrapy-rep-demo\)",
        disallowed,
    ), disallowed
    assert nofollow == f"3 nofollow (the page {main}/search.html says nofollow)"
    assert docs == (
        "1 disallowed (Forbidden by robots.txt: Disallow: /tmp/ (line 2); "
        "no group for scrapy-rep-demo; used *)"
    )


def test_demo_robots_txt_fails_then_recovers_requests_held_not_dropped(demo: Run) -> None:
    recovered = _section(demo.stdout, "robots.txt failed, then recovered")
    assert recovered.startswith("robots.txt failed, then recovered (SPEC B2): 1 origin(s)\n")
    later = _seconds(
        r"^      robots.txt requests: 2: HTTP 503 \(Retry-After: 5\); HTTP 200 (\d+\.\d)s later$",
        recovered,
    )
    assert 4.9 <= later < 9  # Retry-After honoured: not sooner, not 5 + 10 s
    assert re.search(
        r"^      held: 2, the requests made while it was unknown or failing .*; "
        r"page requests sent meanwhile: 0$",
        recovered,
        re.M,
    )
    assert "      released: 2, crawled once robots.txt came; dropped by its rules: 0\n" in recovered
    for counted in (
        "robotstxt/unreachable: 1",
        "robotstxt/recovered: 1",
        "robotstxt/request_count: 5",
        "robotstxt/response_status_count/503: 1",
    ):
        assert counted in recovered
    flaky = re.search(r"^  (http://127\.0\.0\.1:\d+)$", recovered, re.M)
    assert flaky is not None
    assert f"  {flaky.group(1)}/status.html\n" in _section(demo.stdout, "Pages fetched: ")


def test_demo_site_pauses_and_fetches_the_page_again(demo: Run) -> None:
    paused = _section(demo.stdout, "Paused origins")
    seconds = _seconds(
        r"^      paused for (\d+\.\d)s after /busy.html answered HTTP 503 \(Retry-After: 2\)$",
        paused,
    )
    assert 1.9 <= seconds < 6
    assert "      /busy.html fetched again after the pause: HTTP 200, nothing lost\n" in paused
    for counted in (
        "robotstxt/pause/paused: 1",
        "robotstxt/pause/resumed: 1",
        "robotstxt/pause/resent/503: 1",
        "; retries spent (retry/count): 0",
    ):
        assert counted in paused


def test_demo_page_level_noindex_nofollow(demo: Run) -> None:
    page = _section(demo.stdout, "Page-level rules")
    assert page.startswith("Page-level rules (robots meta tag, X-Robots-Tag; SPEC D): 1 page(s)\n")
    assert re.search(r"^  http://127\.0\.0\.1:\d+/search\.html\n", page, re.M)
    assert "      says noindex, nofollow (for every crawler)\n" in page
    assert "      nofollow: 3 link(s) the spider yielded from it not followed" in page
    not_followed = re.findall(r"^        http://127\.0\.0\.1:\d+(/\S*)$", page, re.M)
    assert not_followed == ["/search.html?page=2", "/search.html?page=3", "/calendar/2025/"]
    assert not set(not_followed) & set(_paths(_section(demo.stdout, "Pages fetched: ")))
    marked = re.search(r"^      noindex: its item\(s\) marked rep_noindex: (.*)$", page, re.M)
    assert marked is not None
    assert "/search.html', 'title': 'main /search.html', 'rep_noindex': True}" in marked.group(1)
    assert "robotspage/items/marked: 1, robotspage/requests/nofollow: 3" in page


def test_demo_usage_without_purpose_says_what_it_would_refuse(demo: Run) -> None:
    usage = _section(demo.stdout, "Usage preferences")
    assert usage.startswith(
        "Usage preferences: no purpose declared, so nothing was refused for its use.\n"
        "  With -a purpose=train-ai, robots.txt refuses 1 of the pages fetched "
        "(each dropped before scheduling):\n"
    )
    why = "train-ai disallowed by robots.txt line 7: Content-Usage: /blog/ train-ai=n"
    assert _drops(usage) == {"/blog/": why}
    # /blog/first-post.html is refused too, but only /blog/ links to it: never requested.
    assert (
        "    and 1 other page(s) fetched here would not be reached: only refused pages link to "
        "them, so nothing requests them\n"
    ) in usage
    assert re.search(r"^      http://127\.0\.0\.1:\d+/blog/first-post\.html$", usage, re.M)
    assert "purpose=ai-use" not in usage and "purpose=search" not in usage


@dataclass(frozen=True)
class Forecast:
    refused: set[str]
    unreached: set[str]
    made: int
    fetched: int
    usage: int
    disallowed: int


def _forecast(report: str, label: str) -> Forecast:
    usage = _section(report, "Usage preferences")
    block = re.search(
        rf"^  With -a purpose={label}, .*?^    That run: (\d+) requests made, (\d+) pages "
        rf"fetched, dropped: (\d+) for {label}, (\d+) by robots\.txt rules",
        usage,
        re.M | re.S,
    )
    assert block is not None, usage
    text = block.group()
    unreached = re.findall(r"^      http://127\.0\.0\.1:\d+(/\S*)$", text, re.M)
    made, fetched, refused, disallowed = (int(block.group(i)) for i in range(1, 5))
    return Forecast(set(_drops(text)), set(unreached), made, fetched, refused, disallowed)


def test_demo_forecast_for_a_purpose_is_what_that_run_does(demo: Run, demo_train_ai: Run) -> None:
    forecast = _forecast(demo.stdout, "train-ai")
    assert forecast.usage == len(forecast.refused)
    run = demo_train_ai.stdout
    dropped = _section(run, "Dropped by scrapy-rep: ")
    usage = re.search(r"^  usage: .*?(?=^  \S|\Z)", dropped, re.M | re.S)
    assert usage is not None
    assert set(_drops(usage.group())) == forecast.refused
    disallowed = re.search(r"^  disallowed: .*?(?=^  \S|\Z)", dropped, re.M | re.S)
    assert disallowed is not None
    assert len(_drops(disallowed.group())) == forecast.disallowed
    assert _count(run, "Requests made by the spider") == forecast.made
    fetched = _paths(_section(run, "Pages fetched: "))
    assert len(fetched) == forecast.fetched
    before = _paths(_section(demo.stdout, "Pages fetched: "))
    gone = forecast.refused | forecast.unreached
    assert sorted(fetched) == sorted(path for path in before if path not in gone)


def test_demo_report_says_what_each_number_counts(demo: Run, demo_train_ai: Run) -> None:
    for report in (demo.stdout, demo_train_ai.stdout):
        counts = _section(report, "scrapy-rep stats (what each counts):").splitlines()[1:]
        counts = [line for line in counts if line.strip()]
        assert counts
        unexplained = [line for line in counts if not re.fullmatch(r"  \S+: \d+  \(.+\)", line)]
        assert not unexplained
    stats = _section(demo.stdout, "scrapy-rep stats (what each counts):")
    # /busy.html's 503 sends it back; /about.html, requested with it, is sent back too when it
    # reaches its last look after the 503 began the pause (the two race: 1 or 2).
    rescheduled = re.search(
        r"^  robotstxt/rescheduled: ([12])  \(requests sent back from the downloader", stats, re.M
    )
    assert rescheduled is not None, stats
    recovered = _section(demo.stdout, "robots.txt failed, then recovered")
    assert re.search(
        r"^  crawl-wide, every origin: robotstxt/held: \d+, .*\(robotstxt/held counts the "
        r"requests held above and those that waited for another origin's first robots\.txt or a "
        r"pause; each stat in words under scrapy-rep stats\)$",
        recovered,
        re.M,
    )
    paused = _section(demo.stdout, "Paused origins")
    assert f"robotstxt/rescheduled: {rescheduled.group(1)}" in paused
    # Sent back or not, both pages were fetched once the pause was over.
    fetched = _paths(_section(demo.stdout, "Pages fetched: "))
    assert fetched.count("/about.html") == fetched.count("/busy.html") == 1


def test_demo_with_purpose_drops_what_usage_refuses(demo_train_ai: Run) -> None:
    report = demo_train_ai.stdout
    assert "Declared purpose (REP_USAGE_PURPOSES): train-ai" in report
    dropped = _section(report, "Dropped by scrapy-rep: ")
    assert dropped.startswith("Dropped by scrapy-rep: 5 ")
    usage = re.search(r"^  usage: .*?(?=^  \S|\Z)", dropped, re.M | re.S)
    assert usage is not None
    assert usage.group().startswith(
        "  usage: 1, a usage preference refuses the declared purpose "
        "(robotstxt/usage_forbidden: 1)\n"
    )
    assert _drops(usage.group()) == {
        "/blog/": "train-ai disallowed by robots.txt line 7: Content-Usage: /blog/ train-ai=n"
    }
    assert "  disallowed: 4, " in dropped
    fetched = _paths(_section(report, "Pages fetched: "))
    assert "/blog/" not in fetched and "/blog/first-post.html" not in fetched
    summary = _section(report, "Usage preferences")
    assert 'declared purpose train-ai: 1 request(s) refused before scheduling (reason "usage"' in (
        summary
    )
    assert "tdmrep/request_count: 4" in summary  # train-ai asks every origin for tdmrep.json


def test_demo_purpose_as_a_setting() -> None:
    report = crawl_demo("-s", "REP_USAGE_PURPOSES=train-ai").stdout
    assert "Declared purpose (REP_USAGE_PURPOSES): train-ai" in report
    assert "robotstxt/usage_forbidden/train-ai: 1" in report


def test_demo_report_robots_outcome_per_origin(demo: Run) -> None:
    origins = _section(demo.stdout, "robots.txt per origin:").splitlines()[1:]
    origins = [line.strip() for line in origins if line.strip()]
    assert len(origins) == 4
    main, docs, plain, flaky = origins
    assert "HTTP 200" in main and "6 rules" in main and "lifetime" in main
    assert "HTTP 200" in docs and docs.endswith(", 1 rule")
    assert "HTTP 404" in plain
    assert "fetched, HTTP 200" in flaky and flaky.endswith(", 1 rule")


def test_demo_report_stats(demo: Run) -> None:
    stats = _section(demo.stdout, "scrapy-rep stats (what each counts):")
    assert "robotstxt/request_count: 5" in stats
    assert "robotstxt/response_status_count/404: 1" in stats
    assert "robotstxt/response_status_count/503: 1" in stats
    assert "robotspage/pages/noindex: 1" in stats


def test_demo_report_ends_with_offline_commands_that_work(demo: Run) -> None:
    tail = demo.stdout.rstrip().splitlines()[-3:]
    assert tail[0].startswith("Try it offline:")
    commands = [shlex.split(line) for line in tail[1:]]
    assert [command[:4] for command in commands] == [
        ["scrapy", "robots", "--file", "demo_robots.txt"]
    ] * 2
    disallowed = scrapy(*commands[0][1:])  # pasted in example_project/, after the crawl
    assert disallowed.returncode == 1, disallowed.stderr
    assert "DISALLOWED  http://127.0.0.1:" in disallowed.stdout
    assert "rule:   line 3: Disallow: /private/" in disallowed.stdout
    refused = scrapy(*commands[1][1:])
    assert refused.returncode == 1, refused.stderr
    assert refused.stdout.startswith("ALLOWED to crawl; train-ai: NOT allowed  http://127.0.0.1:")
    assert "--purpose" in commands[1]
    assert (
        "purpose: train-ai: not used (train-ai disallowed by robots.txt line 7: "
        "Content-Usage: /blog/ train-ai=n)"
    ) in refused.stdout


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


def test_demo_on_a_dead_site_says_each_attempt_and_reports_the_give_up(unused_port: int) -> None:
    # `scrapy crawl demo -a start_url=https://example.com` offline: nothing answers. Each
    # attempt is an INFO line with the next one's time; the report gives the attempts and
    # why the crawl stopped waiting, not the first attempt's "lifetime ... (until ...)".
    origin = f"http://127.0.0.1:{unused_port}"
    run = crawl_demo("-a", f"start_url={origin}/", "-s", "REP_RETRY_DELAY=1")
    attempts = [line for line in run.result.stderr.splitlines() if f"of {origin}: unr" in line]
    assert len(attempts) == 3, attempts
    assert all("] INFO: " in line for line in attempts)
    assert all("next attempt in" in line for line in attempts[:2])
    assert "the crawl stops waiting for it now (REP_GIVE_UP_AFTER=3)" in attempts[2]
    origins = _section(run.stdout, "robots.txt per origin:").strip().splitlines()
    assert len(origins) == 2, origins
    assert re.fullmatch(
        rf"  {re.escape(origin)}/robots.txt: unreachable \(connection refused\), 3 attempt\(s\), "
        r"at 0\.0s, \d+\.\ds, \d+\.\ds: given up after 3 failures in a row \(REP_GIVE_UP_AFTER\), "
        r'its 1 request\(s\) dropped \(reason "gave_up" above\)',
        origins[1],
    ), origins[1]
    assert "lifetime" not in run.stdout and "until" not in origins[1]
    dropped = _section(run.stdout, "Dropped by scrapy-rep: ")
    assert "  gave_up: 1, " in dropped
    assert "lower REP_GIVE_UP_AFTER or REP_RETRY_DELAY" in dropped
    assert run.seconds < 30


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
    dropped = _section(report, "Dropped by scrapy-rep")
    assert dropped.startswith("Dropped by scrapy-rep: 1 ")
    assert "\n  disallowed: 1, a robots.txt rule forbids them" in dropped
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
    # The demo site's own shows are not on this site.
    for title in ("robots.txt failed, then recovered", "Paused origins", "Try it offline"):
        assert title not in report


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            "REP_FETCH_TIMEOUT=ten",
            "REP_FETCH_TIMEOUT must be a number of seconds over 0, up to 86400, got 'ten'",
        ),
        (
            "REP_USAGE_PURPOSES=nonsense-purpose",
            "REP_USAGE_PURPOSES: unknown usage label(s) 'nonsense-purpose': the labels of "
            "draft-ietf-aipref-vocab-08 are train-ai, ai-use, search (a list of them or a "
            "comma-separated string)",
        ),
        (
            "REP_STORE=mysql://x",
            "REP_STORE='mysql://x' is not a store URL: use 'memory://', "
            "'sqlite:///path/to/robots.sqlite3' or 'redis://host:port/db'",
        ),
    ],
    ids=["word for seconds", "unknown purpose", "unknown store"],
)
def test_bad_setting_stops_scrapy_crawl_before_any_request(
    http_server: ScriptedServer, setting: str, message: str
) -> None:
    # `scrapy crawl` itself: its exit code is Scrapy's command's, and what the user reads first
    # is scrapy-rep's ERROR line, before the traceback each Scrapy release prints its own way.
    http_server.links("/", ["/page"])
    result = scrapy("crawl", "demo", "-a", f"start_url={http_server.url('/')}", "-s", setting)
    assert result.returncode != 0, result.stderr
    assert http_server.paths() == []
    errors = [line for line in result.stderr.splitlines() if " ERROR: " in line]
    assert errors, result.stderr
    assert errors[0].endswith(
        f" [scrapy_rep] ERROR: {message}. The crawl stops before its first request."
    )
    assert "Traceback" in result.stderr  # Scrapy's report follows, after that line
    assert result.stderr.index(errors[0]) < result.stderr.index("Traceback")

"""Broad-crawl benchmark: thousands of sites, Scrapy's broad-crawl settings.

Run from the repository root::

    python benchmarks/bench_broad.py                  # 2,000 sites x 3 rounds, 10,000 x 2
    python benchmarks/bench_broad.py --sizes 500 --rounds 2       # one size, 2 rounds
    python benchmarks/bench_broad.py --quick          # smoke run: 200 sites, 1 round
    python benchmarks/bench_broad.py --dead-only      # only the dead-site part
    python benchmarks/bench_broad.py --old ../old-checkout --variants "scrapy_rep" \
        "scrapy_rep (old)"                            # against another version
    python benchmarks/bench_broad.py --keep runs/     # also each crawl's result, as JSON
    python benchmarks/bench_broad.py --gc-promoted    # also what each crawl's young GCs promote
    python benchmarks/bench_broad.py --gc-threshold 50000   # every crawl with fewer collections

Sites: one Twisted server on 127.0.0.1 (``_broad_server.py``, own process) answers every site;
the crawl resolves ``site00001.test`` … to 127.0.0.1 (``_broad_resolver.py``), so each site is
its own origin and download slot, as in a real broad crawl. Of the sites, 75 % serve a real
robots.txt (files of ``tests/data/corpus_sample`` whose home page both parsers allow, reused in
a seeded order), 10 % have none (404), 5 % answer 503 to robots.txt and 200 to pages, 5 % answer
500 or 503 to everything, and 5 % are dead: half on a port nothing listens on (connection
refused), half a name that does not resolve. A live site's home page (the start URL) links to 4
pages and, on sites with a robots.txt, to up to 3 paths taken from its rules (some of which it
disallows, some only to other crawlers); each page links back home.

Variants: ``ROBOTSTXT_OBEY = False``, Scrapy's built-in middleware (Protego), scrapy-rep (the
add-on, memory store, ``REP_HOLD_TIMEOUT = --hold-timeout`` so requests held for failing sites
are dropped and the crawl ends). Optional: ``scrapy_rep sqlite`` (a fresh SQLite store per
crawl), ``scrapy_rep redis`` (a throw-away redis-server per crawl: results, held requests and
the fleet's places in Redis, one process; ``scrapy_rep redis, no fleet limits`` without the
places) and, with ``--old SRC``, ``scrapy_rep (old)`` (the add-on of the ``scrapy_rep`` found in
SRC, a checkout of an earlier commit) and ``scrapy_rep unlimited`` (``REP_SLOT_CONCURRENCY =
False``: what holding each slot's concurrency costs). Each crawl runs in its own process
(``_broad_crawl.py``); every round runs each (size, variant) once, sizes and variants
interleaved, the variants' order rotated from round to round. Measures, per crawl:

- time to 95 % of the allowed pages: from ``spider_opened`` until the spider has 95 % of the
  pages of the sites with a robots.txt (or a 404) that Google's rules allow (judged with
  ``scrapy_rep.RobotsTxt``, which has Google's answers);
- first page after robots.txt, p90: per site, from the downloader's first answer to its
  robots.txt to its first answer for a page (``response_downloaded``), 90th percentile; beside
  it the median, the p90 with the time of full garbage collections taken out of each wait, and
  the share of waits that contain one (a full collection pauses the whole process: in a broad
  crawl it runs about once a second and lasts tenths of a second, so how often it comes decides
  which waits make the tail);
- full garbage collections (generation 2) during the crawl, and the time spent in them;
- CPU per response: CPU seconds of the crawl process over the downloader's responses;
- peak RSS of the crawl process (``ru_maxrss``);
- disallowed pages fetched (requests the sites received for pages Google's rules disallow), page
  requests sent to sites whose robots.txt failed (5xx, refused, unresolvable), robots.txt
  requests per live site (mean / max).

The table gives each variant's median over rounds with the spread (min-max) and, for
scrapy-rep, the median of its same-round ratios to Scrapy's built-in, judged against
``TOLERANCE`` (what rounds of one variant vary by on this 2-core machine: below it a difference
is noise). Part 2 (``--dead``, ``--dead-only``): scrapy-rep with its defaults on 20 live sites
plus 10 dead ones: when the last page arrived and when the spider closed.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import json
import math
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from bench_crawl import free_port, server_process

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _redis_server import RedisServer

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "benchmarks"
CORPUS = ROOT / "tests" / "data" / "corpus_sample"
USER_AGENT = "benchbot/1.0 (+http://127.0.0.1/bot)"
TOKEN = "benchbot"
GENERIC_LINKS = [f"/page/{n}" for n in range(1, 5)]
RULE_LINKS = 3  # at most, per site with a robots.txt
# Mix of sites: (kind, share); the rest are names that do not resolve. "refused" and
# "nxdomain" never reach the server; "robots503" answers 503 to robots.txt only.
MIX = [
    ("ok", 0.75),
    ("404", 0.10),
    ("robots503", 0.05),
    ("500", 0.025),
    ("503", 0.025),
    ("refused", 0.025),
]
LIVE = ("ok", "404")  # robots.txt answered: their allowed pages are the crawl's work

# Scrapy docs, "Broad Crawls", plus a quiet, self-contained crawl.
BROAD: dict[str, Any] = {
    "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
    "REACTOR_THREADPOOL_MAXSIZE": 20,
    "LOG_LEVEL": "INFO",
    "COOKIES_ENABLED": False,
    "RETRY_ENABLED": False,
    "DOWNLOAD_TIMEOUT": 15,
    "REDIRECT_ENABLED": False,
    "AJAXCRAWL_ENABLED": False,
    "USER_AGENT": USER_AGENT,
    "TELNETCONSOLE_ENABLED": False,
    "MEMUSAGE_ENABLED": False,
    "REMOTE_CONTROL_ENABLED": False,
}
OURS: dict[str, Any] = {"ADDONS": {"scrapy_rep.Addon": 0}}
BASELINE = "ROBOTSTXT_OBEY=False"
BUILTIN = "Scrapy built-in"
REP = "scrapy_rep"
# What a measure varies by between rounds of one variant on the 2-core machine (the spread
# columns show it): a ratio within 1 + this is "on par", not worse.
TOLERANCE = {"t95": 0.05, "p90": 0.10, "cpu": 0.05, "rss": 0.05}


@dataclass(frozen=True)
class Site:
    host: str
    kind: str
    url: str
    robots: str | None  # file served as robots.txt ("ok" sites)
    links: tuple[str, ...]  # the paths its home page links to

    @property
    def netloc(self) -> str:
        """How the crawl names the site (host:port), as ``_broad_crawl.py`` reports it."""
        return urlsplit(self.url).netloc

    def page_urls(self) -> list[str]:
        """The URLs of its pages as Scrapy requests them (home page first)."""
        from w3lib.url import safe_url_string

        return [self.url, *(safe_url_string(urljoin(self.url, link)) for link in self.links)]


@dataclass(frozen=True)
class Variant:
    name: str
    settings: dict[str, Any]
    sqlite: bool = False
    #: A throw-away redis-server as REP_STORE (the fleet's places, one process).
    redis: bool = False
    #: Where the scrapy_rep package it runs comes from (None: this checkout).
    source: Path | None = None


@dataclass
class Run:
    """One crawl's result (``_broad_crawl.py``) and what the sites received, or ``error``."""

    data: dict[str, Any]
    received: dict[str, dict[str, int]]
    error: str | None = None

    def get(self, key: str) -> Any:
        return self.data[key]


# -- sites and server ---------------------------------------------------------------------------


@cache
def _parsed(path: str) -> Any:
    from scrapy_rep import RobotsTxt

    return RobotsTxt.parse(Path(path).read_bytes())


def robots_bodies() -> list[Path]:
    """Corpus files whose home page both parsers allow (so both crawl the site), below 500 KiB
    (the sample over-represents huge files, stored gzip-compressed)."""
    from protego import Protego

    eligible = []
    for path in sorted(p for p in CORPUS.rglob("*") if p.is_file()):
        if path.suffix in (".gz", ".md"):
            continue
        body = path.read_bytes()
        protego = Protego.parse(body.decode("utf-8", "ignore"))
        home = "http://site.test/"
        if _parsed(str(path)).allowed(home, TOKEN) and protego.can_fetch(home, USER_AGENT):
            eligible.append(path)
    return eligible


_RULE = re.compile(rb"^\s*(?:dis)?allow\s*:\s*([^\s#]+)", re.IGNORECASE | re.MULTILINE)


def rule_links(path: Path, rng: random.Random) -> tuple[str, ...]:
    """Up to RULE_LINKS paths a site with this robots.txt links to: its rules' paths, a ``*``
    made ``x`` and a final ``$`` dropped (the pages its rules are about)."""
    found = []
    for match in _RULE.finditer(path.read_bytes()):
        rule = match.group(1).decode("utf-8", "replace").replace("*", "x").rstrip("$")
        if rule.startswith("/") and len(rule) > 1 and len(rule) <= 120:
            found.append(rule)
    found = sorted(set(found))
    return tuple(rng.sample(found, min(RULE_LINKS, len(found))))


def plan_sites(count: int, port: int, closed_port: int, seed: int = 12) -> list[Site]:
    """``count`` sites of the kinds in MIX (the rest: names that do not resolve)."""
    rng = random.Random(seed)
    kinds: list[str] = []
    for kind, share in MIX:
        kinds += [kind] * round(count * share)
    kinds = (kinds + ["nxdomain"] * count)[:count]
    rng.shuffle(kinds)
    bodies = robots_bodies()
    rng.shuffle(bodies)
    sites = []
    for n, kind in enumerate(kinds, 1):
        host = f"nxdomain{n:05d}.test" if kind == "nxdomain" else f"site{n:05d}.test"
        url = f"http://{host}:{closed_port if kind == 'refused' else port}/"
        robots = bodies[n % len(bodies)] if kind == "ok" else None
        links = tuple(GENERIC_LINKS) + (rule_links(robots, rng) if robots else ())
        sites.append(Site(host, kind, url, str(robots) if robots else None, links))
    return sites


@contextlib.contextmanager
def broad_server(sites: Sequence[Site], tmp: Path) -> Iterator[int]:
    """Start ``_broad_server.py`` for the sites that reach it; yield its port."""
    served = {
        s.host: (s.kind, s.robots, list(s.links))
        for s in sites
        if s.kind not in ("refused", "nxdomain")
    }
    config = tmp / "server.json"
    config.write_text(json.dumps({"sites": served}), encoding="utf-8")
    args = [str(HERE / "_broad_server.py"), str(config)]
    with server_process(args, "broad-crawl server") as (started, _pid):
        yield int(started["port"])


@dataclass
class Served:
    """Sites answered by a running server (URLs carry its port) and how to read its counts."""

    sites: list[Site]
    port: int

    def received(self) -> dict[str, dict[str, int]]:
        """Page requests each site received since the last call, ``{host: {target: n}}``."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/__counts", headers={"Host": "bench.control"}
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            counts: dict[str, dict[str, int]] = json.loads(answer.read())
        return counts


@contextlib.contextmanager
def serve(count: int) -> Iterator[Served]:
    with tempfile.TemporaryDirectory(prefix="bench-broad-") as tmp:
        draft = plan_sites(count, 0, 0)
        with broad_server(draft, Path(tmp)) as port:
            yield Served(plan_sites(count, port, free_port()), port)


# -- crawls -------------------------------------------------------------------------------------


def crawl(
    sites: Sequence[Site],
    settings: dict[str, Any],
    timeout: float,
    tmp: Path,
    source: Path | None = None,
    profile: Path | None = None,
    promoted: bool = False,
    gc_threshold: int | None = None,
) -> dict[str, Any] | str:
    """One crawl in its own process (the result, or why there is none); on ``timeout`` it gets
    SIGINT, then is killed. ``source``: the directory whose ``scrapy_rep`` it runs (None: this
    checkout); ``profile``: run it under cProfile, stats to that file; ``promoted``: count what
    young collections promote, by kind (``gc_promoted`` in the result); ``gc_threshold``: the
    crawl process's first GC threshold (None: Python's default)."""
    result = tmp / "result.json"
    result.unlink(missing_ok=True)
    config = tmp / "crawl.json"
    config.write_text(
        json.dumps(
            {
                "settings": {**BROAD, **settings},
                "start": [s.url for s in sites],
                "result": str(result),
            }
        ),
        encoding="utf-8",
    )
    log = tmp / "crawl.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(source or ROOT)])}
    if profile is not None:
        env["BENCH_PROFILE"] = str(profile)
    if promoted:
        env["BENCH_GC_PROMOTED"] = "1"
    if gc_threshold is not None:
        env["BENCH_GC_THRESHOLD"] = str(gc_threshold)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "_broad_crawl.py"), str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tmp,
        )
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
                ended = "then closed on SIGINT" if result.exists() else "then ended on SIGINT"
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                ended = "still open 30 s after SIGINT: killed"
            return f"> {timeout:g} s, {ended}"
    if proc.returncode != 0 or not result.exists():
        tail = log.read_text("utf-8", "replace").splitlines()[-5:]
        return f"exit {proc.returncode}: " + " | ".join(tail)
    data: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
    return data


def variants(
    hold_timeout: float, old: Path | None = None, only: Sequence[str] = ()
) -> list[Variant]:
    ours = {**OURS, "REP_HOLD_TIMEOUT": hold_timeout}
    table = [
        Variant(BASELINE, {"ROBOTSTXT_OBEY": False}),
        Variant(BUILTIN, {"ROBOTSTXT_OBEY": True}),
        Variant(REP, ours),
    ]
    if "scrapy_rep unlimited" in only:
        # What the slot limit costs: scrapy-rep without it (Scrapy >= 2.14's burst).
        table.append(Variant("scrapy_rep unlimited", {**ours, "REP_SLOT_CONCURRENCY": False}))
    if "scrapy_rep sqlite" in only:
        table.append(Variant("scrapy_rep sqlite", ours, sqlite=True))
    if "scrapy_rep redis" in only:
        # What a Redis store costs one process: results, held requests, the fleet's places.
        table.append(Variant("scrapy_rep redis", ours, redis=True))
    if "scrapy_rep redis, no fleet limits" in only:
        # The same without the fleet's places: what holding each slot in Redis costs.
        off = {**ours, "REP_FLEET_LIMITS": False}
        table.append(Variant("scrapy_rep redis, no fleet limits", off, redis=True))
    if old is not None:
        table.append(Variant("scrapy_rep (old)", ours, source=old.resolve()))
    # Scrapy's built-in is what every ratio is to; ROBOTSTXT_OBEY=False only when asked for (or
    # no variant is named): at 10,000 sites it is the longest crawl (all start requests queued).
    return [v for v in table if not only or v.name in only or v.name == BUILTIN]


def run_variant(
    variant: Variant,
    served: Served,
    concurrency: int,
    per_domain: int,
    timeout: float,
    promoted: bool = False,
    gc_threshold: int | None = None,
) -> Run:
    served.received()  # counts from here on are this crawl's
    with tempfile.TemporaryDirectory(prefix="bench-broad-crawl-") as tmp:
        settings = {
            **variant.settings,
            "CONCURRENT_REQUESTS": concurrency,
            "CONCURRENT_REQUESTS_PER_DOMAIN": per_domain,
        }
        if variant.sqlite:
            # A fresh file per crawl: a warm store would skip the robots.txt fetches.
            settings["REP_STORE"] = f"sqlite:///{tmp}/robots.sqlite3"
        with contextlib.ExitStack() as stack:
            if variant.redis:
                server = stack.enter_context(RedisServer.start(Path(tmp) / "redis"))
                settings["REP_STORE"] = server.url
            data = crawl(
                served.sites,
                settings,
                timeout,
                Path(tmp),
                variant.source,
                promoted=promoted,
                gc_threshold=gc_threshold,
            )
    received = served.received()
    return Run(data, received) if isinstance(data, dict) else Run({}, received, data)


# -- measures -----------------------------------------------------------------------------------


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else math.nan


class Judge:
    """Google's answers for the sites' pages (``scrapy_rep.RobotsTxt``)."""

    def __init__(self, sites: Sequence[Site]) -> None:
        self.by_host = {s.host: s for s in sites}
        self.by_netloc = {s.netloc: s for s in sites}
        self.allowed_urls = {
            url for s in sites if s.kind in LIVE for url in s.page_urls() if self.allows(s, url)
        }

    @staticmethod
    def allows(site: Site, url: str) -> bool:
        return site.robots is None or bool(_parsed(site.robots).allowed(url, TOKEN))


def _paused(
    start: float, end: float, pauses: Sequence[Sequence[float]], starts: list[float]
) -> float:
    """Time of the full collections (``pauses``, sorted; ``starts`` their starts) within
    ``[start, end]``."""
    total = 0.0
    for i in range(max(0, bisect.bisect_left(starts, start) - 1), len(pauses)):
        begin, finish = pauses[i]
        if begin >= end:
            break
        total += max(0.0, min(finish, end) - max(begin, start))
    return total


def measure(run: Run, judge: Judge, per_domain: int) -> dict[str, float]:
    stats = run.get("stats")
    times = sorted(
        t
        for u, t in zip(run.get("page_urls"), run.get("page_times"), strict=True)
        if u in judge.allowed_urls
    )
    need = math.ceil(0.95 * len(judge.allowed_urls))
    answered, first_page = run.get("robots_answered"), run.get("first_page_answered")
    pauses = sorted(p for p in run.get("gc_pauses") if p[0] <= run.get("closed"))
    starts = [p[0] for p in pauses]
    waits = [
        (answered[n], first_page[n])
        for n, site in judge.by_netloc.items()
        if site.kind in LIVE and n in answered and n in first_page and first_page[n] >= answered[n]
    ]
    lengths = [b - a for a, b in waits]
    paused = [_paused(a, b, pauses, starts) for a, b in waits]
    disallowed = failing = 0
    for host, targets in run.received.items():
        site = judge.by_host.get(host)
        if site is None:
            continue
        for target, n in targets.items():
            if site.kind not in LIVE:
                failing += n
            elif not judge.allows(site, f"http://{site.netloc}{target}"):
                disallowed += n
    pages = run.get("page_requests")
    failing += sum(
        pages.get(s.netloc, 0) for s in judge.by_host.values() if s.kind in ("refused", "nxdomain")
    )
    robots = run.get("robots_requests")
    per_live = [robots.get(s.netloc, 0) for s in judge.by_host.values() if s.kind in LIVE]
    responses = stats.get("downloader/response_count", 0)
    most = [
        n
        for netloc, n in run.get("most_in_downloader").items()
        if netloc in judge.by_netloc and judge.by_netloc[netloc].kind in LIVE
    ]
    return {
        "t95": times[need - 1] if len(times) >= need else math.nan,
        "allowed_got": len(times),
        "p90": _pct(lengths, 0.90),
        "p50": _pct(lengths, 0.50),
        "p90_net": _pct([w - p for w, p in zip(lengths, paused, strict=True)], 0.90),
        "hit": 100 * sum(p > 0 for p in paused) / max(1, len(waits)),
        "full_gcs": len(pauses),
        "gc_s": sum(b - a for a, b in pauses),
        "turns": _pct([float(t) for t in run.get("turns_to_first_page").values()], 0.90),
        "cpu": 1000 * run.get("cpu") / max(1, responses),
        "rss": run.get("maxrss_kib") / 1024,
        "disallowed": disallowed,
        "failing": failing,
        "robots_mean": statistics.mean(per_live) if per_live else 0.0,
        "robots_max": max(per_live, default=0),
        "responses": responses,
        "closed": run.get("closed"),
        "most_at_once": max(most, default=0),
        "over_limit": sum(n > per_domain for n in most),
    }


# -- report -------------------------------------------------------------------------------------

ROWS: list[tuple[str, str, str]] = [
    # (key, label, format)
    ("t95", "time to 95 % of the allowed pages, s", "{:.1f}"),
    ("p90", "first page after robots.txt, p90, s", "{:.3f}"),
    ("turns", "  event-loop turns, robots.txt answered -> page sent, p90", "{:.0f}"),
    ("p50", "  median, s", "{:.3f}"),
    ("p90_net", "  p90 with full-GC pauses taken out of each wait, s", "{:.3f}"),
    ("hit", "  waits that contain a full GC, %", "{:.1f}"),
    ("full_gcs", "full garbage collections (generation 2)", "{:.0f}"),
    ("gc_s", "  time in them, s", "{:.1f}"),
    ("cpu", "CPU per response, ms", "{:.2f}"),
    ("rss", "peak RSS, MiB", "{:.0f}"),
    ("disallowed", "disallowed pages fetched", "{:.0f}"),
    ("failing", "page requests to sites whose robots.txt failed", "{:.0f}"),
    ("robots_mean", "robots.txt requests per live site, mean", "{:.2f}"),
    ("robots_max", "robots.txt requests per live site, max", "{:.0f}"),
    ("responses", "responses downloaded", "{:.0f}"),
    ("most_at_once", "most requests of one live site in the downloader at once", "{:.0f}"),
    ("over_limit", "  live sites that had more than the per-domain limit at once", "{:.0f}"),
    ("closed", "spider closed at, s", "{:.1f}"),
]


def _cell(values: list[float], fmt: str) -> str:
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return "n/a"
    median = fmt.format(statistics.median(values))
    if len(values) == 1 or min(values) == max(values):
        return median
    return f"{median} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def _ratio(
    mine: list[dict[str, float] | None], base: list[dict[str, float] | None], key: str
) -> str:
    ratios = [
        m[key] / b[key]
        for m, b in zip(mine, base, strict=True)
        if m and b and b[key] and not math.isnan(m[key]) and not math.isnan(b[key])
    ]
    if not ratios:
        return ""
    median = statistics.median(ratios)
    verdict = ""
    if key in TOLERANCE:
        verdict = " ok" if median <= 1 + TOLERANCE[key] else " WORSE"
    spread = f" ({min(ratios):.2f}-{max(ratios):.2f})" if len(ratios) > 1 else ""
    return f"{median:.2f}x{spread}{verdict}"


def report(
    size: int,
    table: list[Variant],
    results: dict[str, list[dict[str, float] | None]],
    errors: dict[str, list[str]],
    allowed: int,
) -> None:
    rounds = max(len(r) for r in results.values())
    print(f"\n{size:,} sites, {rounds} round(s): {allowed:,} allowed pages")
    names = [v.name for v in table]
    width = 30
    header = f"   {'measure':<48}" + "".join(f"{n:>{width}}" for n in names)
    ours = [n for n in names if n not in (BASELINE, BUILTIN)]
    header += "".join(f"{n + ' / built-in':>{width}}" for n in ours)
    print(header)
    for key, label, fmt in ROWS:
        line = f"   {label:<48}"
        for name in names:
            values = [r[key] for r in results[name] if r]
            line += f"{_cell(values, fmt):>{width}}"
        for name in ours:
            line += f"{_ratio(results[name], results[BUILTIN], key):>{width}}"
        print(line)
    for name in names:
        got = [int(r["allowed_got"]) for r in results[name] if r]
        if errors[name] or any(g < allowed for g in got):
            print(f"   ! {name}: allowed pages got {got} of {allowed}; {'; '.join(errors[name])}")


def print_promoted(promoted: dict[str, Any], top: int = 12) -> None:
    """What one crawl's young collections promoted (``_broad_crawl._Promotions``)."""
    kinds = promoted["promoted"]
    total = sum(n for _kind, n in kinds)
    sampled = max(1, promoted["sampled"])
    ours = sum(n for kind, n in kinds if "scrapy_rep" in kind)
    print(
        f"     promoted to generation 2: {total / sampled:,.0f} objects per generation-1"
        f" collection ({promoted['sampled']} of {promoted['collections']} counted);"
        f" kinds naming scrapy_rep {ours / max(1, total):.1%}; top kinds:"
    )
    for kind, n in kinds[:top]:
        print(f"       {n / max(1, total):6.1%}  {kind}")


def broad(args: argparse.Namespace) -> None:
    table = variants(args.hold_timeout, args.old, args.variants)
    rounds = dict(zip(args.sizes, args.rounds, strict=True))
    sizes = ", ".join(f"{s:,} x {r}" for s, r in rounds.items())
    print(
        f"\n1. Broad crawls: CONCURRENT_REQUESTS = {args.concurrency}, "
        f"{args.per_domain} per domain; sizes {sizes}"
        f" rounds; scrapy_rep REP_HOLD_TIMEOUT = {args.hold_timeout:g}; tolerance "
        + ", ".join(f"{k} {v:.0%}" for k, v in TOLERANCE.items())
        + (f"; gc.set_threshold({args.gc_threshold}) in every crawl" if args.gc_threshold else "")
    )
    results: dict[tuple[int, str], list[dict[str, float] | None]] = {}
    errors: dict[tuple[int, str], list[str]] = {}
    with contextlib.ExitStack() as stack:
        served = {size: stack.enter_context(serve(size)) for size in args.sizes}
        judges = {size: Judge(served[size].sites) for size in args.sizes}
        for size, s in served.items():
            counts: dict[str, int] = {}
            for site in s.sites:
                counts[site.kind] = counts.get(site.kind, 0) + 1
            print(f"   {size:,} sites: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
        for round_no in range(1, max(args.rounds) + 1):
            shift = (round_no - 1) % len(table)
            order = table[shift:] + table[:shift]
            for size in args.sizes:
                if round_no > rounds[size]:
                    continue
                for variant in order:
                    run = run_variant(
                        variant,
                        served[size],
                        args.concurrency,
                        args.per_domain,
                        args.timeout,
                        args.gc_promoted,
                        args.gc_threshold,
                    )
                    key = (size, variant.name)
                    errors.setdefault(key, []).extend([run.error] if run.error else [])
                    summary = None
                    if run.error is None:
                        summary = measure(run, judges[size], args.per_domain)
                    results.setdefault(key, []).append(summary)
                    if args.keep is not None and run.error is None:
                        name = f"{size}-{variant.name.replace(' ', '_')}-r{round_no}.json"
                        (args.keep / name).write_text(json.dumps(run.data), encoding="utf-8")
                    print(f"   round {round_no}: {size:,} {variant.name} done", flush=True)
                    if args.gc_promoted and run.error is None:
                        print_promoted(run.get("gc_promoted"))
            # Tables after every round: a long run that must be cut short still reports.
            print(f"\nAfter round {round_no}:")
            for size in args.sizes:
                if (size, table[0].name) in results:
                    report(
                        size,
                        table,
                        {v.name: results[size, v.name] for v in table},
                        {v.name: errors[size, v.name] for v in table},
                        len(judges[size].allowed_urls),
                    )
    print(
        "\n   Each cell: median over rounds (min-max). Ratios: median of same-round ratios to"
        "\n   Scrapy's built-in (min-max); 'ok' when within the tolerance above."
    )


def dead_sites(args: argparse.Namespace) -> None:
    print(
        f"\n2. Dead sites with the defaults (scrapy_rep add-on, memory store, REP_HOLD_TIMEOUT"
        f" 900): 20 live sites + 10 dead (5 refused, 5 unresolvable); cap {args.dead_cap:g} s"
    )
    refused = free_port()
    dead = [
        *(
            Site(f"site9{n:04d}.test", "refused", f"http://site9{n:04d}.test:{refused}/", None, ())
            for n in range(5)
        ),
        *(
            Site(f"nxdomain9{n:04d}.test", "nxdomain", f"http://nxdomain9{n:04d}.test/", None, ())
            for n in range(5)
        ),
    ]
    with serve(40) as served:
        live = [s for s in served.sites if s.kind in LIVE][:20]
        for variant in variants(0, only=[REP]):
            settings = {k: v for k, v in variant.settings.items() if k != "REP_HOLD_TIMEOUT"}
            with tempfile.TemporaryDirectory(prefix="bench-broad-dead-") as tmp:
                data = crawl([*live, *dead], settings, args.dead_cap, Path(tmp))
            if isinstance(data, str):
                print(f"   {variant.name:<22} still open at the cap: {data}")
                continue
            robots = data["robots_requests"]
            print(
                f"   {variant.name:<22} last page at {data['last_page']:.1f} s, closed at"
                f" {data['closed']:.1f} s ({data['pages']} pages; robots.txt requests to"
                f" dead sites: {sum(robots.get(s.netloc, 0) for s in dead)})"
            )


def _positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        value = kind(text)
        if value < 1:
            raise argparse.ArgumentTypeError(f"{text}: must be at least 1")
        return value

    return parse


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=_positive(int), nargs="+", default=[2000, 10000])
    parser.add_argument(
        "--rounds", type=_positive(int), nargs="+", default=[3, 2], help="per size (one: all)"
    )
    parser.add_argument("--concurrency", type=_positive(int), default=100)
    parser.add_argument("--per-domain", type=_positive(int), default=2)
    parser.add_argument("--hold-timeout", type=float, default=20.0)
    parser.add_argument("--timeout", type=float, default=900.0, help="cap per crawl, seconds")
    parser.add_argument("--dead", action="store_true", help="also part 2, the dead sites")
    parser.add_argument("--dead-only", action="store_true")
    parser.add_argument("--dead-cap", type=float, default=120.0)
    parser.add_argument("--quick", action="store_true", help="200 sites, 1 round")
    parser.add_argument("--old", type=Path, help="directory holding an earlier scrapy_rep")
    parser.add_argument("--variants", nargs="+", default=[], help="run only these variants")
    parser.add_argument(
        "--gc-threshold",
        type=_positive(int),
        help="gc.set_threshold(N) in every crawl process (Python's default: 700)",
    )
    parser.add_argument(
        "--gc-promoted",
        action="store_true",
        help="print what each crawl's young GC collections promote to the oldest generation",
    )
    parser.add_argument(
        "--keep", type=Path, help="write each crawl's result (timeline included) to this directory"
    )
    args = parser.parse_args(argv)
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    if args.quick:
        args.sizes, args.rounds, args.hold_timeout = [200], [1], 10.0
    if len(args.rounds) == 1:
        args.rounds = args.rounds * len(args.sizes)
    if len(args.rounds) != len(args.sizes):
        parser.error("give --rounds once, or once per size")
    import scrapy

    print(
        f"Scrapy {scrapy.__version__}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs,"
        f" load average {os.getloadavg()[0]:.1f} at start"
    )
    if not args.dead_only:
        broad(args)
    if args.dead or args.dead_only:
        dead_sites(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

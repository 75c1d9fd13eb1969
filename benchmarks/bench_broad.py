"""Broad-crawl benchmark: thousands of sites, Scrapy's broad-crawl settings.

Run from the repository root::

    python benchmarks/bench_broad.py                      # 2,000 sites, 3 rounds, 64 and 256
    python benchmarks/bench_broad.py --sites 500 --rounds 2 --concurrency 64
    python benchmarks/bench_broad.py --quick              # smoke run, about a minute
    python benchmarks/bench_broad.py --dead-only --dead-cap 1000   # only the dead-site part
    python benchmarks/bench_broad.py --old ../old-checkout --variants \
        "ROBOTSTXT_OBEY=False" "scrapy_rep memory" "scrapy_rep (old)"  # against another version

Sites: one Twisted server on 127.0.0.1 (``_broad_server.py``, own process) answers every site;
the crawl resolves ``site00001.test`` … to 127.0.0.1 (``_broad_resolver.py``), so each site is
its own origin and download slot, as in a real broad crawl. Of the sites, 80 % serve a real
robots.txt (files of ``tests/data/corpus_sample`` that allow the crawler's pages, reused in a
seeded order), 10 % have none (404), 5 % answer 500 or 503 to everything, forever, and 5 % are
dead: half on a port nothing listens on (connection refused), half a name that does not resolve.
A live site has 5 pages: its home page (the start URL) and 4 pages it links to.

1. Throughput. Variants: ``ROBOTSTXT_OBEY = False``, Scrapy's built-in middleware (Protego),
   scrapy_rep with the memory store and with a SQLite store (a fresh file per crawl); scrapy_rep
   with ``REP_HOLD_TIMEOUT = --hold-timeout`` so requests held for the 5xx and dead sites are
   dropped and the crawl can end. Each crawl runs in its own process (``_broad_crawl.py``);
   every round runs every (concurrency, variant) once, interleaved, and a ratio is the median
   over rounds of the variant / ``ROBOTSTXT_OBEY = False`` in the same round, so drift of a
   shared machine between rounds cancels. Columns: pages/s from ``spider_opened`` to the last
   page (every variant fetches the same pages: the live sites' 5 each; a mismatch is shown);
   CPU seconds of the crawl process; its peak RSS; robots.txt requests per live site (1
   expected; 5xx and dead sites are retried by scrapy_rep, shown apart); median and p95 over
   live sites of the time from the site's first request to its first page; the tail, from the
   last page to the spider's close (what held requests cost); downloads (pages, robots.txt,
   errors), CPU per download, and start requests taken in the first second. Target: pages/s
   >= 0.95 of ``ROBOTSTXT_OBEY = False``.
   ``--old SRC`` adds "scrapy_rep (old)": the memory-store variant with the ``scrapy_rep``
   package found in SRC (a checkout of an earlier commit), interleaved with the others;
   ``--variants`` runs only the variants named (the baseline is always run).
2. Dead sites with the defaults. scrapy_rep (memory store) with its default settings on 20 live
   sites plus 10 dead ones: when the last page arrived and when the spider closed, or "> cap"
   when it was still open at ``--dead-cap`` seconds (it is then sent SIGINT, then killed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench_crawl import OURS as CRAWL_OURS
from bench_crawl import free_port, server_process

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "benchmarks"
CORPUS = ROOT / "tests" / "data" / "corpus_sample"
USER_AGENT = "benchbot/1.0 (+http://127.0.0.1/bot)"
TOKEN = "benchbot"
PAGES_PER_SITE = 5
PAGE_PATHS = ["/", *(f"/page/{n}" for n in range(1, PAGES_PER_SITE))]
# Mix of sites: (kind, share). "refused" and "nxdomain" never reach the server.
MIX = [("ok", 0.80), ("404", 0.10), ("500", 0.025), ("503", 0.025), ("refused", 0.025)]
LIVE = ("ok", "404")

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
OURS: dict[str, Any] = {
    **CRAWL_OURS,
    # What the add-on enables too: start requests taken lazily while robots.txt is resolved.
    "SPIDER_MIDDLEWARES": {"scrapy_rep.StartIntakeMiddleware": 10},
}
BASELINE = "ROBOTSTXT_OBEY=False"


@dataclass(frozen=True)
class Site:
    host: str
    kind: str
    url: str
    robots: str | None  # file served as robots.txt ("ok" sites)

    @property
    def netloc(self) -> str:
        """How the crawl names the site (host:port), as ``_broad_crawl.py`` reports it."""
        return urlsplit(self.url).netloc


@dataclass(frozen=True)
class Variant:
    name: str
    settings: dict[str, Any]
    sqlite: bool = False
    #: Where the scrapy_rep package it runs comes from (None: this checkout).
    source: Path | None = None


@dataclass
class Run:
    """One crawl's result (``_broad_crawl.py``), or ``error`` when it failed."""

    data: dict[str, Any]
    error: str | None = None

    def get(self, key: str) -> Any:
        return self.data[key]


# -- sites and server ---------------------------------------------------------------------------


def robots_bodies() -> list[Path]:
    """Corpus files that allow every page of a site to both parsers.

    Every variant then fetches the same pages, so pages/s compare like with like; the files are
    still real ones (groups for other bots, disallowed paths elsewhere, comments, sitemaps...).
    Files above 500 KiB (stored gzip-compressed) are left out: the sample over-represents them.
    """
    from protego import Protego

    from scrapy_rep import RobotsTxt

    eligible = []
    for path in sorted(p for p in CORPUS.rglob("*") if p.is_file()):
        if path.suffix in (".gz", ".md"):
            continue
        body = path.read_bytes()
        ours, protego = RobotsTxt.parse(body), Protego.parse(body.decode("utf-8", "ignore"))
        urls = [f"http://site.test{p}" for p in PAGE_PATHS]
        if all(ours.allowed(u, TOKEN) and protego.can_fetch(u, USER_AGENT) for u in urls):
            eligible.append(path)
    return eligible


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
        robots = str(bodies[n % len(bodies)]) if kind == "ok" else None
        sites.append(Site(host, kind, url, robots))
    return sites


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released): connections are refused."""
    return free_port()


@contextlib.contextmanager
def broad_server(sites: dict[str, tuple[str, str | None]], tmp: Path) -> Iterator[int]:
    """Start ``_broad_server.py`` for ``{host: (kind, robots file)}``; yield its port."""
    config = tmp / "server.json"
    config.write_text(json.dumps({"sites": sites}), encoding="utf-8")
    args = [str(HERE / "_broad_server.py"), str(config)]
    with server_process(args, "broad-crawl server") as (started, _pid):
        yield int(started["port"])


@contextlib.contextmanager
def serve(count: int) -> Iterator[list[Site]]:
    """A server answering ``count`` sites; yields the sites (URLs carry the server's port)."""
    with tempfile.TemporaryDirectory(prefix="bench-broad-") as tmp:
        draft = plan_sites(count, 0, 0)
        served = {
            s.host: (s.kind, s.robots) for s in draft if s.kind not in ("refused", "nxdomain")
        }
        with broad_server(served, Path(tmp)) as port:
            yield plan_sites(count, port, closed_port())


# -- crawls -------------------------------------------------------------------------------------


def crawl(
    sites: Sequence[Site],
    settings: dict[str, Any],
    timeout: float,
    tmp: Path,
    source: Path | None = None,
) -> Run:
    """One crawl in its own process; on ``timeout`` it gets SIGINT, then is killed.
    ``source``: the directory whose ``scrapy_rep`` it runs (None: this checkout)."""
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
            return Run({}, f"> {timeout:g} s, {ended}")
    if proc.returncode != 0 or not result.exists():
        tail = log.read_text("utf-8", "replace").splitlines()[-5:]
        return Run({}, f"exit {proc.returncode}: " + " | ".join(tail))
    return Run(json.loads(result.read_text(encoding="utf-8")))


def variants(
    hold_timeout: float, old: Path | None = None, only: Sequence[str] = ()
) -> list[Variant]:
    ours = {**OURS, "REP_HOLD_TIMEOUT": hold_timeout}
    table = [
        Variant(BASELINE, {"ROBOTSTXT_OBEY": False}),
        Variant("Scrapy built-in", {"ROBOTSTXT_OBEY": True}),
        Variant("scrapy_rep memory", ours),
        Variant("scrapy_rep sqlite", ours, sqlite=True),
    ]
    if old is not None:
        table.insert(3, Variant("scrapy_rep (old)", ours, source=old.resolve()))
    return [v for v in table if not only or v.name in only or v.name == BASELINE]


def run_variant(variant: Variant, sites: Sequence[Site], concurrency: int, timeout: float) -> Run:
    with tempfile.TemporaryDirectory(prefix="bench-broad-crawl-") as tmp:
        settings = {**variant.settings, "CONCURRENT_REQUESTS": concurrency}
        if variant.sqlite:
            # A fresh file per crawl: a warm store would skip the robots.txt fetches.
            settings["REP_STORE"] = f"sqlite:///{tmp}/robots.sqlite3"
        return crawl(sites, settings, timeout, Path(tmp), variant.source)


# -- report -------------------------------------------------------------------------------------


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _summary(run: Run, sites: Sequence[Site]) -> dict[str, float]:
    robots = run.get("robots_requests")
    per_live = [robots.get(s.netloc, 0) for s in sites if s.kind in LIVE]
    per_failing = [robots.get(s.netloc, 0) for s in sites if s.kind not in LIVE]
    latency = run.get("first_page_latency")
    return {
        "pages": run.get("pages"),
        "rate": run.get("pages") / max(run.get("last_page"), 1e-9),
        "cpu": run.get("cpu"),
        "rss": run.get("maxrss_kib") / 1024,
        "robots_live": statistics.mean(per_live) if per_live else 0.0,
        "robots_live_max": max(per_live, default=0),
        "robots_failing": statistics.mean(per_failing) if per_failing else 0.0,
        "p50": statistics.median(latency) if latency else float("nan"),
        "p95": _pct(latency, 0.95),
        "tail": run.get("closed") - run.get("last_page"),
        # Every download the crawl made (pages, robots.txt, errors): CPU per download says
        # whether a variant costs more per download or only makes more downloads.
        "downloads": run.get("stats").get("downloader/request_count", 0),
        "cpu_ms_per_download": 1000
        * run.get("cpu")
        / max(1, run.get("stats").get("downloader/request_count", 0)),
        "started_1s": _pulled_by(run.get("timeline"), 1.0),
    }


def _pulled_by(timeline: list[list[float]], seconds: float) -> float:
    """Start requests the spider had given by ``seconds`` after spider_opened."""
    rows = [row for row in timeline if row[0] <= seconds]
    return rows[-1][1] if rows else 0.0


def _median_ratio(
    mine: list[dict[str, float] | None], base: list[dict[str, float] | None], key: str
) -> str:
    ratios = [m[key] / b[key] for m, b in zip(mine, base, strict=True) if m and b and b[key]]
    return f"{statistics.median(ratios):.2f}" if ratios else "n/a"


def report(
    concurrency: int,
    table: list[Variant],
    results: dict[str, list[dict[str, float] | None]],
    errors: dict[str, list[str]],
    expected: int,
) -> None:
    print(f"\nCONCURRENT_REQUESTS = {concurrency}")
    print(
        f"   {'variant':<20}{'pages/s':>8}{'ratio':>7}{'CPU s':>7}{'ratio':>7}{'RSS MiB':>9}"
        f"{'robots/site':>12}{'5xx+dead':>9}{'1st page p50':>13}{'p95':>7}{'tail s':>8}"
        f"{'downloads':>10}{'CPU ms/dl':>10}{'starts@1s':>10}"
    )
    base = results[BASELINE]
    for variant in table:
        runs = [r for r in results[variant.name] if r]
        if not runs:
            print(f"   {variant.name:<20}{'n/a':>8}   {'; '.join(errors[variant.name])}")
            continue

        def med(key: str, runs: list[dict[str, float]] = runs) -> float:
            return statistics.median(r[key] for r in runs)

        robots = f"{med('robots_live'):.2f}/{max(r['robots_live_max'] for r in runs):.0f}"
        print(
            f"   {variant.name:<20}{med('rate'):>8.0f}"
            f"{_median_ratio(results[variant.name], base, 'rate'):>7}"
            f"{med('cpu'):>7.1f}{_median_ratio(results[variant.name], base, 'cpu'):>7}"
            f"{med('rss'):>9.0f}{robots:>12}{med('robots_failing'):>9.1f}"
            f"{med('p50'):>13.2f}{med('p95'):>7.2f}{med('tail'):>8.1f}"
            f"{med('downloads'):>10.0f}{med('cpu_ms_per_download'):>10.2f}"
            f"{med('started_1s'):>10.0f}"
        )
        wrong = sorted({int(r["pages"]) for r in runs if r["pages"] != expected})
        if wrong or errors[variant.name]:
            print(f"      ! pages {wrong} (expected {expected}); {'; '.join(errors[variant.name])}")


def throughput(args: argparse.Namespace) -> None:
    table = variants(args.hold_timeout, args.old, args.variants)
    with serve(args.sites) as sites:
        counts = {k: sum(s.kind == k for s in sites) for k, _ in [*MIX, ("nxdomain", 0)]}
        expected = PAGES_PER_SITE * sum(s.kind in LIVE for s in sites)
        mix = ", ".join(f"{v} {k}" for k, v in counts.items())
        print(
            f"\n1. Throughput: {args.sites} sites ({mix}),"
            f" {expected} pages; {args.rounds} round(s); scrapy_rep REP_HOLD_TIMEOUT ="
            f" {args.hold_timeout:g}"
        )
        results: dict[tuple[int, str], list[dict[str, float] | None]] = {}
        errors: dict[tuple[int, str], list[str]] = {}
        for round_no in range(1, args.rounds + 1):
            for concurrency in args.concurrency:
                for variant in table:
                    run = run_variant(variant, sites, concurrency, args.timeout)
                    key = (concurrency, variant.name)
                    errors.setdefault(key, []).extend([run.error] if run.error else [])
                    summary = _summary(run, sites) if run.error is None else None
                    results.setdefault(key, []).append(summary)
                    print(f"   round {round_no}: {concurrency} {variant.name} done", flush=True)
            # Tables after every round: a long run that must be cut short still reports.
            print(f"\nAfter round {round_no} of {args.rounds}:")
            for concurrency in args.concurrency:
                report(
                    concurrency,
                    table,
                    {v.name: results[concurrency, v.name] for v in table},
                    {v.name: errors[concurrency, v.name] for v in table},
                    expected,
                )
    print(
        "   ratios: median of same-round ratios to ROBOTSTXT_OBEY=False (target pages/s >= 0.95)."
        "\n   robots/site: mean/max robots.txt requests per live site; 5xx+dead: mean per failing"
        "\n   site. 1st page: seconds from a site's first request to its first page. tail: seconds"
        "\n   from the last page to the close (scrapy_rep: requests held for failing sites)."
        "\n   downloads: every request the downloader made (pages, robots.txt, errors); CPU ms/dl:"
        "\n   crawl CPU per download; starts@1s: start requests taken in the first second."
    )


def dead_sites(args: argparse.Namespace) -> None:
    print(
        f"\n2. Dead sites with the defaults (scrapy_rep: memory store, REP_HOLD_TIMEOUT 900):"
        f" 20 live sites + 10 dead (5 refused, 5 unresolvable); cap {args.dead_cap:g} s"
    )
    refused = closed_port()
    dead = [
        *(
            Site(f"site9{n:04d}.test", "refused", f"http://site9{n:04d}.test:{refused}/", None)
            for n in range(5)
        ),
        *(
            Site(f"nxdomain9{n:04d}.test", "nxdomain", f"http://nxdomain9{n:04d}.test/", None)
            for n in range(5)
        ),
    ]
    with serve(40) as sites:
        live = [s for s in sites if s.kind in LIVE][:20]
        for variant in variants(0)[:3]:
            settings = {k: v for k, v in variant.settings.items() if k != "REP_HOLD_TIMEOUT"}
            settings["CONCURRENT_REQUESTS"] = 64
            with tempfile.TemporaryDirectory(prefix="bench-broad-dead-") as tmp:
                run = crawl([*live, *dead], settings, args.dead_cap, Path(tmp))
            if run.error is not None:
                print(f"   {variant.name:<20} still open at the cap: {run.error}")
                continue
            robots = run.get("robots_requests")
            print(
                f"   {variant.name:<20} last page at {run.get('last_page'):.1f} s, closed at"
                f" {run.get('closed'):.1f} s ({run.get('pages')} pages; robots.txt requests to"
                f" dead sites: {sum(robots.get(s.netloc, 0) for s in dead)})"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--hold-timeout", type=float, default=20.0)
    parser.add_argument("--timeout", type=float, default=900.0, help="cap per crawl, seconds")
    parser.add_argument("--dead-cap", type=float, default=120.0)
    parser.add_argument("--dead-only", action="store_true")
    parser.add_argument("--skip-dead", action="store_true")
    parser.add_argument(
        "--quick", action="store_true", help="100 sites, 1 round, 64, hold 10 s, cap 30 s"
    )
    parser.add_argument("--old", type=Path, help="directory holding an earlier scrapy_rep")
    parser.add_argument("--variants", nargs="+", default=[], help="run only these variants")
    args = parser.parse_args(argv)
    if args.quick:
        args.sites, args.rounds, args.concurrency = 100, 1, [64]
        args.hold_timeout, args.dead_cap = 10.0, 30.0
    if args.sites < 20 or args.rounds < 1 or min(args.concurrency) < 1:
        parser.error("need --sites >= 20, --rounds >= 1, --concurrency >= 1")
    import scrapy

    print(
        f"Scrapy {scrapy.__version__}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs,"
        f" load average {os.getloadavg()[0]:.1f} at start"
    )
    if not args.dead_only:
        throughput(args)
    if not args.skip_dead:
        dead_sites(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

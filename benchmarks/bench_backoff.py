"""A site that stops answering, measured: how many attempts reach it, server-side.

    python benchmarks/bench_backoff.py [--quick] [--scenario NAME]...

Real crawls (``tests/_crawl.py``, one subprocess each) of 30 pages of a site ``a`` that stops
answering beside 20 pages of a healthy site ``b`` (``tests/_servers.py``), with Scrapy's
built-in robots.txt middleware (``ROBOTSTXT_OBEY``, no add-on) and with scrapy-rep
(``scrapy_rep.Addon``), both at their default settings but ``DOWNLOAD_TIMEOUT`` (5 s):

- ``reset``: every page of ``a`` resets its connection;
- ``timeout``: every page of ``a`` hangs (never answered: the download times out);
- ``fleet``: the ``reset`` case crawled by 3 processes at once, the pages split between them;
  scrapy-rep's processes share one throw-away redis-server (``REP_STORE``);
- ``alone``: ``b`` without ``a`` (one process and three), the healthy site's reference time;
- ``recover``: the ``reset`` case, but ``a`` answers again 20 s after its first page request.

Columns: attempts at ``a`` (the server's count of page requests; ratio to the built-in's),
pages of ``a`` accounted for (fetched, plus distinct URLs whose errback was called, plus
``robotstxt/held_kept_for_next_run``), pages of ``b`` fetched (answered 200, server-side),
seconds from spider_opened to the end of the crawl (``elapsed_time_seconds``) and to ``b``'s
last page (the slowest process's for a fleet), ``b``'s last page against ``b`` alone,
``retry/count``, ``robotstxt/pause/probes``, the close reason. ``--quick`` shortens the
delays (``REP_PAUSE_DELAY`` 0.5 s, ``REP_PAUSE_GIVE_UP_AFTER`` 4 s, ``DOWNLOAD_TIMEOUT`` 1 s,
as ``tests/test_backoff.py``) for a smoke run; the defaults take about 5 minutes.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import scrapy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _crawl import CrawlFailed, CrawlResult, run_crawl  # noqa: E402
from _redis_server import RedisServer  # noqa: E402
from _servers import Reply, ScriptedServer  # noqa: E402

FAILING, HEALTHY, FLEET = 30, 20, 3
HOSTS = {"a.test": "127.0.0.1", "b.test": "127.0.0.1"}
VARIANTS: dict[str, dict[str, Any]] = {
    "built-in": {"ROBOTSTXT_OBEY": True},
    "scrapy-rep": {"ROBOTSTXT_OBEY": True, "ADDONS": {"scrapy_rep.Addon": 0}},
}
FULL: dict[str, Any] = {"DOWNLOAD_TIMEOUT": 5}
QUICK: dict[str, Any] = {
    "REP_PAUSE_DELAY": 0.5,
    "REP_PAUSE_GIVE_UP_AFTER": 4,
    "DOWNLOAD_TIMEOUT": 1,
}
FAILURES = {"reset": Reply(reset=True), "timeout": Reply(hang=True)}
SCENARIOS = ("alone", "reset", "timeout", "fleet", "recover")
#: ``recover``: a resets every connection for this long after its first page request, then
#: answers (the full run; ``--quick``: 3 s).
OUTAGE, QUICK_OUTAGE = 20.0, 3.0


@dataclass
class Row:
    scenario: str
    variant: str
    processes: int
    attempts: int | None  # page requests the failing site saw; None: no failing site
    accounted: int
    fetched: int
    errbacks: int
    kept: int
    healthy: int
    end: float
    healthy_last: float
    retries: int
    probes: int
    close: str
    notes: list[str]


def _pages(server: ScriptedServer, host: str, numbers: Sequence[int]) -> list[str]:
    return [server.url(f"/page/{i}", host=host) for i in numbers]


def _of(urls: Sequence[str | None], host: str) -> list[str]:
    return [u for u in urls if u is not None and f"//{host}:" in u]


def _run(
    scenario: str,
    variant: str,
    processes: int,
    failure: str | None,
    delays: dict[str, Any],
    outage: float | None = None,
) -> Row:
    """One crawl (``processes`` at once); ``outage``: the failure ends that many seconds after
    the failing site's first page request."""
    a, b = ScriptedServer.start(), ScriptedServer.start()
    timer: threading.Timer | None = None
    try:
        for server in (a, b):
            server.robots("User-agent: *\nAllow: /\n")
        if failure is not None:
            a.outage(FAILURES[failure])
        if outage is not None:
            timer = threading.Timer(outage, a.outage, (None,))
            a.when(lambda: a.count("/page/", prefix=True) > 0, timer.start, timeout=60)
        with tempfile.TemporaryDirectory(prefix="bench-backoff-") as tmp:
            redis = None
            if processes > 1 and variant == "scrapy-rep":
                redis = RedisServer.start(Path(tmp, "redis"))
            try:

                def member(index: int) -> CrawlResult | str:
                    settings: dict[str, Any] = {**VARIANTS[variant], **delays}
                    if processes > 1:
                        name = f"member{index}"
                        settings["USER_AGENT"] = f"{name}/1.0 (+https://test.example/{name})"
                    if redis is not None:
                        settings["REP_STORE"] = redis.url
                    mine = [i for i in range(FAILING) if i % processes == index]
                    starts = _pages(a, "a.test", mine) if failure is not None else []
                    starts += _pages(
                        b, "b.test", [i for i in range(HEALTHY) if i % processes == index]
                    )
                    try:
                        return run_crawl(starts, settings, hosts=HOSTS, timeout=400)
                    except CrawlFailed as exc:  # a crawl that did not end: reported, not hidden
                        return f"member {index}: {str(exc).splitlines()[0]}"

                with ThreadPoolExecutor(processes) as pool:
                    outcomes = list(pool.map(member, range(processes)))
            finally:
                if redis is not None:
                    redis.close()
        return _row(scenario, variant, processes, failure, a, b, outcomes)
    finally:
        if timer is not None:
            timer.cancel()
        a.close()
        b.close()


def _row(
    scenario: str,
    variant: str,
    processes: int,
    failure: str | None,
    a: ScriptedServer,
    b: ScriptedServer,
    outcomes: list[CrawlResult | str],
) -> Row:
    notes = [o for o in outcomes if isinstance(o, str)]
    results = [o for o in outcomes if not isinstance(o, str)]
    errbacks = [u for r in results for u in _of(r.errback_urls, "a.test")]
    if len(errbacks) != len(set(errbacks)):
        notes.append(f"{len(errbacks) - len(set(errbacks))} errback(s) of a told twice")
    kept = sum(r.stat("robotstxt/held_kept_for_next_run") for r in results)
    fetched = len({s.path for s in a.seen("/page/", prefix=True) if s.status == 200})
    accounted = fetched + len(set(errbacks)) + kept
    if failure is not None and accounted != FAILING:
        notes.append(
            f"pages of a accounted for: {fetched} fetched + {len(set(errbacks))} errbacks "
            f"+ {kept} kept"
        )
    healthy = {s.path for s in b.seen("/page/", prefix=True) if s.status == 200}
    healthy_times = [
        t
        for r in results
        for url, t in zip(r.responses, r.response_times, strict=True)
        if "//b.test:" in url
    ]
    tracebacks = sum("Traceback" in r.log for r in results)
    if tracebacks:
        notes.append(f"a Traceback in the log of {tracebacks} process(es)")
    a_answered = sum(1 for r in results for url in r.responses if "//a.test:" in url)
    if failure is not None and a_answered != fetched:
        notes.append(f"{a_answered} response(s) of a reached the spider, {fetched} answered")
    return Row(
        scenario=scenario,
        variant=variant,
        processes=processes,
        attempts=None if failure is None else a.count("/page/", prefix=True),
        accounted=accounted,
        fetched=fetched,
        errbacks=len(set(errbacks)),
        kept=kept,
        healthy=len(healthy),
        end=max((float(r.stat("elapsed_time_seconds")) for r in results), default=float("nan")),
        healthy_last=max(healthy_times, default=float("nan")),
        retries=sum(r.stat("retry/count") for r in results),
        probes=sum(r.stat("robotstxt/pause/probes") for r in results),
        close=",".join(sorted({str(r.close_reason) for r in results})) or "-",
        notes=notes,
    )


def _print(rows: list[Row]) -> None:
    builtin = {(r.scenario, r.processes): r.attempts for r in rows if r.variant == "built-in"}
    alone = {(r.variant, r.processes): r.healthy_last for r in rows if r.scenario == "alone"}
    header = (
        f"{'scenario':<8} {'variant':<10} {'proc':>4} {'attempts at a':>16} "
        f"{'a accounted':>14} {'b fetched':>9} {'end s':>6} {'b last s':>8} "
        f"{'vs b alone':>10} {'retry/count':>11} {'probes':>6}  close"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        attempts = "-"
        if r.attempts is not None:
            attempts = str(r.attempts)
            reference = builtin.get((r.scenario, r.processes))
            if r.variant != "built-in" and reference:
                attempts += f" ({r.attempts / reference:.2f}x)"
        base = alone.get((r.variant, r.processes))
        versus = "-" if r.scenario == "alone" or not base else f"{r.healthy_last / base:.2f}x"
        accounted = "-"
        if r.attempts is not None:
            accounted = f"{r.accounted} ({r.fetched}f+{r.errbacks}e+{r.kept}k)"
        print(
            f"{r.scenario:<8} {r.variant:<10} {r.processes:>4} {attempts:>16} "
            f"{accounted:>14} {f'{r.healthy}/{HEALTHY}':>9} {r.end:>6.1f} "
            f"{r.healthy_last:>8.2f} {versus:>10} {r.retries:>11} {r.probes:>6}  {r.close}"
        )
        for note in r.notes:
            print(f"    ! {note}")
    print(
        "a accounted: distinct pages of a fetched (f) + whose errback was called (e) + "
        "robotstxt/held_kept_for_next_run (k); ratios: to the built-in's attempts, "
        "and b's last page to b crawled alone"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="shortened delays (a smoke run)")
    parser.add_argument("--scenario", choices=SCENARIOS, action="append")
    args = parser.parse_args()
    delays = QUICK if args.quick else FULL
    chosen = args.scenario or list(SCENARIOS)
    print(
        f"Scrapy {scrapy.__version__}, Python {platform.python_version()}; "
        f"{FAILING} pages of a, {HEALTHY} of b; settings: {delays}",
        flush=True,
    )
    plan: list[tuple[str, str, int, str | None]] = []
    for scenario in chosen:
        for variant in VARIANTS:
            if scenario == "alone":
                plan += [("alone", variant, 1, None), ("alone", variant, FLEET, None)]
            elif scenario in ("fleet", "recover"):
                plan.append((scenario, variant, FLEET if scenario == "fleet" else 1, "reset"))
            else:
                plan.append((scenario, variant, 1, scenario))
    rows: list[Row] = []
    for scenario, variant, processes, failure in plan:
        started = time.monotonic()
        outage = None if scenario != "recover" else QUICK_OUTAGE if args.quick else OUTAGE
        rows.append(_run(scenario, variant, processes, failure, delays, outage))
        print(
            f"  {scenario} / {variant} / {processes} process(es): "
            f"{time.monotonic() - started:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    print()
    _print(rows)


if __name__ == "__main__":
    main()

"""What "go" costs per request: the gate, the final gate and the guard's last look.

    python benchmarks/bench_process_request.py                    # this checkout, 5 runs
    python benchmarks/bench_process_request.py --old /tmp/before  # and an earlier one, interleaved
    python benchmarks/bench_process_request.py --where            # where held memory comes from
    python benchmarks/bench_process_request.py --quick            # smoke run: 1 run, few rounds

An allowed request, as a crawl sends it: fresh (a new ``Request`` each, with its own URL), through
the gate (``RobotsTxtMiddleware._on_scheduled``, the ``request_scheduled`` signal's handler), the
final gate (``process_request``, awaited through ``ensure_awaitable`` as Scrapy >= 2.14's
downloader calls it), Scrapy's ``UserAgentMiddleware`` (500: it sets the User-Agent header after
the final gate at 100) and the guard's last look (``RobotsTxtGuard.process_request`` at 950, its
``leaving`` the middleware's room's last look: served by the middleware, or set by its
``_hold_slots`` in trees before ``serve``, with ``REP_SLOT_CONCURRENCY = False``: the slots need
an engine). Without a declared purpose and with ``REP_USAGE_PURPOSES = ["train-ai"]``
(the origin's tdmrep.json known, reserving nothing). One origin whose robots.txt is known
(``User-agent: *`` / ``Disallow: /no``), a memory store, no engine.

Rows: the gate plus the final gate ("go" on a fresh request, the cost to keep), the
whole way with the User-Agent and the last look, each step alone (the steps before it untimed),
and the final gate on a request the gate did not see (a rule match there), each without and
with ``train-ai``; and ``Request(url)`` alone, the same code in both trees, for scale (how fast
the machine runs; its ratio says how much to trust the others). Times: CPU time
(``time.process_time``) of a round of 2,000 fresh requests (made, and put through the untimed
steps, outside the clock; the garbage collector on, as in a crawl, collected before each
round), per request; a row's time in a run is its best round. Allocations: ``tracemalloc``
blocks and bytes still held, and GC-tracked objects, after 10,000 fresh requests kept alive in
a list went through the steps, minus the same for 10,000 requests made alone; per request.
``--where`` also prints the lines that allocated what the steps hold (the requests made before
tracing starts; a block from a free list, a dict's say, is counted where it was first made).

``--old DIR`` measures an earlier checkout beside this one: each run starts one worker process
per tree (``PYTHONPATH=DIR`` for the old one, e.g. ``git worktree add /tmp/before <commit>``)
and asks them for one round of each row in turn, the two one after the other (which goes first
alternates), so that on a shared machine both see it as busy as it is then. The table gives
each tree's median over runs (min-max) and the median of same-run ratios. Without ``--old`` it
measures the ``scrapy_rep`` this Python imports (``PYTHONPATH=/tmp/before python
benchmarks/bench_process_request.py`` measures that tree). Where the trees differ (before
6ebc6fa the guard's ``leaving`` is set only when there is a pause or a slot to look at) the
script asks the tree, not its version; it prints which last look it measured. Needs Scrapy >=
2.14.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scrapy.utils.defer import ensure_awaitable

ORIGIN = "http://example.com"
#: Requests per timed round; rounds per row (the best counts); requests per allocation count.
TIMED = 2_000
ROUNDS = 15
BATCH = 10_000


# -- a worker: one process per tree --------------------------------------------------------------


@dataclass
class Steps:
    """One middleware with its guard, and the steps a request goes through, in order."""

    middleware: Any
    guard: Any
    user_agent: Any

    def gate(self, request: Any) -> None:
        self.middleware._on_scheduled(request)

    async def final_gate(self, request: Any) -> None:
        if await ensure_awaitable(self.middleware.process_request(request)) is not None:
            raise AssertionError(f"the final gate did not let {request} go")

    def set_user_agent(self, request: Any) -> None:
        self.user_agent.process_request(request)

    async def last_look(self, request: Any) -> None:
        if await ensure_awaitable(self.guard.process_request(request)) is not None:
            raise AssertionError(f"the last look did not let {request} go")


def _crawl_parts(purposes: list[str]) -> Steps:
    """A middleware knowing ``ORIGIN`` (and its tdmrep.json when ``purposes`` needs it), its
    guard with the last look the middleware gives it when the spider opens, and Scrapy's
    UserAgentMiddleware."""
    from scrapy.downloadermiddlewares.useragent import UserAgentMiddleware
    from scrapy.utils.test import get_crawler

    from scrapy_rep import RobotsTxtGuard, RobotsTxtMiddleware
    from scrapy_rep.core.policy import Fetch, Limits, record

    settings = {
        "ROBOTSTXT_OBEY": True,
        "DOWNLOADER_MIDDLEWARES": {"scrapy_rep.RobotsTxtGuard": 950},
        "REP_USAGE_PURPOSES": purposes,
        # The slots' wait needs an engine (in a crawl it is on).
        "REP_SLOT_CONCURRENCY": False,
    }
    crawler = get_crawler(settings_dict=settings)
    middleware = RobotsTxtMiddleware.from_crawler(crawler)
    now = middleware._clock.seconds()
    entry = record(None, Fetch("ok", 200), now, Limits())
    known = [(middleware._components.resolver, b"User-agent: *\nDisallow: /no\n")]
    known += [
        (used.resolver, b'[{"location": "/", "tdm-reservation": 0}]')
        for used in middleware._components.documents
    ]
    for resolver, body in known:
        cache = resolver._cache
        cache.install(ORIGIN, entry, cache.parse(entry, body, None), now)
    guard = RobotsTxtGuard.from_crawler(crawler)
    if hasattr(middleware, "_hold_slots"):
        # What _on_opened gives the guard. It reads the engine (Scrapy >= 2.19 raises while
        # there is none) for the slots' wait, off here: a stand-in, unused.
        crawler.engine = object()
        middleware._hold_slots(guard)
        crawler.engine = None
    return Steps(middleware, guard, UserAgentMiddleware.from_crawler(crawler))


_made = 0


def fresh(n: int) -> list[Any]:
    """``n`` new requests, each with a URL of its own."""
    from scrapy.http import Request

    global _made
    start, _made = _made, _made + n
    return [Request(f"{ORIGIN}/p{i}") for i in range(start, start + n)]


Flow = Callable[[Steps], list[Callable[[Any], Any]]]

#: Each row: the untimed steps before, the timed steps (both in a crawl's order).
FLOWS: dict[str, tuple[Flow, Flow]] = {
    "gate + final gate": (lambda s: [], lambda s: [s.gate, s.final_gate]),
    "gate + final gate + User-Agent + last look": (
        lambda s: [],
        lambda s: [s.gate, s.final_gate, s.set_user_agent, s.last_look],
    ),
    "  gate": (lambda s: [], lambda s: [s.gate]),
    "  final gate, after the gate": (lambda s: [s.gate], lambda s: [s.final_gate]),
    "  last look, after the rest": (
        lambda s: [s.gate, s.final_gate, s.set_user_agent],
        lambda s: [s.last_look],
    ),
    "final gate, not seen by the gate (a match)": (lambda s: [], lambda s: [s.final_gate]),
}

#: The row for scale: ``Request(url)`` alone.
SCALE = "Request(url) made, for scale"

#: Flows whose retained allocations are counted.
COUNTED = ("gate + final gate", "gate + final gate + User-Agent + last look")


async def through(steps: Sequence[Callable[[Any], Any]], requests: list[Any]) -> None:
    for request in requests:
        for step in steps:
            result = step(request)
            if result is not None:
                await result


async def time_flow(parts: Steps, name: str, rounds: int) -> float:
    """Best of ``rounds`` rounds of ``TIMED`` fresh requests: CPU ns per request."""
    before, timed = (flow(parts) for flow in FLOWS[name])
    best = float("inf")
    for _ in range(rounds):
        requests = fresh(TIMED)
        await through(before, requests)
        gc.collect()
        start = time.process_time()
        # As ``through``, inlined: the loop is part of what is timed.
        for request in requests:
            for step in timed:
                result = step(request)
                if result is not None:
                    await result
        best = min(best, time.process_time() - start)
        del requests
    return best / TIMED * 1e9


def time_made(rounds: int) -> float:
    """Best of ``rounds`` rounds of making ``TIMED`` requests: CPU ns per request (the same
    in both trees: how fast the machine runs at the time)."""
    best = float("inf")
    for _ in range(rounds):
        gc.collect()
        start = time.process_time()
        requests = fresh(TIMED)
        best = min(best, time.process_time() - start)
        del requests
    return best / TIMED * 1e9


def _held(snapshot: tracemalloc.Snapshot) -> tuple[int, int]:
    """Blocks and bytes ``snapshot`` holds, tracemalloc's own left out."""
    snapshot = snapshot.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    stats = snapshot.statistics("filename")
    return sum(s.count for s in stats), sum(s.size for s in stats)


async def retained(parts: Steps | None, name: str | None) -> dict[str, float]:
    """Blocks, bytes and GC-tracked objects still held per request after ``BATCH`` fresh
    requests went through ``name``'s steps (None: made alone), kept alive."""
    steps = [] if parts is None or name is None else [s for f in FLOWS[name] for s in f(parts)]
    await through(steps, fresh(200))  # first-time caches (origin keys, interned strings) filled
    gc.collect()
    tracemalloc.start(1)
    try:
        first = tracemalloc.take_snapshot()
        objects = len(gc.get_objects())
        requests = fresh(BATCH)
        await through(steps, requests)
        gc.collect()
        objects = len(gc.get_objects()) - objects
        last = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    (blocks0, bytes0), (blocks1, bytes1) = _held(first), _held(last)
    del requests
    return {
        "blocks": (blocks1 - blocks0) / BATCH,
        "bytes": (bytes1 - bytes0) / BATCH,
        "objects": objects / BATCH,
    }


async def where(parts: Steps, name: str, top: int) -> list[str]:
    """The ``top`` lines that allocated what ``name``'s steps still hold per request (the
    requests made before tracing starts)."""
    steps = [s for f in FLOWS[name] for s in f(parts)]
    await through(steps, fresh(200))
    requests = fresh(BATCH)
    gc.collect()
    tracemalloc.start(1)
    try:
        first = tracemalloc.take_snapshot()
        await through(steps, requests)
        gc.collect()
        last = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    ours = [tracemalloc.Filter(False, tracemalloc.__file__)]
    diff = last.filter_traces(ours).compare_to(first.filter_traces(ours), "lineno")
    lines = []
    for stat in diff[:top]:
        frame = stat.traceback[0]
        lines.append(
            f"{stat.count_diff / BATCH:6.2f} blocks {stat.size_diff / BATCH:7.1f} B"
            f"  {frame.filename}:{frame.lineno}"
        )
    del requests
    return lines


def rows() -> list[tuple[str, bool]]:
    """The timed rows: (flow, with train-ai), the scale row first."""
    return [(SCALE, False), *((name, p) for p in (False, True) for name in FLOWS)]


def label(row: tuple[str, bool]) -> str:
    return row[0] + (", train-ai" if row[1] else "")


async def counts(top_lines: int) -> dict[str, Any]:
    """The allocations of ``COUNTED``, and which scrapy_rep and last look were measured."""
    import scrapy_rep

    allocations: dict[str, dict[str, float]] = {}
    top: dict[str, list[str]] = {}
    alone = await retained(None, None)
    for purpose in (False, True):
        purposes = ["train-ai"] if purpose else []
        for name in COUNTED:
            counted = await retained(_crawl_parts(purposes), name)
            allocations[label((name, purpose))] = {k: v - alone[k] for k, v in counted.items()}
            if top_lines:
                top[label((name, purpose))] = await where(_crawl_parts(purposes), name, top_lines)
    leaving = _crawl_parts([]).guard.leaving
    return {
        "scrapy_rep": str(Path(scrapy_rep.__file__).parent),
        "last_look": getattr(leaving, "__qualname__", type(leaving).__name__),
        "allocations": allocations,
        "top": top,
    }


async def serve() -> None:
    """A run's worker: one timed round of a row per line asked (``{"row": [flow, train-ai]}``:
    CPU ns per request), or the counts (``{"counts": top lines}``), one JSON line each."""
    parts = {False: _crawl_parts([]), True: _crawl_parts(["train-ai"])}
    for line in sys.stdin:
        asked = json.loads(line)
        if "counts" in asked:
            answer: Any = await counts(asked["counts"])
        elif asked["row"][0] == SCALE:
            answer = time_made(1)
        else:
            name, purpose = asked["row"]
            answer = await time_flow(parts[purpose], name, 1)
        print(json.dumps(answer), flush=True)


# -- the runs, and the table --------------------------------------------------------------------


@dataclass
class Source:
    name: str
    path: Path | None  # None: the scrapy_rep this Python imports


class Worker:
    """A ``--serve`` process importing ``source``'s scrapy_rep."""

    def __init__(self, source: Source, log: Path) -> None:
        env = dict(os.environ)
        if source.path is not None:
            env["PYTHONPATH"] = os.pathsep.join(
                [str(source.path), *filter(None, [env.get("PYTHONPATH")])]
            )
        self.source, self.log = source, log
        self._stderr = log.open("w")
        self._proc = subprocess.Popen(
            [sys.executable, __file__, "--serve"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )

    def ask(self, asked: dict[str, Any]) -> Any:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(asked) + "\n")
        self._proc.stdin.flush()
        while True:
            line = self._proc.stdout.readline()
            if not line:
                tail = self.log.read_text("utf-8", "replace")[-3000:]
                raise SystemExit(f"{self.source.name}: its worker ended\n{tail}")
            if line.startswith(("{", "[")) or line[0].isdigit():
                return json.loads(line)

    def close(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        self._proc.wait()
        self._stderr.close()


def one_run(sources: list[Source], rounds: int, top_lines: int, flip: bool) -> list[Any]:
    """One run: a fresh worker per tree; each round asks every row of each worker, the two one
    after the other (their order alternating), so that both see the machine as it is then. A
    row's time is its best round."""
    with tempfile.TemporaryDirectory(prefix="bench-process-request-") as tmp:
        workers = [Worker(s, Path(tmp) / f"worker{i}.log") for i, s in enumerate(sources)]
        best: list[dict[str, float]] = [{} for _ in workers]
        try:
            for round_no in range(rounds):
                for i, row in enumerate(rows()):
                    order = list(range(len(workers)))
                    if (round_no + i + flip) % 2:
                        order.reverse()
                    for w in order:
                        ns = workers[w].ask({"row": row})
                        best[w][label(row)] = min(best[w].get(label(row), ns), ns)
            results = []
            for w, worker in enumerate(workers):
                counted = worker.ask({"counts": top_lines})
                results.append({**counted, "times": best[w]})
        finally:
            for worker in workers:
                worker.close()
    return results


def _spread(values: Sequence[float], fmt: str, unit: str = "") -> str:
    middle = f"{statistics.median(values):{fmt}}{unit}"
    if len(values) == 1:
        return middle
    return f"{middle} ({min(values):{fmt}}-{max(values):{fmt}})"


def report(sources: list[Source], results: dict[str, list[dict[str, Any]]]) -> None:
    this = sources[0].name
    others = sources[1:]
    runs = len(results[this])
    width = 26
    print(f"\n   CPU ns per request, median of {runs} run(s) (min-max), each its best round")
    header = f"   {'':54}" + "".join(f"{s.name:>{width}}" for s in sources)
    header += "".join(f"{this + ' / ' + o.name:>{width}}" for o in others)
    print(header)
    for row in results[this][0]["times"]:
        line = f"   {row:54}"
        for source in sources:
            line += f"{_spread([r['times'][row] for r in results[source.name]], ',.0f'):>{width}}"
        for other in others:
            ratios = [
                mine["times"][row] / theirs["times"][row]
                for mine, theirs in zip(results[this], results[other.name], strict=True)
            ]
            line += f"{_spread(ratios, '.2f', 'x'):>{width}}"
        print(line)
    print(
        f"\n   still held per request after {BATCH:,} fresh requests (kept alive) went through,"
        "\n   minus the requests made alone: tracemalloc blocks / bytes, GC-tracked objects"
    )
    print(f"   {'':54}" + "".join(f"{s.name:>{width}}" for s in sources))
    for row in results[this][0]["allocations"]:
        line = f"   {row:54}"
        for source in sources:
            got = [r["allocations"][row] for r in results[source.name]]
            cell = " / ".join(
                f"{statistics.median(a[k] for a in got):.{d}f}"
                for k, d in (("blocks", 2), ("bytes", 0), ("objects", 2))
            )
            line += f"{cell:>{width}}"
        print(line)
    for source in sources:
        first = results[source.name][0]
        print(f"\n   {source.name}: {first['scrapy_rep']}, guard's last look: {first['last_look']}")
        for row, lines in first["top"].items():
            if lines:
                print(f"     where the memory held after '{row}' was allocated (first run):")
                for line in lines:
                    print(f"       {line}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, help="directory holding an earlier scrapy_rep")
    parser.add_argument("--runs", type=int, default=5, help="processes per tree (default 5)")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="best of, per row and run")
    parser.add_argument(
        "--where", type=int, nargs="?", const=8, default=0, help="top allocating lines"
    )
    parser.add_argument("--quick", action="store_true", help="1 run, 3 rounds")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(serve())
        return 0
    if args.quick:
        args.runs, args.rounds = 1, 3
    import scrapy

    sources = [Source("this", None)]
    if args.old is not None:
        sources.append(Source("old", args.old.resolve()))
    print(
        f"Scrapy {scrapy.__version__}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs,"
        f" load average {os.getloadavg()[0]:.1f} at start; {args.runs} run(s) per tree,"
        f" best of {args.rounds} rounds of {TIMED:,} fresh requests per row"
    )
    results: dict[str, list[dict[str, Any]]] = {s.name: [] for s in sources}
    for run in range(args.runs):
        for source, result in zip(
            sources, one_run(sources, args.rounds, args.where, bool(run % 2)), strict=True
        ):
            results[source.name].append(result)
        print(f"   run {run + 1} done", flush=True)
    print(f"   load average {os.getloadavg()[0]:.1f} at the end")
    report(sources, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the compliance record (REP_RECORD) costs a crawl, and its size per 1,000 pages.

Run from the repository root::

    python benchmarks/bench_record.py [--pages 2000] [--origins 20] [--repeat 5]

The crawl of ``bench_crawl.py``'s throughput part (``--pages`` URLs round-robin over
``--origins`` loopback origins, 10 % disallowed): ``ROBOTSTXT_OBEY = False`` (given only the
allowed URLs), Scrapy's built-in middleware, scrapy_rep, and scrapy_rep writing a record,
back to back in each of ``--repeat`` rounds. Ratios are medians of same-round ratios to the
baseline (pages per second of crawl, and per CPU-second of the crawl process). For the record:
its bytes per 1,000 requests decided (every file, the manifest included; robots.txt answers
are a few per origin), records per request, and how long ``scrapy robots-record check`` takes
per 1,000 decisions (median over rounds).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _crawl import CrawlFailed  # noqa: E402
from bench_crawl import (  # noqa: E402
    BASELINE,
    BUILTIN,
    OURS,
    ROBOTS,
    Variant,
    _Runs,
    _throughput_urls,
    bench_server,
    crawl,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--origins", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    import scrapy

    from scrapy_rep.storage.record import check

    print(f"Scrapy {scrapy.__version__}, Python {sys.version.split()[0]}")
    table = [
        Variant("ROBOTSTXT_OBEY=False", BASELINE),
        Variant("Scrapy built-in", BUILTIN),
        Variant("scrapy_rep", OURS),
        Variant("scrapy_rep + REP_RECORD", OURS),
    ]
    runs = {v.name: _Runs([], [], []) for v in table}
    sizes: list[float] = []
    per_request: list[float] = []
    checks: list[float] = []
    ips = [f"127.0.0.{i + 2}" for i in range(args.origins)]
    origins = [{"ip": ip, "robots": ROBOTS.format(ip=ip)} for ip in ips]
    with bench_server(origins) as (ports, _pid):
        urls = _throughput_urls(ips, ports, args.pages)
        allowed = [u for u in urls if "/private/" not in u]
        for _ in range(args.repeat):
            for variant in table:
                with tempfile.TemporaryDirectory(prefix="bench-record-") as tmp:
                    settings: dict[str, Any] = dict(variant.settings)
                    if variant.name.endswith("REP_RECORD"):
                        settings["REP_RECORD"] = tmp
                    todo = allowed if variant.settings is BASELINE else urls
                    run = runs[variant.name]
                    try:
                        result = crawl(todo, settings)
                    except CrawlFailed as exc:
                        run.error = str(exc).splitlines()[0]
                        continue
                    elapsed = float(result.stats["elapsed_time_seconds"])
                    run.rates.append(len(allowed) / elapsed)
                    run.cpu_rates.append(len(allowed) / max(result.cpu_time or elapsed, 1e-9))
                    if "REP_RECORD" in settings:
                        size = sum(p.stat().st_size for p in Path(tmp).iterdir())
                        started = time.perf_counter()
                        report = check([Path(tmp)])
                        took = time.perf_counter() - started
                        assert report.ok, report.failures[:3]
                        decided = report.decisions + report.not_judged
                        sizes.append(size / decided * 1000)
                        per_request.append(report.records / decided)
                        checks.append(took / decided * 1000)
    base = runs[table[0].name]
    print(f"\n{args.pages} URLs on {args.origins} origins, {args.repeat} rounds")
    print(f"   {'variant':<26}{'pages/s':>9}{'ratio':>7}{'pages/CPU-s':>13}{'ratio':>7}")
    for variant in table:
        run = runs[variant.name]
        if run.error is not None or len(run.rates) != len(base.rates):
            print(f"   {variant.name:<26}{'n/a':>9}   {run.error}")
            continue
        ratio = statistics.median(m / t for m, t in zip(run.rates, base.rates, strict=True))
        cpu = statistics.median(m / t for m, t in zip(run.cpu_rates, base.cpu_rates, strict=True))
        print(
            f"   {variant.name:<26}{statistics.median(run.rates):>9.0f}{ratio:>7.2f}"
            f"{statistics.median(run.cpu_rates):>13.0f}{cpu:>7.2f}"
        )
    ours, recorded = runs["scrapy_rep"], runs["scrapy_rep + REP_RECORD"]
    if ours.rates and len(ours.rates) == len(recorded.rates):
        wall = statistics.median(r / o for r, o in zip(recorded.rates, ours.rates, strict=True))
        cpu = statistics.median(
            r / o for r, o in zip(recorded.cpu_rates, ours.cpu_rates, strict=True)
        )
        print(f"   record on vs off: {wall:.2f} (wall), {cpu:.2f} (CPU)")
    if sizes:
        print(
            f"   record size: {statistics.median(sizes) / 1024:.0f} KiB per 1,000 requests decided"
            f" ({statistics.median(per_request):.2f} records per request); check:"
            f" {statistics.median(checks):.2f} s per 1,000 decisions"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

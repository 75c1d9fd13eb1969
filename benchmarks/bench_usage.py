"""What obeying usage preferences costs a crawl: CPU per page with a purpose declared or not.

Run from the repository root::

    python benchmarks/bench_usage.py                 # 2,000 pages on 20 origins, 5 rounds
    python benchmarks/bench_usage.py --pages 1000 --repeat 3

Real Scrapy crawls (``tests/_crawl.py``) of ``--pages`` URLs on ``--origins`` loopback origins
served by ``benchmarks/_server.py``, whose robots.txt carries ``Content-Usage`` and
``Content-Signal`` lines (every page is allowed and usable), with the add-on and:

- no purpose declared (the default: preferences are computed for ``response.meta`` only);
- ``REP_USAGE_PURPOSES = ["search"]`` (robots.txt preferences checked at the gate and per page);
- ``REP_USAGE_PURPOSES = ["train-ai"]`` (the same, and each origin's tdmrep.json fetched once).

CPU seconds of the crawl process per page; ratios are medians of same-round ratios over
``--repeat`` rounds, the variants run back to back in each round.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_crawl import ROBOTS  # noqa: E402
from bench_page import ADDON, crawl_cpu  # noqa: E402

USAGE_LINES = (
    "Content-Signal: search=yes, ai-input=yes, ai-train=yes\n"
    "Content-Usage: train-ai=y, search=y\n"
    "Content-Usage: /private/ train-ai=n\n"
)
VARIANTS: dict[str, dict[str, Any]] = {
    "no purpose": ADDON,
    "purpose search": {**ADDON, "REP_USAGE_PURPOSES": ["search"]},
    "purpose train-ai": {**ADDON, "REP_USAGE_PURPOSES": ["train-ai"]},
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--origins", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    import scrapy

    print(f"Scrapy {scrapy.__version__}, Python {sys.version.split()[0]}")
    ips = [f"127.0.0.{i + 2}" for i in range(args.origins)]
    # The usage lines go into the '*' group, before the other crawler's group.
    robots = ROBOTS.replace("Allow: /page/\n", "Allow: /page/\n" + USAGE_LINES)
    origins = [{"ip": ip, "robots": robots.format(ip=ip)} for ip in ips]
    print(f"{args.pages} URLs on {args.origins} origins, {args.repeat} rounds, one item per page")
    cpu = crawl_cpu(args, origins, VARIANTS)
    base = cpu["no purpose"]
    print(f"{'variant':<20}{'CPU per page':>14}{'/ no purpose':>14}")
    for name, runs in cpu.items():
        ratio = statistics.median(a / b for a, b in zip(runs, base, strict=True))
        print(f"{name:<20}{statistics.median(runs) * 1e6:>11.0f} µs{ratio:>14.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the page-level rules (``scrapy_rep.PageRobotsMiddleware``) cost.

Run from the repository root::

    python benchmarks/bench_page.py                  # per page + per crawl
    python benchmarks/bench_page.py --repeat 3 --pages 1000

1. Per page, in process: the middleware's whole work for one response (rules computed,
   stored on the meta, the callback's output filtered: 20 requests and 1 item) against the
   same output consumed without it; median over ``--rounds`` of the mean over many responses.
   Pages: the crawl benchmark's small page (no directives), a page with a 40 KiB head full of
   meta tags and ``noindex``, a 300 KiB page with ``nofollow`` and 200 links, and a PDF-like
   response with an ``X-Robots-Tag`` header.
2. Per crawl: real Scrapy crawls (``tests/_crawl.py``) of ``--pages`` URLs on ``--origins``
   loopback origins served by ``benchmarks/_server.py``, scrapy-rep through the add-on with
   the page level on, and with ``REP_PAGE_RULES = False`` (Scrapy's behaviour); CPU seconds of
   the crawl process per page, median of same-round ratios over ``--repeat`` rounds. The
   crawl's noise (about ±5-30 % per run on a shared VM) is larger than the middleware's cost,
   so the share of the crawl's CPU is also given as part 1's per-page cost over the crawl's
   CPU per page.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _crawl import run_crawl  # noqa: E402
from bench_crawl import FAST, ROBOTS, bench_server  # noqa: E402

ADDON: dict[str, Any] = {
    "ADDONS": {"scrapy_rep.Addon": 0},
    "ROBOTSTXT_OBEY": True,
    "USER_AGENT": "BenchBot/1.0",
}
SMALL_PAGE = (
    b"<html><head><title>bench</title></head><body><p>"
    + b"lorem ipsum " * 40
    + b"</p></body></html>"
)


def _pages() -> dict[str, tuple[bytes, dict[str, Any], str]]:
    metas = b"".join(b'<meta name="description" content="%d">' % i for i in range(1000))
    big_head = b"<html><head>" + metas + b'<meta name="robots" content="noindex"></head><body>'
    links = b"".join(b'<a href="/page/%d">%d</a>' % (i, i) for i in range(200))
    big = (
        b'<html><head><meta name="robots" content="nofollow"><title>t</title></head><body>'
        + b"<p>" + b"text " * 60000 + b"</p>" + links + b"</body></html>"
    )  # fmt: skip
    return {
        "small page, no directives": (SMALL_PAGE, {"Content-Type": "text/html"}, "html"),
        f"{len(big_head) // 1024} KiB head, 1,001 meta tags, noindex": (
            big_head + b"</body></html>",
            {"Content-Type": "text/html"},
            "html",
        ),
        f"{len(big) // 1024} KiB page, nofollow, 200 links": (
            big,
            {"Content-Type": "text/html"},
            "html",
        ),
        "PDF, X-Robots-Tag: noindex": (
            b"%PDF-1.4" + b"\0" * 20000,
            {"Content-Type": "application/pdf", "X-Robots-Tag": "noindex, nofollow"},
            "bytes",
        ),
    }


def per_page(rounds: int, count: int) -> dict[str, float]:
    """Seconds the middleware adds per response, per page kind (median of round means)."""
    from scrapy.http import HtmlResponse, Request, Response
    from scrapy.utils.test import get_crawler

    from scrapy_rep import PageRobotsMiddleware

    crawler = get_crawler(settings_dict=ADDON)
    middleware = PageRobotsMiddleware.from_crawler(crawler)
    output: list[Any] = [Request(f"http://a.test/page/{i}") for i in range(20)]
    output.append({"title": "x"})
    results = {}
    print(f"\n1. Per page: {count} responses x {rounds} rounds; 20 requests + 1 item per callback")
    print(f"   {'page':<40}{'with':>12}{'without':>12}{'added':>12}")
    for name, (body, headers, kind) in _pages().items():
        cls = HtmlResponse if kind == "html" else Response

        def responses(cls: Any = cls, body: bytes = body, headers: Any = headers) -> list[Any]:
            request = Request("http://a.test/", headers={"User-Agent": "BenchBot/1.0"})
            return [
                cls("http://a.test/", body=body, headers=headers, request=request.copy())
                for _ in range(count)
            ]

        def run_with(batch: list[Any]) -> None:
            for response in batch:
                middleware.process_spider_input(response)
                for _ in middleware.process_spider_output(response, [*output]):
                    pass

        def run_without(batch: list[Any]) -> None:
            for _response in batch:
                for _ in (x for x in [*output]):
                    pass

        with_times = _timed(run_with, responses, rounds, count)
        without_times = _timed(run_without, responses, rounds, count)
        added = statistics.median(w - o for w, o in zip(with_times, without_times, strict=True))
        results[name] = added
        print(
            f"   {name:<40}{_us(statistics.median(with_times)):>12}"
            f"{_us(statistics.median(without_times)):>12}{_us(added):>12}"
        )
    return results


def _timed(
    run: Callable[[list[Any]], None], make: Callable[[], list[Any]], rounds: int, count: int
) -> list[float]:
    times = []
    for _ in range(rounds):
        batch = make()  # fresh responses: the rules are cached on each one's meta
        start = time.process_time()
        run(batch)
        times.append((time.process_time() - start) / count)
    return times


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs"


def per_crawl(args: argparse.Namespace, small_cost: float) -> None:
    ips = [f"127.0.0.{i + 2}" for i in range(args.origins)]
    origins = [{"ip": ip, "robots": ROBOTS.format(ip=ip)} for ip in ips]
    variants = {"page rules on": ADDON, "REP_PAGE_RULES=False": {**ADDON, "REP_PAGE_RULES": False}}
    print(
        f"\n2. Per crawl: {args.pages} URLs on {args.origins} origins, {args.repeat} rounds,"
        " one item per page"
    )
    cpu = crawl_cpu(args, origins, variants)
    on, off = cpu["page rules on"], cpu["REP_PAGE_RULES=False"]
    ratio = statistics.median(a / b for a, b in zip(on, off, strict=True))
    print(f"   {'variant':<24}{'CPU per page':>14}")
    for name in variants:
        print(f"   {name:<24}{_us(statistics.median(cpu[name])):>14}")
    print(f"   CPU per page, on / off: {ratio:.3f} (median of same-round ratios)")
    share = small_cost / statistics.median(off)
    print(
        f"   the middleware's own cost per small page ({_us(small_cost)}) / the crawl's CPU per"
        f" page: {share:.2%} (target <= 2 %)"
    )


def crawl_cpu(
    args: argparse.Namespace, origins: list[dict[str, Any]], variants: dict[str, dict[str, Any]]
) -> dict[str, list[float]]:
    """CPU seconds per page of each variant's crawl (``--pages`` URLs on ``origins``), one
    value per round; every page must give its item."""
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    with bench_server(origins) as (ports, _pid):
        ips = [origin["ip"] for origin in origins]
        urls = [
            f"http://{ip}:{ports[ip]}/page/{n}"
            for n in range(args.pages // len(ips) + 1)
            for ip in ips
        ][: args.pages]
        for _ in range(args.repeat):
            for name, settings in variants.items():
                result = run_crawl(urls, {**FAST, **settings}, items=True, timeout=600)
                if len(result.items) != len(urls):
                    raise SystemExit(f"{name}: {len(result.items)} items of {len(urls)} pages")
                cpu[name].append((result.cpu_time or 0.0) / len(urls))
    return cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--origins", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--skip-crawl", action="store_true")
    args = parser.parse_args(argv)
    import scrapy

    print(f"Scrapy {scrapy.__version__}, Python {sys.version.split()[0]}")
    costs = per_page(args.rounds, args.count)
    if not args.skip_crawl:
        per_crawl(args, costs["small page, no directives"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

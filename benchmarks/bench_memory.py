"""Memory of the crawl side's per-origin state as a crawl meets more and more sites.

    python benchmarks/bench_memory.py [--origins 100000] [--memory-store-size N]

Drives the real parts (resolver, origin cache, origin keys, ``MemoryStore``) on a fake clock
with synthetic robots.txt answers (a few KiB of rules each, different per origin) and prints
the process RSS after 10,000, 20,000, 50,000 and 100,000 origins. Each variant runs in its
own process: the default bounds, and the store unbounded (the old ``MemoryStore``) for
comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

CHECKPOINTS = (10_000, 20_000, 50_000, 100_000)


def _rss_mib() -> float:
    # Current (not peak) resident set: the second field of statm, in pages.
    pages = int(Path("/proc/self/statm").read_text().split()[1])

    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _body(i: int) -> bytes:
    lines = ["User-agent: *"]
    lines += [f"Disallow: /site{i}/private/{n}/*.php$" for n in range(40)]
    lines += [f"Allow: /site{i}/public/{n}/" for n in range(40)]
    return ("\n".join(lines) + "\n").encode()


def measure(origins: int, store_size: int) -> list[tuple[int, float, int, int]]:
    from scrapy.http import Request
    from scrapy.settings import Settings
    from twisted.internet import task
    from twisted.internet.defer import succeed

    from scrapy_rep.core.policy import Fetch
    from scrapy_rep.crawl._cache import OriginKeys
    from scrapy_rep.crawl._events import Events
    from scrapy_rep.crawl._settings import MiddlewareSettings
    from scrapy_rep.crawl.robotstxt_middleware import build_components
    from scrapy_rep.storage.options import DEFAULT_ENTRY_TTL
    from scrapy_rep.storage.results import MemoryStore

    class Stats:
        def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
            pass

    class Fetcher:
        def fetch(self, url: str, via: object = None) -> object:
            site = int(urlsplit(url).hostname.split(".")[0][4:])  # type: ignore[union-attr]
            return succeed((Fetch("ok", status=200), _body(site)))

    clock = task.Clock()
    clock.advance(1_000_000)
    store = MemoryStore(size=store_size, entry_ttl=DEFAULT_ENTRY_TTL, clock=clock.seconds)
    keys = OriginKeys()
    parts = build_components(
        clock=clock,
        store=store,
        fetcher_for=lambda kind: Fetcher(),  # type: ignore[arg-type,return-value]
        events=Events(Stats(), lambda: None),
        config=MiddlewareSettings.from_settings(Settings()),
        owner="bench",
        crawl=lambda request: None,
        closing=lambda: False,
    )
    resolver, cache = parts.resolver, parts.resolver._cache
    rows = []
    for i in range(1, origins + 1):
        origin = keys.origin(urlsplit(f"http://site{i}.test/page"))
        assert origin is not None
        resolver.report(origin, Request(f"{origin}/page"))
        state = cache.peek(origin)
        assert state is not None and state.document is not None
        state.document.allowed(f"{origin}/site{i}/public/1/x", ("bot",))
        if i in CHECKPOINTS:
            rows.append((i, _rss_mib(), len(store), len(cache)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, default=CHECKPOINTS[-1])
    parser.add_argument("--memory-store-size", type=int, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.origins, args.memory_store_size)))
        return
    from scrapy_rep.storage.options import DEFAULT_MEMORY_STORE_SIZE

    variants = [
        (f"bounded (REP_MEMORY_STORE_SIZE={DEFAULT_MEMORY_STORE_SIZE})", DEFAULT_MEMORY_STORE_SIZE),
        ("store unbounded (as before)", 10**9),
    ]
    print(f"{'variant':<42} {'origins':>8} {'RSS MiB':>8} {'store':>8} {'parsed':>7}")
    for name, size in variants:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                "--origins",
                str(args.origins),
                *("--memory-store-size", str(size)),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        for count, rss, stored, parsed in json.loads(out):
            print(f"{name:<42} {count:>8} {rss:>8.1f} {stored:>8} {parsed:>7}")


if __name__ == "__main__":
    main()

"""A scrapy-redis fleet, measured: what a member's stop or death costs, server-side.

    python benchmarks/bench_fleet.py [--origins 8] [--pages 15]

Three ``scrapy crawl`` processes of the project ``tests/_fleet.py`` generates (a RedisSpider,
README's scrapy-redis block, REP_STORE on the same throw-away redis-server), over a linked
multi-origin site on 127.0.0.1. Scenarios, each on a fresh server and site:

- ``ctrl-c``: one member gets SIGINT mid-crawl (a rolling restart), README's block as written;
- ``ctrl-c, no persist``: the same with ``SCHEDULER_PERSIST = False``;
- ``kill -9 holder``: one member alone takes every seed while three origins' robots.txt are
  pending (it holds their pages), two more start, the first is SIGKILLed.

Columns: allowed pages lost (never fetched), refetches beyond a page's first fetch (scrapy-redis
start URLs are ``dont_filter``: one refetch each is theirs), robots.txt requests per origin,
disallowed pages fetched, requests a member sent back through its gate and the queue because
another member had allowed them (``robotstxt/rescheduled``, all members), seconds to the last
member's exit.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _fleet import RULES, Fleet, Site, readme_block  # noqa: E402
from _redis_server import RedisServer  # noqa: E402
from _servers import Reply, ScriptedServer  # noqa: E402

FAST = {"MAX_IDLE_TIME_BEFORE_CLOSE": 3, "REP_LEASE_POLL_INTERVAL": 0.1, "REP_STORE_TIMEOUT": 10}


def ctrl_c(tmp: Path, server: RedisServer, site: Site, persist: bool) -> Fleet:
    block = readme_block()
    if not persist:
        block = block.replace("SCHEDULER_PERSIST = True", "SCHEDULER_PERSIST = False")
    fleet = Fleet(
        tmp, server.url, block, {"REDIS_URL": server.url, "REP_STORE": server.url, **FAST}
    )
    fleet.seed(site.seeds())
    fleet.start(3)
    watched = site.servers[-1]
    watched.wait_for("/page/", count=3, prefix=True, timeout=120)
    fleet.member_of(watched.seen("/page/", prefix=True)[2]).proc.send_signal(signal.SIGINT)
    return fleet


def kill_holder(
    tmp: Path, server: RedisServer, site: Site, slow: int, gate: threading.Event
) -> Fleet:
    seeds = [s.url(f"/page/{i}") for s in site.servers[:slow] for i in range(site.pages)]
    seeds += site.seeds()[slow:]
    overrides: dict[str, Any] = {"REDIS_URL": server.url, "REP_STORE": server.url, **FAST}
    overrides.update(REDIS_START_URLS_BATCH_SIZE=len(seeds), REP_LEASE_TTL=5, REP_HELD_OWNER_TTL=3)
    fleet = Fleet(tmp, server.url, readme_block(), overrides)
    fleet.seed(seeds)
    (holder,) = fleet.start(1)
    for s in site.servers[:slow]:
        s.wait_for("/robots.txt", timeout=120)
    for s in site.servers[slow:]:
        s.wait_until(lambda s=s: all(s.count(f"/page/{i}") for i in range(site.pages)), 120)
    fleet.start(2)
    holder.kill9()
    gate.set()
    return fleet


def run(name: str, origins: int, pages: int) -> None:
    servers: list[ScriptedServer] = []

    def factory() -> ScriptedServer:
        servers.append(ScriptedServer.start())
        return servers[-1]

    gate = threading.Event()
    slow = max(1, origins // 2)
    with (
        tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp,
        RedisServer.start(Path(tmp, "redis")) as redis_server,
    ):
        try:
            started = time.monotonic()
            if name == "kill -9 holder":
                site = Site.build(
                    factory,
                    origins,
                    pages,
                    robots=lambda o: Reply.text(RULES, release=gate if o < slow else None),
                )
                fleet = kill_holder(Path(tmp), redis_server, site, slow, gate)
            else:
                site = Site.build(factory, origins, pages, page_delay=0.1)
                fleet = ctrl_c(Path(tmp), redis_server, site, persist=name == "ctrl-c")
            results = fleet.wait(timeout=300)
            elapsed = time.monotonic() - started
            robots = dict(sorted(Counter(site.robots_fetches()).items()))
            print(
                f"| {name} | {len(site.allowed())} | {len(site.lost())} | {site.refetched()} "
                f"| {robots} | {site.private_fetches()} "
                f"| {sum(r.stat('robotstxt/rescheduled') or 0 for r in results)} | {elapsed:.1f} |"
            )
        finally:
            gate.set()
            for server in servers:
                server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--origins", type=int, default=8)
    parser.add_argument("--pages", type=int, default=15)
    scenarios = ("ctrl-c", "ctrl-c, no persist", "kill -9 holder")
    parser.add_argument("--scenario", choices=scenarios, action="append")
    args = parser.parse_args()
    print(
        "| scenario | allowed | lost | refetched | robots.txt/origin: origins | private "
        "| rescheduled | s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in args.scenario or scenarios:
        run(name, args.origins, args.pages)


if __name__ == "__main__":
    main()

"""A fleet's per-site limits, measured: throughput of 1 and 3 processes, and one site whose limit
binds.

    python benchmarks/bench_fleet_limits.py [--sites 50] [--pages 30] [--page-time 0.25]

``scrapy crawl`` processes of the project ``tests/_fleet.py`` generates (a RedisSpider,
README's scrapy-redis block, REP_STORE on the same throw-away redis-server, so each download
slot's limits are the fleet's), over ``--sites`` sites on one local server, each its own host
name (``siteN.test``, mapped to 127.0.0.1: Scrapy's slot key is the host name), every page
answered after ``--page-time`` seconds; each process gets its share of the pages (round robin)
in a queue of its own, so that the rates are the limits' and not how scrapy-redis's one queue
spread the pages. Scenarios, each on a fresh redis-server:

- ``free, 1`` and ``free, 3``: limits that do not bind (CONCURRENT_REQUESTS 16 per process,
  CONCURRENT_REQUESTS_PER_DOMAIN 8, each site's pages few at a time): pages per second;
- ``binding, 3``: the same, and site0 held to one request every 0.5 s (``DOWNLOAD_SLOTS``:
  concurrency 1, delay 0.5, no jitter) with ``--pages`` x 2 pages: the other sites' pages per
  second against ``free, 3``, and site0's rate against its limit (2 per second).

Rates are the servers' own counts: pages answered between the first and the last page request.
Also printed: Redis commands per page (``INFO commandstats`` before and after: every command
of the fleet, the scheduler's and scrapy-rep's other keys included, and those of the fleet's
places alone, the ``EVALSHA`` calls of its scripts).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _fleet import Fleet, own_key, readme_block  # noqa: E402
from _redis_server import RedisServer  # noqa: E402
from _servers import Reply, ScriptedServer, html_page  # noqa: E402

#: The binding site's limit: one request every this many seconds.
BINDING_GAP = 0.5


def commands(url: str) -> dict[str, int]:
    import redis

    client = redis.Redis.from_url(url)
    try:
        stats = client.info("commandstats")
    finally:
        client.close()
    return {name.removeprefix("cmdstat_"): value["calls"] for name, value in stats.items()}


def rate(times: list[float]) -> float:
    times = sorted(times)
    return (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0


def run(name: str, args: argparse.Namespace, processes: int, binding: bool) -> dict[str, Any]:
    server = ScriptedServer.start()
    server.robots("User-agent: *\nAllow: /\n")
    page = html_page("page", [])
    pages = args.pages * 2 if binding else args.pages
    for i in range(pages):
        headers = {"Content-Type": "text/html"}
        server.route(f"/page/{i}", Reply(200, page, headers=headers, delay=args.page_time))
    hosts = [f"site{n}.test" for n in range(args.sites)]
    per_site = {host: args.pages for host in hosts}
    if binding:
        per_site[hosts[0]] = pages
    urls = [
        server.url(f"/page/{i}", host=host)
        for i in range(max(per_site.values()))
        for host in hosts
        if i < per_site[host]
    ]
    with tempfile.TemporaryDirectory() as tmp, RedisServer.start(Path(tmp) / "redis") as redis_:
        overrides: dict[str, Any] = {
            "REDIS_URL": redis_.url,
            "REP_STORE": redis_.url,
            "MAX_IDLE_TIME_BEFORE_CLOSE": 3,
            "REDIS_START_URLS_BATCH_SIZE": len(urls),
            "CONCURRENT_REQUESTS": 16,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
            "DNS_RESOLVER": "_resolver.MappedResolver",
            "TWISTED_DNS_RESOLVER": "_resolver.MappedResolver",
            "TEST_HOSTS": dict.fromkeys(hosts, "127.0.0.1"),
            "LOG_LEVEL": "WARNING",
        }
        if binding:
            overrides["DOWNLOAD_SLOTS"] = {
                hosts[0]: {
                    "concurrency": 1,
                    "delay": BINDING_GAP,
                    "jitter": 0.0,
                    "randomize_delay": False,
                }
            }
        fleet = Fleet(Path(tmp), redis_.url, readme_block(), overrides)
        # Each process its own share of the pages, in a queue of its own: the rates are the
        # limits', not how scrapy-redis's one queue happened to spread the pages.
        for n in range(processes):
            fleet.seed(urls[n::processes], key=own_key(n))
        before = commands(redis_.url)
        fleet.start(processes, own_queue=True)
        results = fleet.wait(timeout=600)
        after = commands(redis_.url)
        server.close()
    seen = server.seen("/page/", prefix=True)
    by_host: dict[str, list[float]] = {}
    for s in seen:
        by_host.setdefault(s.headers.get("host", "").split(":")[0], []).append(s.time)
    others = [
        t for host, times in by_host.items() if host != hosts[0] or not binding for t in times
    ]
    calls = {key: after.get(key, 0) - before.get(key, 0) for key in after}
    row = {
        "name": name,
        "pages": len(seen),
        "expected": len(urls),
        "rate": rate(others),
        "binding_rate": rate(by_host.get(hosts[0], [])) if binding else None,
        "exits": [r.exit_code for r in results],
        "redis_per_page": sum(calls.values()) / max(1, len(seen)),
        "evalsha_per_page": calls.get("evalsha", 0) / max(1, len(seen)),
    }
    print(
        f"{name:<12} pages {row['pages']}/{row['expected']}  others {row['rate']:.1f} pages/s"
        + (f"  site0 {row['binding_rate']:.2f}/s (limit {1 / BINDING_GAP:.1f})" if binding else "")
        + f"  Redis commands/page {row['redis_per_page']:.1f}"
        + f" (scripts {row['evalsha_per_page']:.1f})"
        + f"  exits {row['exits']}",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, default=50)
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--page-time", type=float, default=0.25)
    args = parser.parse_args()
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT / "tests"), str(ROOT), os.environ.get("PYTHONPATH")])
    )
    one = run("free, 1", args, 1, binding=False)
    three = run("free, 3", args, 3, binding=False)
    bound = run("binding, 3", args, 3, binding=True)
    print()
    print(f"3 processes / 1, limits that do not bind: {three['rate'] / one['rate']:.2f}x")
    print(f"the 49 others with one binding site / without: {bound['rate'] / three['rate']:.2f}x")
    print(f"the binding site's rate / its limit: {bound['binding_rate'] * BINDING_GAP:.2f}")


if __name__ == "__main__":
    main()

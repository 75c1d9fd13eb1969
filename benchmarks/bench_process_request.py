"""The final gate's cost per request as Scrapy >= 2.14 calls it (``await ensure_awaitable(...)``).

    python benchmarks/bench_process_request.py

Compares ``RobotsTxtMiddleware.process_request`` (``async def`` on Scrapy >= 2.14) with its
synchronous body alone, as the middleware was before (a plain None, which Scrapy then wraps in
a coroutine of its own), for a request the gate already allowed (the fast path) and one it did
not see (a rule match). Best of 15 rounds of 10,000 requests; needs Scrapy >= 2.14.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from scrapy.http import Request
from scrapy.utils.defer import ensure_awaitable
from scrapy.utils.test import get_crawler

from scrapy_rep import RobotsTxtMiddleware
from scrapy_rep.core.policy import Fetch, Limits, record

ORIGIN = "http://example.com"


async def per_request(call: Callable[[Request], Any], requests: list[Request]) -> float:
    best = float("inf")
    for _ in range(15):
        start = time.perf_counter()
        for _ in range(10):
            for request in requests:
                await ensure_awaitable(call(request))
        best = min(best, (time.perf_counter() - start) / (10 * len(requests)))
    return best * 1e9


async def main() -> None:
    settings = {
        "ROBOTSTXT_OBEY": True,
        "DOWNLOADER_MIDDLEWARES": {"scrapy_rep.RobotsTxtGuard": 950},
    }
    middleware = RobotsTxtMiddleware.from_crawler(get_crawler(settings_dict=settings))
    cache, now = middleware._cache, middleware._clock.seconds()
    entry = record(None, Fetch("ok", 200), now, Limits())
    body = b"User-agent: *\nDisallow: /no\n"
    state = cache.install(ORIGIN, entry, cache.parse(entry, body, None), now)
    gated = {"_robotstxt_gated": state.generation}
    cases = {
        "gate allowed it (fast path)": [Request(f"{ORIGIN}/p{i}", meta=gated) for i in range(1000)],
        "not seen by the gate (match)": [Request(f"{ORIGIN}/p{i}") for i in range(1000)],
    }
    print(f"{'request':30} {'sync body':>12} {'async def':>12}")
    for name, requests in cases.items():
        before = await per_request(middleware._final_gate, requests)
        after = await per_request(middleware.process_request, requests)
        print(f"{name:30} {before:9.0f} ns {after:9.0f} ns")


if __name__ == "__main__":
    asyncio.run(main())

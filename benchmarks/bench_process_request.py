"""The final gate's cost per request as Scrapy >= 2.14 calls it (``await ensure_awaitable(...)``).

    python benchmarks/bench_process_request.py

Compares ``RobotsTxtMiddleware.process_request`` (``async def`` on Scrapy >= 2.14) with its
synchronous body alone, as the middleware was before (a plain None, which Scrapy then wraps in
a coroutine of its own), for a request the gate already allowed (the fast path) and one it did
not see (a rule match), without a declared purpose and with REP_USAGE_PURPOSES = ["train-ai"]
(the fast path then checks the origin's tdmrep.json state too). Best of 15 rounds of 10,000
requests; needs Scrapy >= 2.14.
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


async def per_request(call: Callable[[Request], Any], make: Callable[[], list[Request]]) -> float:
    """Best of 15 rounds of 10 passes over the requests ``make`` gives (made anew per pass:
    the final gate leaves a token on a request it judged)."""
    best = float("inf")
    for _ in range(15):
        passes = [make() for _ in range(10)]
        start = time.perf_counter()
        for requests in passes:
            for request in requests:
                await ensure_awaitable(call(request))
        best = min(best, (time.perf_counter() - start) / sum(map(len, passes)))
    return best * 1e9


def _middleware(purposes: list[str]) -> RobotsTxtMiddleware:
    """A middleware knowing ``ORIGIN`` (and its tdmrep.json when ``purposes`` needs it)."""
    settings = {
        "ROBOTSTXT_OBEY": True,
        "DOWNLOADER_MIDDLEWARES": {"scrapy_rep.RobotsTxtGuard": 950},
        "REP_USAGE_PURPOSES": purposes,
    }
    middleware = RobotsTxtMiddleware.from_crawler(get_crawler(settings_dict=settings))
    now = middleware._clock.seconds()
    entry = record(None, Fetch("ok", 200), now, Limits())
    known = [(middleware._resolver, b"User-agent: *\nDisallow: /no\n")]
    known += [
        (used.resolver, b'[{"location": "/", "tdm-reservation": 0}]')
        for used in middleware._components.documents
    ]
    for resolver, body in known:
        cache = resolver._cache
        cache.install(ORIGIN, entry, cache.parse(entry, body, None), now)
    return middleware


async def main() -> None:
    print(f"{'request':40} {'sync body':>12} {'async def':>12}")
    for purposes in ([], ["train-ai"]):
        middleware = _middleware(purposes)
        gated = [Request(f"{ORIGIN}/p{i}") for i in range(1000)]
        for request in gated:
            middleware._on_scheduled(request)  # the gate allows it, as in a crawl
        cases: dict[str, Callable[[], list[Request]]] = {
            "gate allowed it (fast path)": lambda gated=gated: gated,
            "not seen by the gate (match)": lambda: [
                Request(f"{ORIGIN}/p{i}") for i in range(1000)
            ],
        }
        for name, make in cases.items():
            before = await per_request(middleware._final_gate, make)
            after = await per_request(middleware.process_request, make)
            label = f"{name}{', train-ai' if purposes else ''}"
            print(f"{label:40} {before:9.0f} ns {after:9.0f} ns")


if __name__ == "__main__":
    asyncio.run(main())

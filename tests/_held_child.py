"""Subprocess of tests/test_held_jobdir.py: hold requests in a JOBDIR, say so, wait to be killed.

Usage: ``python tests/_held_child.py JOBDIR COUNT``; prints ``held COUNT`` once ``add`` returned
for every request, then blocks on stdin until the test SIGKILLs it.
"""

from __future__ import annotations

import sys
from typing import Any

import scrapy
from scrapy.http import Request, Response

from scrapy_rep.storage.held import JobdirHeld


class HeldSpider(scrapy.Spider):
    name = "held"

    def parse(self, response: Response, **kwargs: Any) -> None:
        """Named in the held requests (callbacks are stored by name)."""

    def on_error(self, failure: Any) -> None:
        """Named in the held requests."""


def main() -> None:
    jobdir, count = sys.argv[1], int(sys.argv[2])
    spider = HeldSpider()
    held = JobdirHeld.open(jobdir, spider)
    for i in range(count):
        origin = f"http://site{i % 3}.test"
        held.add(origin, Request(f"{origin}/page/{i}", callback=spider.parse, meta={"i": i}))
    print(f"held {count}", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()

"""A downloader middleware that rewrites robots.txt requests, for the guard's test.

``RewriteRobotsTxt`` (enable it below ``scrapy_rep.RobotsTxtGuard``) answers every request
whose URL ends with /robots.txt with ``request.replace(url=TEST_REWRITE_TO)``, as a buggy or
hostile project middleware might: the guard must refuse the rewritten robots.txt request.
"""

from __future__ import annotations

from typing import Any

from scrapy.http import Request


class RewriteRobotsTxt:
    def __init__(self, target: str) -> None:
        self.target = target

    @classmethod
    def from_crawler(cls, crawler: Any) -> RewriteRobotsTxt:
        return cls(crawler.settings["TEST_REWRITE_TO"])

    def process_request(self, request: Request, spider: Any = None) -> Request | None:
        if request.url.endswith("/robots.txt"):
            return request.replace(url=self.target)
        return None

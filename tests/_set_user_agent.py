"""A User-Agent rewriting downloader middleware as projects write one (a rotating-User-Agent
middleware, typically at 400, before Scrapy's UserAgentMiddleware at 500, whose
``setdefault`` then leaves it alone): requests for the paths ``SET_USER_AGENT_PATHS`` get the
User-Agent ``SET_USER_AGENT`` in process_request, counted in the stat ``harness/user_agent_set``
(so a test knows the rewrite happened, whatever became of the request after it)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from scrapy.crawler import Crawler
from scrapy.http import Request

STAT = "harness/user_agent_set"


class SetUserAgent:
    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        self.user_agent = crawler.settings.get("SET_USER_AGENT", "").encode()
        self.paths = frozenset(crawler.settings.getlist("SET_USER_AGENT_PATHS"))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SetUserAgent:
        return cls(crawler)

    def process_request(self, request: Request, spider: Any = None) -> None:
        if urlsplit(request.url).path in self.paths:
            request.headers["User-Agent"] = self.user_agent
            assert self.stats is not None
            self.stats.inc_value(STAT)

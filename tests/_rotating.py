"""A rotating proxy pool as projects write one (scrapy-rotating-proxies and the like): each
request gets the next route of ``ROTATING_PROXIES`` (a proxy URL, or "" for direct) in
process_request, before Scrapy's HttpProxyMiddleware (750)."""

from __future__ import annotations

from itertools import cycle
from typing import Any

from scrapy.http import Request


class RotatingProxies:
    def __init__(self, routes: list[str]) -> None:
        self._routes = cycle(routes)

    @classmethod
    def from_crawler(cls, crawler: Any) -> RotatingProxies:
        return cls(crawler.settings.getlist("ROTATING_PROXIES"))

    def process_request(self, request: Request, spider: Any = None) -> None:
        if request.meta.get("rep_robotstxt"):
            return  # scrapy-rep's robots.txt fetch goes the way of the request that needed it
        request.meta["proxy"] = next(self._routes) or None

"""``scrapy_rep.running_middleware(crawler)``: reach the crawl's robots.txt middleware.

Spiders, extensions and tools use it to ask the middleware about an origin
(``resolve(url)``, a Deferred of its ``OriginReport``) while the crawl runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy_rep.crawl import _compat

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from scrapy_rep.crawl.robotstxt_middleware import RobotsTxtMiddleware

__all__ = ["running_middleware"]


def running_middleware(crawler: Crawler) -> RobotsTxtMiddleware | None:
    """The crawler's running ``scrapy_rep.RobotsTxtMiddleware``, or None.

    None when the middleware is not enabled (``ROBOTSTXT_OBEY`` off, or not in
    ``DOWNLOADER_MIDDLEWARES``) or the engine is not running yet: middlewares
    exist from ``engine_started``/``spider_opened`` on. A subclass counts.
    """
    from scrapy_rep.crawl.robotstxt_middleware import RobotsTxtMiddleware

    return _compat.downloader_middleware(crawler, RobotsTxtMiddleware)

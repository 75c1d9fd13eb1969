"""``scrapy_rep.running_middleware(crawler)``: reach the crawl's robots.txt middleware.

Spiders, extensions and tools use it to ask the middleware about an origin
(``resolve(url)``, a Deferred of its ``OriginReport``) while the crawl runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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

    try:
        engine = crawler.engine
    except RuntimeError:  # newer Scrapy raises instead of answering None
        return None
    if engine is None:
        return None
    getter = getattr(crawler, "get_downloader_middleware", None)  # Scrapy >= 2.12
    if getter is not None:
        found: RobotsTxtMiddleware | None = getter(RobotsTxtMiddleware)
        return found
    for middleware in engine.downloader.middleware.middlewares:
        if isinstance(middleware, RobotsTxtMiddleware):
            return middleware
    return None

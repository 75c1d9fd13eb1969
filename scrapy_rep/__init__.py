"""scrapy-rep: Google-exact robots.txt handling for Scrapy.

The parser and matcher (``RobotsTxt``) are pure Python: importing them does not
import Scrapy. The Scrapy parts (``RobotParser``, ``RobotsTxtMiddleware``,
``Addon``) are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_rep.pagerules import PageRules, page_rules
from scrapy_rep.robotstxt import Decision, RobotsTxt, Rule
from scrapy_rep.tokens import CrawlerTokens, is_valid_token, product_token

if TYPE_CHECKING:
    from scrapy_rep.adapter import RobotParser
    from scrapy_rep.addon import Addon
    from scrapy_rep.middleware import RobotsTxtMiddleware
    from scrapy_rep.page_middleware import PageRobotsMiddleware

__version__ = "0.1.0"

__all__ = [
    "Addon",
    "CrawlerTokens",
    "Decision",
    "PageRobotsMiddleware",
    "PageRules",
    "RobotParser",
    "RobotsTxt",
    "RobotsTxtMiddleware",
    "Rule",
    "is_valid_token",
    "page_rules",
    "product_token",
]

_LAZY = {
    "RobotParser": "scrapy_rep.adapter",
    "RobotsTxtMiddleware": "scrapy_rep.middleware",
    "PageRobotsMiddleware": "scrapy_rep.page_middleware",
    "Addon": "scrapy_rep.addon",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'scrapy_rep' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

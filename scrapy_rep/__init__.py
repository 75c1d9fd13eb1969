"""scrapy-rep: Google-exact robots.txt handling for Scrapy.

The Scrapy components below are imported on first use: ``import scrapy_rep`` imports no Scrapy.
"SPEC A3" and the like in comments and docstrings are sections of docs/spec.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_rep.core.explain import explain
from scrapy_rep.core.explain_text import describe_origin, format_explanation, format_rule
from scrapy_rep.core.pagerules import PageRules, page_rules
from scrapy_rep.core.robots_file import Decision, RobotsTxt, Rule
from scrapy_rep.core.tokens import CrawlerTokens, is_valid_token, product_token
from scrapy_rep.core.usage import UsagePrefs, UsageSource

if TYPE_CHECKING:
    from scrapy_rep.crawl.addon import Addon
    from scrapy_rep.crawl.exceptions import RequestDropped
    from scrapy_rep.crawl.guard_middleware import RobotsTxtGuard
    from scrapy_rep.crawl.page_middleware import PageRobotsMiddleware
    from scrapy_rep.crawl.robot_parser import RobotParser
    from scrapy_rep.crawl.robotstxt_middleware import RobotsTxtMiddleware, running_middleware
    from scrapy_rep.crawl.start_intake_middleware import StartIntakeMiddleware

__version__ = "0.1.0"

__all__ = [
    "Addon",
    "CrawlerTokens",
    "Decision",
    "PageRobotsMiddleware",
    "PageRules",
    "RequestDropped",
    "RobotParser",
    "RobotsTxt",
    "RobotsTxtGuard",
    "RobotsTxtMiddleware",
    "Rule",
    "StartIntakeMiddleware",
    "UsagePrefs",
    "UsageSource",
    "describe_origin",
    "explain",
    "format_explanation",
    "format_rule",
    "is_valid_token",
    "page_rules",
    "product_token",
    "running_middleware",
]

_LAZY = {
    "RobotParser": "scrapy_rep.crawl.robot_parser",
    "RobotsTxtMiddleware": "scrapy_rep.crawl.robotstxt_middleware",
    "PageRobotsMiddleware": "scrapy_rep.crawl.page_middleware",
    "RobotsTxtGuard": "scrapy_rep.crawl.guard_middleware",
    "StartIntakeMiddleware": "scrapy_rep.crawl.start_intake_middleware",
    "Addon": "scrapy_rep.crawl.addon",
    "RequestDropped": "scrapy_rep.crawl.exceptions",
    "running_middleware": "scrapy_rep.crawl.robotstxt_middleware",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'scrapy_rep' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

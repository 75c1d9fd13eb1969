"""scrapy-rep: Google-exact robots.txt handling for Scrapy.

The parser and matcher (``RobotsTxt``) and usage preferences (``RobotsTxt.usage``,
``UsagePrefs``, ``scrapy_rep.usage``) are pure Python: importing them does not
import Scrapy; nor do ``explain``, ``format_explanation``, ``format_rule`` and
``describe_origin`` (why a URL is allowed, as ``scrapy robots`` says it). The Scrapy parts
(``RobotParser``, ``RobotsTxtMiddleware``, ``RobotsTxtGuard``, ``PageRobotsMiddleware``,
``StartIntakeMiddleware``,
``Addon``, ``running_middleware``)
are loaded on first use.

"SPEC A3" and the like in comments and docstrings are sections of the project's
specification, docs/spec.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_rep._explain_api import describe_origin, explain, format_explanation, format_rule
from scrapy_rep.pagerules import PageRules, page_rules
from scrapy_rep.robotstxt import Decision, RobotsTxt, Rule
from scrapy_rep.tokens import CrawlerTokens, is_valid_token, product_token
from scrapy_rep.usage import UsagePrefs, UsageSource

if TYPE_CHECKING:
    from scrapy_rep._guard import RobotsTxtGuard
    from scrapy_rep._intake import StartIntakeMiddleware
    from scrapy_rep._running import running_middleware
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
    "RobotParser": "scrapy_rep.adapter",
    "RobotsTxtMiddleware": "scrapy_rep.middleware",
    "PageRobotsMiddleware": "scrapy_rep.page_middleware",
    "RobotsTxtGuard": "scrapy_rep._guard",
    "StartIntakeMiddleware": "scrapy_rep._intake",
    "Addon": "scrapy_rep.addon",
    "running_middleware": "scrapy_rep._running",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'scrapy_rep' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

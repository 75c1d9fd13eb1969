"""scrapy-rep: Google-exact robots.txt handling for Scrapy.

The parser and matcher (``RobotsTxt``) are pure Python: importing them does not
import Scrapy. The Scrapy parts (``RobotParser``, ``RobotsTxtMiddleware``,
``RobotsTxtGuard``, ``Addon``) are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy_rep.robotstxt import Decision, RobotsTxt, Rule
from scrapy_rep.tokens import is_valid_token, product_token

if TYPE_CHECKING:
    from scrapy_rep._guard import RobotsTxtGuard
    from scrapy_rep.adapter import RobotParser
    from scrapy_rep.addon import Addon
    from scrapy_rep.middleware import RobotsTxtMiddleware

__all__ = [
    "Addon",
    "Decision",
    "RobotParser",
    "RobotsTxt",
    "RobotsTxtGuard",
    "RobotsTxtMiddleware",
    "Rule",
    "is_valid_token",
    "product_token",
]

_LAZY = {
    "RobotParser": "scrapy_rep.adapter",
    "RobotsTxtMiddleware": "scrapy_rep.middleware",
    "RobotsTxtGuard": "scrapy_rep._guard",
    "Addon": "scrapy_rep.addon",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'scrapy_rep' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

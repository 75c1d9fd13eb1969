"""``ADDONS = {"scrapy_rep.Addon": 0}``: scrapy-rep in one line.

The add-on replaces Scrapy's robots.txt middleware with ``scrapy_rep.RobotsTxtMiddleware``
(which also drops disallowed requests before they are scheduled), adds
``scrapy_rep.RobotsTxtGuard`` (robots.txt requests: scheme check and bounded
decompression, above HttpCompressionMiddleware) and the spider middleware
``scrapy_rep.PageRobotsMiddleware`` (robots meta tags, X-Robots-Tag) and
``scrapy_rep.StartIntakeMiddleware`` (start requests taken lazily while origins wait for
robots.txt), makes
``scrapy_rep.RobotParser`` the ``ROBOTSTXT_PARSER`` and sets ``ROBOTSTXT_OBEY = True``.
When the user sets ``ROBOTSTXT_OBEY = False`` the middlewares are left as they are.
Everything is set at the "addon" priority, so whatever settings.py, a spider's
``custom_settings`` or ``-s`` say still wins, including an explicit entry for
any of these middlewares in ``DOWNLOADER_MIDDLEWARES``. A ``ROBOTSTXT_PARSER`` the user
set to another parser (Protego, Scrapy's default value, included) wins here too, and the
middleware then stops the crawl at startup saying what to change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.settings import BaseSettings
from scrapy.utils.misc import load_object

from scrapy_rep import __version__
from scrapy_rep.crawl._tokens import settings_tokens
from scrapy_rep.crawl.guard_middleware import GUARD, GUARD_ORDER

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import Settings

__all__ = [
    "BUILTIN_MIDDLEWARE",
    "INTAKE_MIDDLEWARE",
    "INTAKE_MIDDLEWARE_ORDER",
    "MIDDLEWARE",
    "MIDDLEWARE_ORDER",
    "PAGE_MIDDLEWARE",
    "PAGE_MIDDLEWARE_ORDER",
    "Addon",
    "component_path",
]

BUILTIN_MIDDLEWARE = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
MIDDLEWARE = "scrapy_rep.RobotsTxtMiddleware"
#: Where Scrapy's built-in robots.txt middleware sits in DOWNLOADER_MIDDLEWARES_BASE.
MIDDLEWARE_ORDER = 100
PAGE_MIDDLEWARE = "scrapy_rep.PageRobotsMiddleware"
#: Nearest the spider (above DepthMiddleware's 900): dropped requests are never
#: counted or changed by the other spider middlewares.
PAGE_MIDDLEWARE_ORDER = 950
INTAKE_MIDDLEWARE = "scrapy_rep.StartIntakeMiddleware"
#: Nearest the engine (below every built-in spider middleware): it paces what the others
#: already produced, so they never wait.
INTAKE_MIDDLEWARE_ORDER = 10


class Addon:
    """Scrapy add-on enabling scrapy-rep's robots.txt handling."""

    def __init__(self, crawler: Crawler | None = None) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Addon:
        return cls(crawler)

    def __repr__(self) -> str:
        # Scrapy logs the enabled add-ons by their repr.
        return f"scrapy_rep.Addon (scrapy-rep {__version__})"

    def update_settings(self, settings: Settings) -> None:
        settings.set("ROBOTSTXT_OBEY", True, "addon")
        settings.set("ROBOTSTXT_PARSER", "scrapy_rep.RobotParser", "addon")
        if not settings.getbool("ROBOTSTXT_OBEY"):
            # The user turned obeying off: leave Scrapy's own middleware in
            # place, which stays silent, where ours would be logged by Scrapy
            # as "Disabled …" at WARNING on every run.
            return
        # An entry the user wrote for any of them, under any spelling, wins.
        _add_component(settings, "DOWNLOADER_MIDDLEWARES", BUILTIN_MIDDLEWARE, None)
        _add_component(settings, "DOWNLOADER_MIDDLEWARES", MIDDLEWARE, MIDDLEWARE_ORDER)
        _add_component(settings, "DOWNLOADER_MIDDLEWARES", GUARD, GUARD_ORDER)
        _add_component(settings, "SPIDER_MIDDLEWARES", PAGE_MIDDLEWARE, PAGE_MIDDLEWARE_ORDER)
        _add_component(settings, "SPIDER_MIDDLEWARES", INTAKE_MIDDLEWARE, INTAKE_MIDDLEWARE_ORDER)
        # update_settings runs after settings.py, custom_settings and -s are applied: the
        # token settings are final enough to check here (their warnings are logged once).
        if self.crawler is not None:
            settings_tokens(self.crawler.settings, self.crawler)


def _add_component(settings: Settings, name: str, path: str, order: int | None) -> None:
    """Add ``path`` to the component dict ``name`` unless the user named it (any spelling)."""
    components = settings[name]
    if not isinstance(components, BaseSettings):
        components = BaseSettings(components or {}, "addon")
        settings.set(name, components, "addon")
    if component_path(path) not in {component_path(key) for key in components}:
        components.set(path, order, "addon")


def component_path(key: Any) -> str:
    """``key`` of a component dict (import path or class) as the path of what it names."""
    if isinstance(key, str):
        path: str = key
        try:
            key = load_object(path)
        except (ImportError, NameError, ValueError, AttributeError):
            return path
    module = getattr(key, "__module__", None)
    name = getattr(key, "__qualname__", None)
    if module is None or name is None:
        return str(key)
    return f"{module}.{name}"

"""The crawler's ``CrawlerTokens``, built once per settings object, its warnings logged once.

Every Scrapy entry point (add-on, middleware, parser adapter, explain command)
asks ``settings_tokens`` for the tokens, so all of them obey robots.txt as the
same tokens and a user reads each warning about the token settings once,
however many components look. Warnings go to the public ``scrapy_rep`` logger.
"""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING, Any

from scrapy_rep.core.tokens import CrawlerTokens, identification_warning

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

__all__ = ["settings_tokens"]

# The one log line of crawl/ outside _events.py: these warnings are given while the settings
# are read (the add-on's update_settings), before any component that holds an Events exists.
logger = logging.getLogger("scrapy_rep")

# Per settings object (a crawler's settings live as long as the crawler), by id:
# Settings are unhashable; the entry goes when the settings object does.
_built: dict[int, tuple[tuple[Any, ...], CrawlerTokens]] = {}


def settings_tokens(settings: BaseSettings, crawler: Crawler | None = None) -> CrawlerTokens:
    """The ``CrawlerTokens`` of ``settings``; its startup warnings are logged when it is built.

    Built again only if a token setting changed since (an add-on looks before
    the settings are frozen).
    """
    values = (
        settings.get("USER_AGENT"),
        settings.get("ROBOTSTXT_USER_AGENT"),
        tuple(settings.getlist("REP_USER_AGENTS")),
    )
    built = _built.get(id(settings))
    if built is not None and built[0] == values:
        return built[1]
    extra = {"crawler": crawler} if crawler is not None else {}

    def warn(message: str) -> None:
        logger.warning("%s", message, extra=extra)

    tokens = CrawlerTokens.from_settings(settings, warn=warn)
    if built is None:
        weakref.finalize(settings, _built.pop, id(settings), None)
    _built[id(settings)] = (values, tokens)
    for message in tokens.warnings:
        warn(message)
    # One warning about USER_AGENT: one the token warnings gave (browser-like, no token) says
    # what to fix already.
    unidentified = identification_warning(tokens.user_agent)
    if unidentified is not None and not any("USER_AGENT " in w for w in tokens.warnings):
        warn(unidentified)
    return tokens

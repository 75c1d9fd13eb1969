"""Startup checks of the settings that decide which robots.txt group a crawler obeys.

``token_warnings`` is pure: it takes setting values and returns the warnings to
log, each saying what to set. ``warn_about_tokens`` logs them for a crawler, once
per crawler however many components (add-on, middleware, parser adapter) call
it, so every entry point can call it from its ``from_crawler``.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from scrapy_rep.tokens import is_valid_token, product_token

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["token_warnings", "warn_about_tokens"]

logger = logging.getLogger(__name__)

_FIX = "set ROBOTSTXT_USER_AGENT = 'MyBot' (or REP_USER_AGENTS = ['MyBot', ...])"

# Crawlers already checked: the add-on and the middleware both check, a user
# should read each warning once.
_checked: weakref.WeakSet[Any] = weakref.WeakSet()


def token_warnings(
    user_agent: str | None,
    robotstxt_user_agent: str | None,
    rep_user_agents: Iterable[str] = (),
) -> list[str]:
    """Warnings about the robots.txt tokens these setting values lead to.

    ``user_agent`` is ``USER_AGENT``, ``robotstxt_user_agent`` is
    ``ROBOTSTXT_USER_AGENT`` and ``rep_user_agents`` is ``REP_USER_AGENTS``,
    the precedence ``scrapy_rep.adapter.crawler_tokens`` uses. An empty list
    means the configuration is fine.
    """
    listed = list(rep_user_agents)
    if listed:
        return [w for value in listed for w in _configured_token("REP_USER_AGENTS", value)]
    if robotstxt_user_agent:
        return _configured_token("ROBOTSTXT_USER_AGENT", robotstxt_user_agent)
    header = user_agent or ""
    token = product_token(header)
    if not token:
        return [
            f"robots.txt: USER_AGENT {header!r} has no product token, so only the "
            f"'User-agent: *' groups apply to this crawler; {_FIX}"
        ]
    if token.lower() == "mozilla":
        return [
            f"robots.txt: USER_AGENT {header!r} is browser-like, so robots.txt is "
            f"obeyed as 'Mozilla' (a group almost no site writes); {_FIX} with the "
            "token your crawler answers to"
        ]
    return []


def _configured_token(setting: str, value: str) -> list[str]:
    if is_valid_token(value):
        if value.lower() == "mozilla":
            return [f"robots.txt: {setting} names 'Mozilla', a browser; {_FIX}"]
        return []
    token = product_token(value)
    if not token:
        return [
            f"robots.txt: {setting} value {value!r} is not a product token "
            f"(letters, '-' and '_' only) and is ignored; {_FIX}"
        ]
    return [
        f"robots.txt: {setting} value {value!r} is not a product token (letters, '-' "
        f"and '_' only); it is obeyed as {token!r}: set it to {token!r}"
    ]


def warn_about_tokens(crawler: Crawler) -> list[str]:
    """Log ``token_warnings`` for ``crawler``'s settings (once per crawler); return them."""
    if crawler in _checked:
        return []
    _checked.add(crawler)
    settings = crawler.settings
    robotstxt_user_agent = settings.get("ROBOTSTXT_USER_AGENT")
    warnings = token_warnings(
        _text(settings.get("USER_AGENT")),
        _text(robotstxt_user_agent) if robotstxt_user_agent else None,
        [_text(v) for v in settings.getlist("REP_USER_AGENTS")],
    )
    for warning in warnings:
        logger.warning("%s", warning, extra={"crawler": crawler})
    return warnings


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)

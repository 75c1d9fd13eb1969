"""``ROBOTSTXT_PARSER = "scrapy_rep.RobotParser"``: the parser for Scrapy's own middleware.

Scrapy hands parsers the full User-Agent header; robots.txt groups name product
tokens. SPEC C1: the header's product token is used (``MyBot/1.0 (+https://…)``
→ ``MyBot``). A browser-like header (``Mozilla/5.0 (compatible; MyBot/1.0)``)
yields ``Mozilla``, which is almost never what a crawler means: the startup
check warns about ``USER_AGENT``, one more warning covers a different header
seen at run time (e.g. set per request), and ``ROBOTSTXT_USER_AGENT`` (or
``REP_USER_AGENTS``) fixes it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.robotstxt import RobotParser as _ScrapyRobotParser

from scrapy_rep._checks import warn_about_tokens
from scrapy_rep.robotstxt import RobotsTxt
from scrapy_rep.tokens import product_token

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

_warned_mozilla = False


def configured_tokens(settings: BaseSettings) -> tuple[str, ...] | None:
    """The tokens the settings name, in preference order, or None to use the User-Agent.

    ``REP_USER_AGENTS`` (a list, SPEC C2) wins, then ``ROBOTSTXT_USER_AGENT``
    (cut to its product token, SPEC C1).
    """
    listed = settings.getlist("REP_USER_AGENTS")
    if listed:
        return tuple(token for token in (product_token(_text(t)) for t in listed) if token)
    single = settings.get("ROBOTSTXT_USER_AGENT")
    if single:
        token = product_token(_text(single))
        return (token,) if token else ()
    return None


def crawler_tokens(settings: BaseSettings, user_agent: str | bytes | None) -> tuple[str, ...]:
    """The tokens a crawler obeys robots.txt as, best first.

    ``REP_USER_AGENTS``, else ``ROBOTSTXT_USER_AGENT``, else the product token
    of ``user_agent`` (the request's User-Agent header) or of ``USER_AGENT``.
    An empty tuple means only the ``*`` group applies.
    """
    configured = configured_tokens(settings)
    if configured is not None:
        return configured
    default = _text(settings.get("USER_AGENT") or "")
    return _header_tokens(_text(user_agent) if user_agent else default, default)


def _header_tokens(header: str, checked: str = "") -> tuple[str, ...]:
    """The tokens of a User-Agent header; ``checked`` was already warned about at startup."""
    global _warned_mozilla
    token = product_token(header)
    if token.lower() == "mozilla" and header != checked and not _warned_mozilla:
        _warned_mozilla = True
        logger.warning(
            "robots.txt is obeyed as 'Mozilla', the product token of the User-Agent "
            "%r: set ROBOTSTXT_USER_AGENT = 'YourBot' (or REP_USER_AGENTS) to the "
            "token your crawler answers to in robots.txt",
            header,
        )
    return (token,) if token else ()


def _text(value: str | bytes) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


class RobotParser(_ScrapyRobotParser):
    """Scrapy's RobotParser interface over ``RobotsTxt`` (Google's semantics)."""

    def __init__(
        self, robotstxt_body: bytes, configured: tuple[str, ...] | None, user_agent: str = ""
    ) -> None:
        self.robots = RobotsTxt.parse(robotstxt_body)
        self._configured = configured
        self._user_agent = user_agent
        self._tokens: dict[str | bytes, tuple[str, ...]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler, robotstxt_body: bytes) -> RobotParser:
        warn_about_tokens(crawler)
        settings = crawler.settings
        return cls(robotstxt_body, configured_tokens(settings), _text(settings["USER_AGENT"] or ""))

    def tokens(self, user_agent: str | bytes) -> tuple[str, ...]:
        """The tokens this crawler obeys as, for a User-Agent header (SPEC C1, C2)."""
        if self._configured is not None:
            return self._configured
        tokens = self._tokens.get(user_agent)
        if tokens is None:
            tokens = _header_tokens(_text(user_agent), self._user_agent)
            # One crawler sends a handful of User-Agents; don't let a hostile
            # caller grow the cache without end.
            if len(self._tokens) < 64:
                self._tokens[user_agent] = tokens
        return tokens

    def allowed(self, url: str | bytes, user_agent: str | bytes) -> bool:
        return self.robots.allowed(_text(url), self.tokens(user_agent))

    def crawl_delay(self, user_agent: str | bytes) -> float | None:
        return self.robots.crawl_delay(self.tokens(user_agent))

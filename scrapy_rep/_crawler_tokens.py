"""The crawler's tokens for a request, as the crawl side asks for them (one place).

``scrapy_rep.tokens.CrawlerTokens.from_settings(settings)`` (same ``for_header``) replaces this
module once it exists; until then it asks ``adapter``'s rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy_rep.adapter import configured_tokens, crawler_tokens

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["CrawlerTokens"]


class CrawlerTokens:
    """The crawler's tokens for a request (REP_USER_AGENTS > ROBOTSTXT_USER_AGENT > User-Agent).

    The one place the crawl side asks for them: ``scrapy_rep.tokens.CrawlerTokens`` (with the
    same ``for_header``) replaces this class once it exists.
    """

    _HEADERS = 256  # distinct User-Agent headers remembered (a bound, not a tuning knob)

    def __init__(self, settings: BaseSettings) -> None:
        self._settings = settings
        self.fixed = configured_tokens(settings)
        self.default = crawler_tokens(settings, None)
        self._by_header: dict[bytes | str, tuple[str, ...]] = {}

    def for_header(self, header: bytes | str | None) -> tuple[str, ...]:
        if self.fixed is not None:
            return self.fixed
        if not header:
            return self.default
        tokens = self._by_header.get(header)
        if tokens is None:
            tokens = crawler_tokens(self._settings, header)
            if len(self._by_header) < self._HEADERS:
                self._by_header[header] = tokens
        return tokens

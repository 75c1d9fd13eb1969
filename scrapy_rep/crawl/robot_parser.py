"""``ROBOTSTXT_PARSER = "scrapy_rep.RobotParser"``: the parser for Scrapy's own middleware.

Scrapy hands parsers the full User-Agent header; robots.txt groups name product
tokens. ``scrapy_rep.core.tokens.CrawlerTokens`` decides which tokens a header means
(SPEC C1, C2): ``MyBot/1.0 (+https://…)`` → ``MyBot``, unless
``ROBOTSTXT_USER_AGENT`` or ``REP_USER_AGENTS`` name the tokens.

URLs: Scrapy's ``Request`` percent-encodes every URL (``safe_url_string``), and
robots.txt patterns are percent-encoded too (SPEC A5), so a URL with a raw
non-ASCII character handed straight to ``allowed`` is encoded the same way
before matching. ``RobotsTxt.allowed`` itself matches URLs as given, as Google's
library does.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from typing import TYPE_CHECKING

from scrapy.robotstxt import RobotParser as _ScrapyRobotParser
from w3lib.url import safe_url_string

from scrapy_rep.core.robots_file import RobotsTxt
from scrapy_rep.core.tokens import CrawlerTokens
from scrapy_rep.crawl._tokens import settings_tokens

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


def _match_url(url: str | bytes) -> str:
    """``url`` as Scrapy's ``Request`` would hold it, for matching against patterns."""
    if isinstance(url, bytes):
        url = url.decode("utf-8", "surrogateescape")
    # Only a URL with a non-ASCII character needs encoding: the common case
    # costs one scan.
    if not url.isascii():
        # Not UTF-8, or not splittable as a URL: Scrapy would refuse it; match as given.
        with suppress(UnicodeError, ValueError):
            return safe_url_string(url)
    return url


class RobotParser(_ScrapyRobotParser):
    """Scrapy's RobotParser interface over ``RobotsTxt`` (Google's semantics).

    ``from_crawler(None, body)`` works as with Scrapy's parsers: the tokens then
    come from each call's User-Agent alone.
    """

    def __init__(
        self,
        robotstxt_body: bytes,
        tokens: CrawlerTokens | Sequence[str] | None = None,
        user_agent: str = "",
    ) -> None:
        """``tokens``: the crawler's ``CrawlerTokens``, or fixed tokens (None: each header's)."""
        self.robots = RobotsTxt.parse(robotstxt_body)
        if not isinstance(tokens, CrawlerTokens):
            tokens = CrawlerTokens(tokens, user_agent)
        self._tokens = tokens

    @classmethod
    def from_crawler(cls, crawler: Crawler | None, robotstxt_body: bytes) -> RobotParser:
        tokens = settings_tokens(crawler.settings, crawler) if crawler is not None else None
        return cls(robotstxt_body, tokens)

    def allowed(self, url: str | bytes, user_agent: str | bytes | None) -> bool:
        return self.robots.allowed(_match_url(url), self._tokens.for_header(user_agent))

    def crawl_delay(self, user_agent: str | bytes | None) -> float | None:
        return self.robots.crawl_delay(self._tokens.for_header(user_agent))

    def sitemaps(self) -> list[str]:
        """The file's ``Sitemap:`` URLs, in file order (SPEC A7), as written."""
        return list(self.robots.sitemaps)

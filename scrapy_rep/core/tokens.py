"""Product tokens: what a crawler is called in robots.txt.

One rule serves both sides (SPEC A3 for the file's user-agent values, SPEC C1
for the crawler's User-Agent header): the token is the leading run of
``[A-Za-z_-]``. ``googlebot/1.2`` → ``googlebot``; ``bot2`` → ``bot``.

``CrawlerTokens`` is the one place that decides which tokens a crawler obeys
robots.txt as (SPEC C1, C2), for the middleware, the parser adapter and the
explain command alike.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

_TOKEN = re.compile(r"[A-Za-z_-]*")
_TOKEN_CHARS = re.compile(r"[A-Za-z_-]+")
# ASCII-only case folding: str.lower() would map e.g. the Kelvin sign to "k".
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def product_token(user_agent: str) -> str:
    """The product token of a User-Agent header (SPEC C1).

    Leading whitespace is skipped; ``"MyBot/1.0 (+https://x)"`` → ``"MyBot"``,
    ``"Mozilla/5.0 (compatible; MyBot/1.0)"`` → ``"Mozilla"``.
    """
    match = _TOKEN.match(user_agent.lstrip())
    return match.group() if match else ""


def extract_token(value: str) -> str:
    """The part of a robots.txt user-agent value that is compared (SPEC A3)."""
    match = _TOKEN.match(value)
    return match.group() if match else ""


def is_valid_token(token: str) -> bool:
    """True when ``token`` is non-empty and made only of ``[A-Za-z_-]``."""
    return bool(token) and _TOKEN.fullmatch(token) is not None


def fold(token: str) -> str:
    """ASCII case folding, the comparison robots.txt tokens use."""
    # str.lower() equals ASCII folding on ASCII text, and is several times faster.
    return token.lower() if token.isascii() else token.translate(_ASCII_LOWER)


class _Settings(Protocol):
    """What ``CrawlerTokens.from_settings`` reads: Scrapy's ``Settings`` or alike."""

    def get(self, name: str, default: Any = None) -> Any: ...

    def getlist(self, name: str, default: Any = None) -> list[Any]: ...


_HEADER_CACHE_SIZE = 256
_FIX = "set ROBOTSTXT_USER_AGENT = {token!r} (or REP_USER_AGENTS = [{token!r}, ...])"
_PLACEHOLDER = "MyBot"
# "Mozilla/5.0 (compatible; MyBot/1.0; +https://…)": a crawler's own name after "compatible;".
_COMPATIBLE = re.compile(r"compatible;\s*([A-Za-z_-]+)", re.IGNORECASE)


class CrawlerTokens:
    """The tokens one crawler obeys robots.txt as, best first: decided here only.

    SPEC C2's precedence: ``REP_USER_AGENTS`` (a preference list), else
    ``ROBOTSTXT_USER_AGENT``, else the product token (SPEC C1) of each request's
    User-Agent header, ``USER_AGENT`` when a request has none. An empty tuple
    means only the ``*`` groups apply.

    ``warnings`` are the startup warnings about these settings, each saying what
    to set. A header seen at run time whose token is ``Mozilla`` (a browser's,
    never what a crawler means) is reported once per ``CrawlerTokens`` through
    ``warn`` (default: the ``scrapy_rep`` logger), unless it is ``USER_AGENT``
    itself, which ``warnings`` already covers.
    """

    def __init__(
        self,
        fixed: Sequence[str] | None = None,
        user_agent: str = "",
        *,
        warnings: Sequence[str] = (),
        warn: Callable[[str], object] | None = None,
    ) -> None:
        #: Tokens from REP_USER_AGENTS or ROBOTSTXT_USER_AGENT, or None: from each header.
        self.fixed: tuple[str, ...] | None = None if fixed is None else tuple(fixed)
        #: The USER_AGENT setting (the header of requests that set none).
        self.user_agent = user_agent
        #: The tokens of a request carrying ``user_agent`` or no User-Agent.
        self.default: tuple[str, ...] = (
            self.fixed if self.fixed is not None else _tokens_of(user_agent)
        )
        self.warnings: tuple[str, ...] = tuple(warnings)
        self._warn = warn if warn is not None else logging.getLogger("scrapy_rep").warning
        self._warned_mozilla = False
        # A crawler sends a handful of User-Agents; a bounded cache keeps a
        # caller that sends a new one per request from growing it without end.
        self._by_header: dict[str | bytes, tuple[str, ...]] = {}

    @classmethod
    def from_settings(
        cls, settings: _Settings, *, warn: Callable[[str], object] | None = None
    ) -> CrawlerTokens:
        """The tokens ``USER_AGENT``, ``ROBOTSTXT_USER_AGENT`` and ``REP_USER_AGENTS`` give."""
        user_agent = _text(settings.get("USER_AGENT"))
        listed = [_text(value) for value in settings.getlist("REP_USER_AGENTS")]
        single = _text(settings.get("ROBOTSTXT_USER_AGENT"))
        fixed: list[str] | None
        if listed:
            fixed = [token for token in map(product_token, listed) if token]
            warnings = [w for v in listed for w in _configured("REP_USER_AGENTS", v, user_agent)]
        elif single:
            token = product_token(single)
            fixed = [token] if token else []
            warnings = _configured("ROBOTSTXT_USER_AGENT", single, user_agent)
        else:
            fixed = None
            warnings = _header_warnings(user_agent)
        return cls(fixed, user_agent, warnings=warnings, warn=warn)

    def for_header(self, header: bytes | str | None) -> tuple[str, ...]:
        """The tokens for a request whose User-Agent header is ``header`` (None: no header)."""
        if self.fixed is not None:
            return self.fixed
        if not header:
            return self.default
        tokens = self._by_header.get(header)
        if tokens is None:
            text = _text(header)
            tokens = _tokens_of(text)
            if tokens and fold(tokens[0]) == "mozilla":
                self._warn_mozilla(text)
            if len(self._by_header) < _HEADER_CACHE_SIZE:
                self._by_header[header] = tokens
        return tokens

    def _warn_mozilla(self, header: str) -> None:
        if self._warned_mozilla or header == self.user_agent:
            return
        self._warned_mozilla = True
        self._warn(
            f"robots.txt is obeyed as 'Mozilla', the product token of the User-Agent "
            f"{header!r}: {_FIX.format(token=suggest_token(header))} with the token your "
            "crawler answers to in robots.txt"
        )


def suggest_token(value: str) -> str:
    """A token to advise for ``value`` (a header or a setting): the crawler's own name if seen.

    ``"Mozilla/5.0 (compatible; MyBot/1.0)"`` → ``"MyBot"``, ``"My Bot/1.0"`` →
    ``"MyBot"``; ``"MyBot"`` when nothing better is found.
    """
    compatible = _COMPATIBLE.search(value)
    if compatible and fold(compatible.group(1)) != "mozilla":
        return compatible.group(1)
    letters = "".join(_TOKEN_CHARS.findall(value.split("/", 1)[0]))
    if letters and fold(letters) != "mozilla":
        return letters
    return _PLACEHOLDER


def clean_cut(value: str) -> bool:
    """True when ``value`` is a token, or a token followed by ``/version…`` (a User-Agent).

    ``"MyBot"`` and ``"MyBot/1.0 (+https://…)"`` are; ``"My Bot/1.0"`` and
    ``"bot2"`` are not: SPEC C1 reads them as ``My`` and ``bot``, rarely what
    was meant.
    """
    stripped = value.strip()
    token = product_token(stripped)
    return bool(token) and (len(token) == len(stripped) or stripped[len(token)] == "/")


def _tokens_of(header: str) -> tuple[str, ...]:
    token = product_token(header)
    return (token,) if token else ()


def _configured(setting: str, value: str, user_agent: str) -> list[str]:
    """Warnings about one value of ``setting`` (a token setting), each saying what to set."""
    token = product_token(value)
    advice = suggest_token(user_agent if fold(token) == "mozilla" else value)
    fix = _FIX.format(token=advice)
    if fold(token) == "mozilla":
        return [
            f"robots.txt: {setting} {value!r} is a browser's token, so robots.txt is obeyed "
            f"as 'Mozilla' (a group almost no site writes); {fix} with the token your "
            "crawler answers to"
        ]
    if not token:
        ignored = "is ignored" if setting == "REP_USER_AGENTS" else "only '*' groups apply"
        return [
            f"robots.txt: {setting} value {value!r} is not a product token "
            f"(letters, '-' and '_' only), so {ignored}; {fix}"
        ]
    if clean_cut(value):
        if token == value.strip():
            return []
        return [
            f"robots.txt: {setting} value {value!r} is obeyed as {token!r}: set it to {token!r}"
        ]
    return [
        f"robots.txt: {setting} value {value!r} is not a product token (letters, '-' and "
        f"'_' only): robots.txt reads it as {token!r}; {fix} with the token your crawler "
        "answers to"
    ]


#: What a crawler's User-Agent should look like (a product token of its own, a URL about it).
_IDENTIFIABLE = 'USER_AGENT = "MyBot/1.0 (+https://mybot.example/about)"'


def identification_warning(user_agent: str) -> str | None:
    """Why ``user_agent`` does not identify the crawler, or None (SPEC C1).

    The IETF draft "Crawler best practices" (draft-illyes-webbotauth-cbcp-01): a crawler MUST
    be identifiable by its User-Agent, with a URL that describes it. Scrapy's default
    (``Scrapy/2.19.0 (+https://scrapy.org)``) names the framework, not the crawler.
    """
    token = product_token(user_agent)
    if fold(token) == "scrapy":
        problem = "is Scrapy's default, which names the framework, not this crawler"
    elif not token or fold(token) == "mozilla":
        problem = "has no product token of the crawler's own"
    elif "http://" not in user_agent and "https://" not in user_agent:
        problem = "has no URL describing the crawler"
    else:
        return None
    return (
        f"USER_AGENT {user_agent!r} {problem}: sites (and the IETF crawler best practices) "
        f"expect a crawler to say who it is and where to read about it; set {_IDENTIFIABLE} "
        "in settings.py"
    )


def _header_warnings(user_agent: str) -> list[str]:
    """Warnings about ``USER_AGENT`` when it alone decides the tokens."""
    token = product_token(user_agent)
    fix = _FIX.format(token=suggest_token(user_agent))
    if not token:
        return [
            f"robots.txt: USER_AGENT {user_agent!r} has no product token, so only the "
            f"'User-agent: *' groups apply to this crawler; {fix}"
        ]
    if fold(token) == "mozilla":
        return [
            f"robots.txt: USER_AGENT {user_agent!r} is browser-like, so robots.txt is "
            f"obeyed as 'Mozilla' (a group almost no site writes); {fix} with the token "
            "your crawler answers to"
        ]
    return []


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)

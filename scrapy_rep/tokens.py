"""Product tokens: what a crawler is called in robots.txt.

One rule serves both sides (SPEC A3 for the file's user-agent values, SPEC C1
for the crawler's User-Agent header): the token is the leading run of
``[A-Za-z_-]``. ``googlebot/1.2`` → ``googlebot``; ``bot2`` → ``bot``.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[A-Za-z_-]*")
_TOKEN_BYTES = re.compile(rb"[A-Za-z_-]*")
# ASCII-only case folding: str.lower() would map e.g. the Kelvin sign to "k".
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def product_token(user_agent: str) -> str:
    """The product token of a User-Agent header (SPEC C1).

    Leading whitespace is skipped; ``"MyBot/1.0 (+https://x)"`` → ``"MyBot"``,
    ``"Mozilla/5.0 (compatible; MyBot/1.0)"`` → ``"Mozilla"``.
    """
    match = _TOKEN.match(user_agent.lstrip())
    return match.group() if match else ""


def extract_token(value: bytes) -> bytes:
    """The part of a robots.txt user-agent value that is compared (SPEC A3)."""
    match = _TOKEN_BYTES.match(value)
    return match.group() if match else b""


def is_valid_token(token: str) -> bool:
    """True when ``token`` is non-empty and made only of ``[A-Za-z_-]``."""
    return bool(token) and _TOKEN.fullmatch(token) is not None


def fold(token: str) -> str:
    """ASCII case folding, the comparison robots.txt tokens use."""
    return token.translate(_ASCII_LOWER)

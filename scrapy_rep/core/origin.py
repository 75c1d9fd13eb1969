"""SPEC B1: the origin a URL's robots.txt belongs to (scheme + host + port).

``origin("HTTPS://Müller.EU:443/x")`` → ``"https://xn--mller-kva.eu"``: lower-case
scheme, host lower-cased and in its IDNA (punycode) form, default port dropped,
any other port kept. Only http, https and ftp URLs have a robots.txt; every
other URL (data:, file:, s3:, …) has no origin (None).
"""

from __future__ import annotations

from urllib.parse import ParseResult, SplitResult, urlsplit

__all__ = ["DEFAULT_PORTS", "ROBOTS_SCHEMES", "origin", "origin_from_parts", "robots_url"]

#: The schemes robots.txt applies to, with their default ports.
DEFAULT_PORTS = {"http": 80, "https": 443, "ftp": 21}
#: The schemes robots.txt applies to: only these URLs have an origin, and only these download
#: handlers may serve a robots.txt request.
ROBOTS_SCHEMES = frozenset(DEFAULT_PORTS)


def origin(url: str) -> str | None:
    """The normalised origin of ``url``, or None when robots.txt does not apply to it."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return origin_from_parts(parts)


def origin_from_parts(parts: SplitResult | ParseResult) -> str | None:
    """``origin`` for an already split URL (Scrapy caches ``urlparse_cached`` per request)."""
    scheme = parts.scheme.lower()
    default_port = DEFAULT_PORTS.get(scheme)
    if default_port is None:
        return None
    try:
        hostname = parts.hostname
        port = parts.port
    except ValueError:  # a port that is not a number or out of range
        return None
    if not hostname:
        return None
    host = _ascii_host(hostname)
    if host is None:
        return None
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    if port is None or port == default_port:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def robots_url(origin_: str) -> str:
    """Where an origin's robots.txt lives."""
    return f"{origin_}/robots.txt"


def _ascii_host(hostname: str) -> str | None:
    host = hostname.rstrip(".") or hostname
    if host.isascii():
        return host.lower()
    try:
        return host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        # A label IDNA 2003 rejects: compare the lower-cased Unicode form rather
        # than lose the request.
        return host.lower()

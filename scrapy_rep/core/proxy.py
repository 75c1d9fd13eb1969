"""Is an HTTP answer a proxy's own failure rather than the site's answer? (no I/O, no Scrapy)

A request sent through a proxy can come back with the proxy's own error: 407 (the proxy wants
credentials) or any status with an RFC 9209 ``Proxy-Status`` field whose member carries an
``error`` parameter ("the proxy encountered an error", RFC 9209 §2.1.1). Such an answer says
nothing about the site: for robots.txt it is "unreachable" (SPEC B2: retried, requests held),
never "no robots.txt: everything allowed".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from urllib.parse import urlsplit

from scrapy_rep.core._sfv import parse_list

__all__ = ["proxy_failure", "proxy_name"]

#: An ``error`` parameter, for a Proxy-Status value that is not a valid Structured Field: a
#: proxy that writes its field loosely still says it failed.
_LOOSE_ERROR = re.compile(r";\s*error\s*=\s*\"?([A-Za-z0-9_.*-]+)", re.IGNORECASE)


def proxy_failure(status: int, proxy_status: Sequence[str]) -> str | None:
    """Why the answer is the proxy's own failure (a phrase for log lines), or None when it is
    the site's. ``proxy_status``: the response's Proxy-Status field lines, as text."""
    if status == 407:
        return "the proxy asks for credentials (HTTP 407)"
    for value in proxy_status:
        members = parse_list(value)
        if members is None:
            loose = _LOOSE_ERROR.search(value)
            if loose is not None:
                return f"proxy error {loose.group(1)} (HTTP {status}, Proxy-Status)"
            continue
        for _value, params in members:
            error = params.get("error")
            if error is not None:
                name = error.decode("latin-1") if isinstance(error, bytes) else str(error)
                return f"proxy error {name} (HTTP {status}, Proxy-Status)"
    return None


@lru_cache(maxsize=256)
def proxy_name(proxy: str) -> str:
    """A proxy URL (``meta["proxy"]``) as it may be logged and keyed: its scheme and host and
    port, credentials left out (``http://user:pw@proxy:3128`` is ``http://proxy:3128``)."""
    parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"

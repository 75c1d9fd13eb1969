"""Which store a crawl uses, from its settings (read once, by the middleware's from_crawler).

- ``REP_STORE``: store URL. Unset or empty: ``sqlite:///<JOBDIR>/robotstxt.sqlite3`` when JOBDIR
  is set (a resumed job also resumes its robots.txt knowledge), else ``memory://``.
- ``REP_STORE_PREFIX``: key prefix inside the store (default ``scrapy-rep:``).
- ``REP_STORE_TIMEOUT``: seconds one store call may wait (default 2.0).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Protocol

from scrapy_rep.store._base import RobotsStore, open_store
from scrapy_rep.store._codec import DEFAULT_ENTRY_TTL, DEFAULT_PREFIX, DEFAULT_TIMEOUT

#: File name of the default SQLite store inside JOBDIR.
JOBDIR_STORE_FILE = "robotstxt.sqlite3"

#: Kept beyond the middleware's longest use of an entry, so expiry never races that use.
_ENTRY_TTL_MARGIN = 24 * 3600.0


class _Settings(Protocol):
    def get(self, name: str, default: Any = None) -> Any: ...


def store_url(settings: _Settings) -> str:
    url = settings.get("REP_STORE")
    if url:
        if not isinstance(url, str):
            raise ValueError(f"REP_STORE must be a URL string, got {url!r}")
        return url
    jobdir = settings.get("JOBDIR")
    if jobdir:
        return "sqlite://" + str(Path(jobdir).resolve() / JOBDIR_STORE_FILE)
    return "memory://"


def store_from_settings(settings: _Settings, *, keep_for: float = 0.0) -> RobotsStore:
    """Open the crawl's store.

    ``keep_for``: the longest time (seconds) the middleware may still use an entry after its
    last write (its stale max age / unreachable limit); persistent entries outlive it.
    """
    prefix = settings.get("REP_STORE_PREFIX", DEFAULT_PREFIX)
    if not isinstance(prefix, str):
        raise ValueError(f"REP_STORE_PREFIX must be a string, got {prefix!r}")
    raw_timeout = settings.get("REP_STORE_TIMEOUT", DEFAULT_TIMEOUT)
    try:
        timeout = float(raw_timeout)
    except (TypeError, ValueError):
        timeout = 0.0
    if not (timeout > 0 and math.isfinite(timeout)):
        raise ValueError(f"REP_STORE_TIMEOUT must be a number of seconds > 0, got {raw_timeout!r}")
    return open_store(
        store_url(settings),
        prefix=prefix,
        timeout=timeout,
        entry_ttl=max(DEFAULT_ENTRY_TTL, keep_for + _ENTRY_TTL_MARGIN),
    )

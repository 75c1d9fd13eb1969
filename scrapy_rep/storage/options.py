"""Which store a crawl opens and how: ``StoreOptions``, its defaults, and the one place a
``REP_STORE`` URL is told apart (``store_kind``). The REP_* settings that fill it are read and
checked in ``scrapy_rep.crawl._settings``, with the defaults of ``scrapy_rep.core.settings``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from scrapy_rep.core.settings import default

__all__ = [
    "DEFAULT_ENTRY_TTL",
    "DEFAULT_MEMORY_STORE_SIZE",
    "DEFAULT_PREFIX",
    "DEFAULT_TIMEOUT",
    "JOBDIR_STORE_FILE",
    "StoreKind",
    "StoreOptions",
    "store_kind",
    "store_url",
]

_DAY = 86400.0

#: File name of the default SQLite store inside JOBDIR.
JOBDIR_STORE_FILE = "robotstxt.sqlite3"
#: Key prefix (REP_STORE_PREFIX) so several projects can share one Redis database or SQLite file.
DEFAULT_PREFIX: str = default("REP_STORE_PREFIX")
#: Seconds a store call may wait (REP_STORE_TIMEOUT): Redis socket timeouts, SQLite busy timeout.
DEFAULT_TIMEOUT: float = default("REP_STORE_TIMEOUT")
#: Seconds an entry is kept after its last write: longer than the 30 days a last good copy may
#: serve (SPEC B3), so nothing the middleware could still use disappears, yet entries expire.
DEFAULT_ENTRY_TTL = 40 * _DAY
#: Origins the default in-memory store keeps (REP_MEMORY_STORE_SIZE), least recently used
#: evicted.
DEFAULT_MEMORY_STORE_SIZE: int = default("REP_MEMORY_STORE_SIZE")

StoreKind = Literal["memory", "sqlite", "redis"]


@dataclass(frozen=True)
class StoreOptions:
    """Which store to open and how (REP_STORE, REP_STORE_PREFIX, REP_STORE_TIMEOUT, ...)."""

    url: str
    prefix: str = DEFAULT_PREFIX
    timeout: float = DEFAULT_TIMEOUT
    entry_ttl: float = DEFAULT_ENTRY_TTL
    memory_size: int = DEFAULT_MEMORY_STORE_SIZE


def store_url(url: str | None, jobdir: str | None) -> str:
    """The store a crawl uses: ``url`` (REP_STORE) when given; else
    ``sqlite:///<JOBDIR>/robotstxt.sqlite3`` with a JOBDIR, else memory."""
    if url:
        return url
    if jobdir:
        return "sqlite://" + str(Path(jobdir).resolve() / JOBDIR_STORE_FILE)
    return "memory://"


def store_kind(url: str) -> StoreKind:
    """``memory://``, ``sqlite:///path/file.sqlite3`` or a Redis URL (``redis://host:port/db``,
    ``rediss://…``, ``unix:///path/redis.sock``); anything else raises ``ValueError`` naming
    ``REP_STORE``."""
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme == "memory":
        return "memory"
    if scheme == "sqlite":
        return "sqlite"
    if scheme in ("redis", "rediss", "unix"):
        return "redis"
    raise ValueError(
        f"REP_STORE={url!r} is not a store URL: use 'memory://', "
        "'sqlite:///path/to/robots.sqlite3' or 'redis://host:port/db'"
    )

"""Opening the store a crawl names: the factory sits above the backends, which know nothing of it.

``open_store(url, ...)`` for a ``REP_STORE`` URL; ``open_configured`` for a crawl's
``StoreOptions``.
"""

from __future__ import annotations

from typing import Any

from scrapy_rep.storage.options import (
    DEFAULT_ENTRY_TTL,
    DEFAULT_MEMORY_STORE_SIZE,
    StoreOptions,
    store_kind,
)
from scrapy_rep.storage.results._base import RobotsStore

__all__ = ["open_configured", "open_store"]


def open_store(url: str, *, memory_size: int | None = None, **options: Any) -> RobotsStore:
    """Build a store from a ``REP_STORE`` URL (see ``store_kind``); ``ValueError`` naming
    ``REP_STORE`` for anything else."""
    kind = store_kind(url)
    if kind == "memory":
        from scrapy_rep.storage.results._memory import MemoryStore

        return MemoryStore(
            size=memory_size or DEFAULT_MEMORY_STORE_SIZE,
            entry_ttl=options.get("entry_ttl", DEFAULT_ENTRY_TTL),
        )
    if kind == "sqlite":
        from scrapy_rep.storage.results._sqlite import SQLiteStore

        return SQLiteStore.from_url(url, **options)
    from scrapy_rep.storage.results._redis import RedisStore

    return RedisStore.from_url(url, **options)


def open_configured(options: StoreOptions) -> RobotsStore:
    return open_store(
        options.url,
        memory_size=options.memory_size,
        prefix=options.prefix,
        timeout=options.timeout,
        entry_ttl=options.entry_ttl,
    )

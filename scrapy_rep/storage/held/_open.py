"""Which held-requests place a crawl uses, from its store options and JOBDIR.

- the store (``REP_STORE``) is a Redis server: :class:`RedisHeld` (a fleet keeps what a dead
  process held);
- else a JOBDIR: :class:`JobdirHeld` (``<JOBDIR>/robotstxt-held.sqlite3``);
- else :class:`MemoryHeld`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy_rep.storage.held._base import HeldRequests
from scrapy_rep.storage.held._jobdir import JobdirHeld
from scrapy_rep.storage.held._memory import MemoryHeld
from scrapy_rep.storage.held._redis import DEFAULT_OWNER_TTL, RedisHeld
from scrapy_rep.storage.options import StoreOptions, store_kind

if TYPE_CHECKING:
    from scrapy import Spider

    from scrapy_rep.core.clock import Clock


def open_held(
    store: StoreOptions,
    *,
    jobdir: str | None,
    spider: Spider,
    stats: Any,
    clock: Clock,
    on_adopted: Callable[[dict[str, int]], None],
    owner_ttl: float = DEFAULT_OWNER_TTL,
) -> HeldRequests:
    """The crawl's held-requests place, opened (call when the spider opens).

    ``on_adopted`` (Redis only) is called with {origin: count} when requests became this
    process's to release: adopted from a dead process, or left in Redis by a failed ``take``.
    ``owner_ttl`` (Redis only, REP_HELD_OWNER_TTL): seconds after a process's last heartbeat
    before the fleet adopts what it held.
    """
    if store_kind(store.url) == "redis":
        from scrapy_rep.storage.results._redis import redis_client

        held = RedisHeld(
            # One connection: every call is made from the reactor thread.
            redis_client(store.url, timeout=store.timeout, connections=1),
            spider=spider,
            clock=clock,
            on_adopted=on_adopted,
            prefix=store.prefix,
            owner_ttl=owner_ttl,
            stats=stats,
        )
        held.start()
        return held
    if jobdir:
        return JobdirHeld.open(jobdir, spider, stats)
    return MemoryHeld()

"""Which held-requests place a crawl uses, from its settings.

- ``REP_STORE`` names a Redis server: :class:`RedisHeld` (a fleet keeps what a dead process held);
- else ``JOBDIR`` set: :class:`JobdirHeld` (``<JOBDIR>/robotstxt-held.sqlite3``);
- else :class:`MemoryHeld`.

``REP_HELD_OWNER_TTL`` (seconds, default 30): how long after a process's last heartbeat the
fleet adopts what it held (Redis only).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy_rep.crawl._settings import MiddlewareSettings
from scrapy_rep.storage.held._base import HeldRequests
from scrapy_rep.storage.held._jobdir import JobdirHeld
from scrapy_rep.storage.held._memory import MemoryHeld
from scrapy_rep.storage.held._redis import RedisHeld

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

    from scrapy_rep.core.clock import Clock


def open_held(
    crawler: Crawler,
    spider: Spider,
    *,
    clock: Clock,
    on_adopted: Callable[[dict[str, int]], None],
    config: MiddlewareSettings | None = None,
) -> HeldRequests:
    """The crawl's held-requests place, opened (call when the spider opens).

    ``on_adopted`` (Redis only) is called with {origin: count} when requests became this
    process's to release: adopted from a dead process, or left in Redis by a failed ``take``.
    ``config``: the crawl's checked settings (read from ``crawler.settings`` when not given).
    """
    if config is None:
        config = MiddlewareSettings.from_settings(crawler.settings)
    store = config.store
    if store.url.partition("://")[0].lower() in ("redis", "rediss", "unix"):
        from scrapy_rep.storage.results._redis import redis_client

        held = RedisHeld(
            # One connection: every call is made from the reactor thread.
            redis_client(store.url, timeout=store.timeout, connections=1),
            spider=spider,
            clock=clock,
            on_adopted=on_adopted,
            prefix=store.prefix,
            owner_ttl=config.held_owner_ttl,
            stats=crawler.stats,
        )
        held.start()
        return held
    jobdir = crawler.settings.get("JOBDIR")
    if jobdir:
        return JobdirHeld.open(jobdir, spider, crawler.stats)
    return MemoryHeld()

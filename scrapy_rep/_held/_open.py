"""Which held-requests place a crawl uses, from its settings.

- ``REP_STORE`` names a Redis server: :class:`RedisHeld` (a fleet keeps what a dead process held);
- else ``JOBDIR`` set: :class:`JobdirHeld` (``<JOBDIR>/robotstxt-held.sqlite3``);
- else :class:`MemoryHeld`.

``REP_HELD_OWNER_TTL`` (seconds, default 30): how long after a process's last heartbeat the
fleet adopts what it held (Redis only).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy_rep._held._base import HeldRequests, MemoryHeld
from scrapy_rep._held._jobdir import JobdirHeld
from scrapy_rep._held._redis import DEFAULT_OWNER_TTL, Clock, RedisHeld
from scrapy_rep._settings import store_url
from scrapy_rep.store._codec import DEFAULT_PREFIX, DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings


def open_held(
    crawler: Crawler,
    spider: Spider,
    *,
    clock: Clock,
    on_adopted: Callable[[dict[str, int]], None],
) -> HeldRequests:
    """The crawl's held-requests place, opened (call when the spider opens).

    ``on_adopted`` (Redis only) is called with {origin: count} when requests became this
    process's to release: adopted from a dead process, or left in Redis by a failed ``take``.
    """
    settings = crawler.settings
    url = store_url(settings)
    if url.partition("://")[0].lower() in ("redis", "rediss", "unix"):
        from scrapy_rep.store._redis import redis_client

        timeout = _positive(settings, "REP_STORE_TIMEOUT", DEFAULT_TIMEOUT)
        held = RedisHeld(
            # One connection: every call is made from the reactor thread.
            redis_client(url, timeout=timeout, connections=1),
            spider=spider,
            clock=clock,
            on_adopted=on_adopted,
            prefix=settings.get("REP_STORE_PREFIX", DEFAULT_PREFIX),
            owner_ttl=_positive(settings, "REP_HELD_OWNER_TTL", DEFAULT_OWNER_TTL),
            stats=crawler.stats,
        )
        held.start()
        return held
    jobdir = settings.get("JOBDIR")
    if jobdir:
        return JobdirHeld.open(jobdir, spider, crawler.stats)
    return MemoryHeld()


def _positive(settings: BaseSettings, name: str, default: float) -> float:
    value = settings.get(name)
    if value is None or value == "":
        return default
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not (number > 0 and math.isfinite(number)):
        raise ValueError(f"{name} must be a number of seconds > 0, got {value!r}")
    return number

"""Held requests in a fleet's Redis: a process's death does not lose what it held.

Keys, under the store's prefix ``P`` (``REP_STORE_PREFIX``, default ``scrapy-rep:``):

- ``P held:owners``: set of the owners (one per process) that may have held requests;
- ``P held:alive:<owner>``: the owner's heartbeat, renewed every ``owner_ttl / 3`` s with a
  ``owner_ttl`` expiry (gone ``owner_ttl`` s after a ``kill -9``, at once on ``close``);
- ``P held:origins:<owner>``: set of the origins the owner holds requests for;
- ``P held:list:<owner>:<origin>``: the owner's held requests for that origin, oldest first,
  as JSON (``_codec``: never pickle);
- ``P held:kept:origins`` and ``P held:kept:list:<origin>``: requests a run stopped waiting
  for (given up, held too long), owned by no process: no live process adopts them, and the
  first process of the fleet's next run takes them when it starts.

Every heartbeat also adopts: in one Lua script, the requests of every owner whose heartbeat is
gone move to this owner's lists, and ``on_adopted`` is told which origins now have requests;
the holds module takes them and sends them through this process's own gate. Scripts touch keys
they compute, so this needs one Redis server (or a replica set), not Redis Cluster — as
scrapy-redis.

Calls are synchronous, as scrapy-redis's scheduler makes its own, with the socket timeout of
``REP_STORE_TIMEOUT``. When Redis fails, requests are kept in memory (WARNING once per outage,
stat ``robotstxt/held_not_durable``) and Redis is not asked again for ``retry_interval`` s, so
an outage does not block the reactor once per request. A ``take`` that failed is retried at
the next heartbeat that reaches Redis (``on_adopted`` names the origin again).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from twisted.internet import task

from scrapy_rep.core.settings import default
from scrapy_rep.core.stats import (
    HELD_ADOPTED,
    HELD_DROPPED_ON_CLOSE,
    HELD_NOT_DURABLE,
    HELD_RESTORED,
    HELD_UNREADABLE,
)
from scrapy_rep.storage.held import _codec
from scrapy_rep.storage.held._memory import Spill
from scrapy_rep.storage.held._scripts import ADOPT, ELSEWHERE, RESUME, TAKE
from scrapy_rep.storage.outage import Outage

if TYPE_CHECKING:
    import redis
    from scrapy import Spider
    from scrapy.http import Request
    from scrapy.statscollectors import StatsCollector
    from twisted.internet.interfaces import IReactorTime

    from scrapy_rep.core.clock import Clock

logger = logging.getLogger(__name__)

#: Seconds after its last heartbeat that a process's held requests may be adopted.
DEFAULT_OWNER_TTL: float = default("REP_HELD_OWNER_TTL")


class RedisHeld:
    """See the module docstring. ``start()`` when the spider opens, ``close()`` when it closes."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        spider: Spider | None,
        clock: Clock,
        on_adopted: Callable[[dict[str, int]], None],
        prefix: str = "scrapy-rep:",
        owner_ttl: float = DEFAULT_OWNER_TTL,
        retry_interval: float = 5.0,
        stats: StatsCollector | None = None,
        owner: str | None = None,
    ) -> None:
        self.owner = owner or uuid.uuid4().hex
        self._client = client
        self._spider = spider
        self._clock = clock
        self._on_adopted = on_adopted
        self._prefix = prefix
        self._ttl_ms = max(1, int(owner_ttl * 1000))
        self._retry_interval = retry_interval
        self._stats = stats
        self._adopt = client.register_script(ADOPT)
        self._take = client.register_script(TAKE)
        self._elsewhere = client.register_script(ELSEWHERE)
        self._resume = client.register_script(RESUME)
        self._resumed = False
        self.next_run = (
            f"Redis ({prefix}held:kept:*); the fleet's next run with the same REP_STORE takes them"
        )
        self._spill = Spill()
        self._durable: dict[str, int] = {}
        self._durable_total = 0
        self._retake: set[str] = set()
        # This process's own requests stored in Redis, by origin and number: a take that
        # Redis cannot answer returns these, so a Redis outage never strands a request here
        # (the Redis copies, when it answers again, are skipped by number).
        self._mirror: dict[str, dict[int, Request]] = {}
        self._released: dict[str, set[int]] = {}
        # A random start makes this owner's numbers unlike an adopted owner's.
        self._seq = int.from_bytes(os.urandom(4), "big") << 20
        self._down_until = 0.0
        self._outage = Outage(
            stats=stats,
            logger=logger,
            lost="Redis unavailable for held requests (%s): holding in memory until it answers "
            "again; those are lost if this process dies",
            back="Redis answers again for held requests",
            spider=lambda: spider,
        )
        self._heartbeat = task.LoopingCall(self.beat)
        self._heartbeat.clock = cast("IReactorTime", clock)
        self._owner_ttl = owner_ttl

    # -- lifecycle ------------------------------------------------------------

    def start(self) -> None:
        """Register this owner, adopt what dead owners left, beat every ``owner_ttl / 3`` s."""
        self._heartbeat.start(self._owner_ttl / 3, now=True)

    def beat(self) -> None:
        """Renew the heartbeat and adopt the held requests of owners whose heartbeat is gone."""
        alive = f"{self._prefix}held:alive:{self.owner}"
        try:
            pipe = self._client.pipeline(transaction=True)
            pipe.set(alive, b"1", px=self._ttl_ms)
            pipe.sadd(f"{self._prefix}held:owners", self.owner)
            pipe.execute()
            reply = cast("list[Any]", self._adopt(args=[self._prefix, self.owner]))
            resumed = [] if self._resumed else self._resume(args=[self._prefix, self.owner])
            self._resumed = True
        except Exception as exc:  # redis.RedisError, OSError: the next beat tries again
            self._failed(exc)
            return
        self._recovered()
        available = self._resumed_from(cast("list[Any]", resumed))
        adopted = _pairs(reply)
        for origin, count in adopted.items():
            available[origin] = available.get(origin, 0) + count
            self._count(origin, count)
        if adopted:
            self._inc(HELD_ADOPTED, sum(adopted.values()))
            logger.warning(
                "Adopted %d request(s) held for robots.txt by fleet processes that stopped "
                "(no heartbeat for %.0f s), for %d origin(s)",
                sum(adopted.values()),
                self._ttl_ms / 1000,
                len(adopted),
                extra={"spider": self._spider},
            )
        for origin in self._retake:
            available.setdefault(origin, self._durable.get(origin, 0))
        self._retake.clear()
        if available:
            self._on_adopted(available)

    def close(self) -> None:
        """Stop beating and drop the heartbeat: a live process adopts what is still held at
        once (or the next process to start with this prefix does)."""
        if self._heartbeat.running:
            self._heartbeat.stop()
        lost = len(self._spill)
        if lost:
            self._inc(HELD_DROPPED_ON_CLOSE, lost)
            logger.warning(
                "%d request(s) held for robots.txt could not be written to Redis and are lost "
                "with this process",
                lost,
                extra={"spider": self._spider},
            )
        try:
            self._client.delete(f"{self._prefix}held:alive:{self.owner}")
            if not self._durable_total:
                self._client.srem(f"{self._prefix}held:owners", self.owner)
        except Exception as exc:  # they are adopted when the heartbeat key expires instead
            logger.warning(
                "Could not tell Redis this process stopped (%s); %d held request(s) left "
                "there are adopted by another process within %.0f s",
                exc,
                self._durable_total,
                self._ttl_ms / 1000,
                extra={"spider": self._spider},
            )

    # -- HeldRequests ---------------------------------------------------------

    def add(self, origin: str, request: Request) -> None:
        self._seq += 1
        seq = self._seq
        try:
            data = _codec.dumps(request, self._spider, seq)
        except (TypeError, ValueError) as exc:
            self._keep_in_memory(origin, seq, request, f"cannot be stored as JSON: {exc}")
            return
        if self._clock.seconds() < self._down_until:
            self._keep_in_memory(origin, seq, request, "cannot reach Redis")
            return
        try:
            pipe = self._client.pipeline(transaction=True)
            pipe.rpush(self._list_key(origin), data)
            pipe.sadd(self._origins_key(), origin)
            pipe.execute()
        except Exception as exc:  # redis.RedisError, OSError
            self._failed(exc)
            self._keep_in_memory(origin, seq, request, "cannot reach Redis")
            return
        self._recovered()
        self._count(origin, 1)
        self._mirror.setdefault(origin, {})[seq] = request

    def take(self, origin: str) -> list[Request]:
        durable: list[tuple[int, Request]] = []
        if self._durable.get(origin) or origin in self._released:
            try:
                items = cast(
                    "list[bytes]",
                    self._take(keys=[self._list_key(origin), self._origins_key()], args=[origin]),
                )
            except Exception as exc:  # still in Redis: named again by the next good heartbeat
                self._failed(exc)
                self._retake.add(origin)
                # Released from this process's copies now; adopted ones wait for Redis.
                mirror = self._mirror.pop(origin, {})
                self._released.setdefault(origin, set()).update(mirror)
                self._count(origin, -len(mirror))
                durable = sorted(mirror.items(), key=lambda item: item[0])
            else:
                self._recovered()
                self._count(origin, -self._durable.get(origin, 0))
                self._mirror.pop(origin, None)
                released = self._released.pop(origin, set())
                durable = [item for item in self._load_all(items) if item[0] not in released]
        return self._spill.merge(origin, durable)

    def origins(self) -> list[str]:
        return sorted({o for o, n in self._durable.items() if n} | self._spill.origins())

    def peek(self) -> list[Request]:
        found = self._spill.peek()
        if not self._durable or self._clock.seconds() < self._down_until:
            return found
        try:
            pipe = self._client.pipeline(transaction=False)
            for origin in self._durable:
                pipe.lrange(self._list_key(origin), 0, -1)
            lists = cast("list[list[bytes]]", pipe.execute())
        except Exception as exc:  # redis.RedisError, OSError
            self._failed(exc)
            return found
        self._recovered()
        for items in lists:
            for data in items:
                try:
                    found.append(_codec.loads(data, self._spider)[1])
                except Exception:  # ``take`` counts and reports it
                    continue
        return found

    def put_aside(self, origin: str, requests: list[Request]) -> list[Request]:
        items, lost = [], []
        for request in requests:
            self._seq += 1
            try:
                items.append(_codec.dumps(request, self._spider, self._seq))
            except (TypeError, ValueError):  # in memory only for this reason: it stays so
                lost.append(request)
        if not items:
            return lost
        try:
            pipe = self._client.pipeline(transaction=True)
            pipe.rpush(f"{self._prefix}held:kept:list:{origin}", *items)
            pipe.sadd(f"{self._prefix}held:kept:origins", origin)
            pipe.execute()
        except Exception as exc:  # redis.RedisError, OSError
            self._failed(exc)
            return requests
        self._recovered()
        return lost

    def __len__(self) -> int:
        return self._durable_total + len(self._spill)

    def in_memory(self) -> int:
        return len(self._spill)

    def pending_elsewhere(self) -> bool:
        """Do other owners (alive, or dead and not adopted yet) hold requests? A fleet process
        should not close then: those requests may come to it (spider_idle → DontCloseSpider)."""
        if self._clock.seconds() < self._down_until:
            return False
        try:
            return bool(self._elsewhere(args=[self._prefix, self.owner]))
        except Exception as exc:  # redis.RedisError, OSError
            self._failed(exc)
            return False

    # -- helpers --------------------------------------------------------------

    def _resumed_from(self, reply: list[Any]) -> dict[str, int]:
        """Requests the fleet's earlier run kept, now this process's: counted as restored."""
        resumed = _pairs(reply)
        for origin, count in resumed.items():
            self._count(origin, count)
        if resumed:
            total = sum(resumed.values())
            self._inc(HELD_RESTORED, total)
            logger.info(
                "Resuming %d request(s) the fleet kept for robots.txt in an earlier run",
                total,
                extra={"spider": self._spider},
            )
        return resumed

    def _list_key(self, origin: str) -> str:
        return f"{self._prefix}held:list:{self.owner}:{origin}"

    def _origins_key(self) -> str:
        return f"{self._prefix}held:origins:{self.owner}"

    def _count(self, origin: str, delta: int) -> None:
        count = self._durable.get(origin, 0) + delta
        if count:
            self._durable[origin] = count
        else:
            self._durable.pop(origin, None)
        self._durable_total += delta

    def _load_all(self, items: list[bytes]) -> list[tuple[int, Request]]:
        loaded = []
        for data in items:
            try:
                loaded.append(_codec.loads(data, self._spider))
            except Exception as exc:  # written by something else, or its callback is gone
                self._inc(HELD_UNREADABLE)
                logger.warning(
                    "A request held for robots.txt cannot be read back from Redis (%s); it is "
                    "lost: %r",
                    exc,
                    data[:200],
                    extra={"spider": self._spider},
                )
        # Adopted requests carry their first owner's numbers: keep each list's own order.
        return loaded

    def _keep_in_memory(self, origin: str, seq: int, request: Request, why: str) -> None:
        self._spill.add(origin, seq, request)
        self._inc(HELD_NOT_DURABLE)
        logger.debug(
            "Held request %s %s: kept in this process's memory only",
            request,
            why,
            extra={"spider": self._spider},
        )

    def _failed(self, exc: Exception) -> None:
        self._down_until = self._clock.seconds() + self._retry_interval
        self._outage.failed(exc)

    def _recovered(self) -> None:
        self._outage.answered()

    def _inc(self, name: str, count: int = 1) -> None:
        if self._stats is not None:
            self._stats.inc_value(name, count)


def _pairs(reply: list[Any]) -> dict[str, int]:
    """A script's ``origin, count, origin, count…`` reply as a dict."""
    pairs: dict[str, int] = {}
    for origin_raw, count in zip(reply[::2], reply[1::2], strict=True):
        origin = origin_raw.decode() if isinstance(origin_raw, bytes) else str(origin_raw)
        pairs[origin] = int(count)
    return pairs

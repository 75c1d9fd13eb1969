"""Redis store: robots.txt results shared by every crawler process of a fleet.

URL: anything redis-py's ``from_url`` takes — ``redis://[[user]:password@]host:port/db``,
``rediss://…`` (TLS), ``unix:///path/redis.sock?db=0``.

Per origin, one hash ``<prefix>robots:<origin>`` with fields ``v`` (format version), ``meta``
(JSON) and ``body`` (raw bytes; absent for "no robots.txt"), expiring ``entry_ttl`` seconds after
its last write; the lease is ``<prefix>lease:<origin>`` holding the owner, with a PX expiry.

A pause (SPEC H): the hash ``<prefix>pause:<origin>`` (``failures``, ``reason``; kept for
``PAUSE_RECORD_TTL``) and ``<prefix>pausewin:<origin>``, whose PX time-to-live is what is left of
the pause (so the hosts' clocks never matter); the set ``<prefix>pauses`` names the origins with
a pause, and ``<prefix>pauses:v`` counts the changes (what the fleet polls).

Calls run in a small private thread pool with short socket timeouts and at most one immediate
reconnect (a pooled connection may be stale after a Redis restart), so every call ends within
about twice ``timeout``; any Redis error becomes StoreUnavailable.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

from scrapy_rep.core.policy import FORMAT_VERSION
from scrapy_rep.storage.options import DEFAULT_ENTRY_TTL, DEFAULT_PREFIX, DEFAULT_TIMEOUT
from scrapy_rep.storage.results._base import (
    PAUSE_RECORD_TTL,
    StoredPause,
    StoredRobots,
    StoreUnavailable,
)
from scrapy_rep.storage.results._codec import decode, encode_meta
from scrapy_rep.storage.results._threaded import DEFAULT_RETRY_INTERVAL, ThreadedStore

if TYPE_CHECKING:
    import redis

#: Threads (and pooled connections) per store: enough for the middleware's few concurrent calls.
_THREADS = 4

# Take the lease when it is free or already ours (then extend it); atomic on the server.
_ACQUIRE = """
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    return 1
end
return 0
"""

# Delete the lease only if it is still ours: a late release must not free another owner's lease.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""


def _import_redis() -> None:
    try:
        import redis  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "REP_STORE names a Redis server, which needs redis-py: "
            "pip install 'scrapy-rep[redis]' (or set REP_STORE to 'memory://' or 'sqlite:///…')"
        ) from exc


class RedisBackend:
    """The blocking half; redis-py's client and connection pool are thread-safe."""

    def __init__(self, client: redis.Redis, *, label: str, prefix: str, entry_ttl: float) -> None:
        self._client = client
        self._label = label
        self._prefix = prefix
        self._entry_ttl_ms = max(1, int(entry_ttl * 1000))
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)

    @contextmanager
    def _translate(self) -> Iterator[None]:
        import redis

        try:
            yield
        except (redis.RedisError, OSError) as exc:
            raise StoreUnavailable(f"redis store {self._label}: {exc}") from exc

    def _entry_key(self, origin: str) -> str:
        return f"{self._prefix}robots:{origin}"

    def _lease_key(self, origin: str) -> str:
        return f"{self._prefix}lease:{origin}"

    def get(self, origin: str) -> StoredRobots | None:
        import redis

        with self._translate():
            try:
                fields = cast("dict[bytes, bytes]", self._client.hgetall(self._entry_key(origin)))
            except redis.ResponseError as exc:
                # Something else wrote that key (not a hash): an unreadable entry, not an outage.
                if "WRONGTYPE" not in str(exc):
                    raise
                return None
        if not fields:
            return None
        raw_version = fields.get(b"v", b"")
        version = int(raw_version) if raw_version.isdigit() else raw_version
        return decode(version, fields.get(b"meta", b""), fields.get(b"body"), origin)

    def put(self, origin: str, entry: StoredRobots) -> None:
        key = self._entry_key(origin)
        with self._translate():
            # One MULTI/EXEC: readers see the old entry or the new one, never a mix.
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(key)
            pipe.hset(key, "v", str(FORMAT_VERSION))
            pipe.hset(key, "meta", encode_meta(entry.meta))
            if entry.body is not None:
                pipe.hset(key, "body", entry.body)
            pipe.pexpire(key, self._entry_ttl_ms)
            pipe.execute()

    def acquire_lease(self, origin: str, owner: str, ttl: float) -> bool:
        with self._translate():
            taken = self._acquire(
                keys=[self._lease_key(origin)], args=[owner, max(1, int(ttl * 1000))]
            )
        return bool(taken)

    def release_lease(self, origin: str, owner: str) -> None:
        with self._translate():
            self._release(keys=[self._lease_key(origin)], args=[owner])

    def _pause_keys(self, origin: str) -> tuple[str, str]:
        return f"{self._prefix}pause:{origin}", f"{self._prefix}pausewin:{origin}"

    def set_pause(self, origin: str, seconds: float, failures: int, reason: str) -> None:
        record, window = self._pause_keys(origin)
        with self._translate():
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(record)
            pipe.hset(record, mapping={"failures": str(failures), "reason": reason})
            pipe.pexpire(record, int(PAUSE_RECORD_TTL * 1000))
            pipe.set(window, b"1", px=max(1, int(seconds * 1000)))
            pipe.sadd(self._pauses_key, origin)
            pipe.incr(self._version_key)
            pipe.execute()

    def clear_pause(self, origin: str) -> None:
        record, window = self._pause_keys(origin)
        with self._translate():
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(record, window)
            pipe.srem(self._pauses_key, origin)
            pipe.incr(self._version_key)
            pipe.execute()

    def pauses(self) -> tuple[int, dict[str, StoredPause]]:
        with self._translate():
            pipe = self._client.pipeline(transaction=True)
            pipe.get(self._version_key)
            pipe.smembers(self._pauses_key)
            raw_version, members = pipe.execute()
            origins = sorted(m.decode("utf-8", "replace") for m in members)
            pipe = self._client.pipeline(transaction=False)
            for origin in origins:
                record, window = self._pause_keys(origin)
                pipe.hgetall(record)
                pipe.pttl(window)
            answers = pipe.execute() if origins else []
            found: dict[str, StoredPause] = {}
            lapsed = []
            for origin, fields, ttl_ms in zip(origins, answers[::2], answers[1::2], strict=True):
                failures = fields.get(b"failures", b"")
                if not fields or not failures.isdigit():
                    lapsed.append(origin)  # the record expired (or is not ours): forget it
                    continue
                reason = fields.get(b"reason", b"").decode("utf-8", "replace")
                found[origin] = StoredPause(max(0, ttl_ms) / 1000, int(failures), reason)
            if lapsed:
                self._client.srem(self._pauses_key, *lapsed)
        return int(raw_version or 0), found

    def pause_version(self) -> int:
        with self._translate():
            return int(self._client.get(self._version_key) or 0)

    @property
    def _pauses_key(self) -> str:
        return f"{self._prefix}pauses"

    @property
    def _version_key(self) -> str:
        return f"{self._prefix}pauses:v"

    def close(self) -> None:
        self._client.close()


class RedisStore(ThreadedStore):
    backend: RedisBackend

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        timeout: float = DEFAULT_TIMEOUT,
        entry_ttl: float = DEFAULT_ENTRY_TTL,
        retry_interval: float = DEFAULT_RETRY_INTERVAL,
    ) -> RedisStore:
        client = redis_client(url, timeout=timeout, connections=_THREADS)
        label = _safe_label(client)
        backend = RedisBackend(client, label=label, prefix=prefix, entry_ttl=entry_ttl)
        return cls(
            backend,
            name=f"redis store {label}",
            threads=_THREADS,
            retry_interval=retry_interval,
        )


def redis_client(url: str, *, timeout: float, connections: int) -> redis.Redis:
    """A client for the ``REP_STORE`` URL: short timeouts, one immediate reconnect, no server
    contact yet (Redis being down at startup must not stop the crawl)."""
    _import_redis()
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    # redis-py silently uses db 0 for a path that is not a number: a typo must not do that.
    path = urlsplit(url).path
    if url.startswith(("redis://", "rediss://")) and not re.fullmatch(r"/?\d*", path):
        raise ValueError(
            f"REP_STORE={url!r}: the path must be a database number, as in 'redis://host:6379/0'"
        )
    try:
        return redis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)),
            max_connections=connections,
        )
    except ValueError as exc:
        raise ValueError(
            f"REP_STORE={url!r} is not a usable Redis URL ({exc}): use 'redis://host:port/db'"
        ) from exc


def _safe_label(client: redis.Redis) -> str:
    """host:port/db or the socket path, without any password, for messages."""
    kwargs = client.connection_pool.connection_kwargs
    where = kwargs.get("path") or f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"
    return f"{where}/{kwargs.get('db', 0)}"

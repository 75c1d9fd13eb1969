"""What every persistent store backend must do, run against SQLite and a real redis-server.

Backend-specific behaviour (key layout, corrupt entries, outages) is in test_store_sqlite.py and
test_store_redis.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _redis_server import RedisServer
from _store_cases import BINARY, ORIGINS, wait_until

from scrapy_rep.storage.results import StoredRobots
from scrapy_rep.storage.results._redis import RedisStore
from scrapy_rep.storage.results._sqlite import SQLiteStore
from scrapy_rep.storage.results._threaded import Backend

OpenBackend = Callable[..., Backend]


@pytest.fixture(params=["sqlite", "redis"])
def backends(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenBackend]:
    """``backends(prefix=...)``: another connection to one store, like another process."""
    opened: list[Backend] = []
    with contextlib.ExitStack() as stack:
        if request.param == "redis":
            server = stack.enter_context(RedisServer.start(tmp_path / "redis"))

        def open_backend(prefix: str = "scrapy-rep:") -> Backend:
            backend: Backend
            if request.param == "redis":
                backend = RedisStore.from_url(server.url, prefix=prefix).backend
            else:
                url = f"sqlite://{tmp_path / 'robots.sqlite3'}"
                backend = SQLiteStore.from_url(url, prefix=prefix).backend
            opened.append(backend)
            return backend

        yield open_backend
        for backend in opened:
            backend.close()


def test_round_trip_keeps_meta_and_binary_body(backends: OpenBackend) -> None:
    store = backends()
    meta = {"status": 200, "fetched_at": 1.5, "nested": {"é": [1, None, True]}}
    store.put("http://a.test", StoredRobots(meta=meta, body=BINARY))
    store.put("http://empty.test", StoredRobots(meta={"status": 200}, body=b""))
    store.put("http://none.test", StoredRobots(meta={"status": 404}, body=None))
    assert store.get("http://a.test") == StoredRobots(meta=meta, body=BINARY)
    assert store.get("http://empty.test") == StoredRobots(meta={"status": 200}, body=b"")
    assert store.get("http://none.test") == StoredRobots(meta={"status": 404}, body=None)
    store.put("http://a.test", StoredRobots(meta={"status": 404}, body=None))
    assert store.get("http://a.test") == StoredRobots(meta={"status": 404}, body=None)


def test_missing_origin_is_none(backends: OpenBackend) -> None:
    assert backends().get("http://nothing.test") is None


def test_distinct_origins_and_prefixes_never_share_an_entry(backends: OpenBackend) -> None:
    store, other = backends(prefix="one:"), backends(prefix="two:")
    for i, origin in enumerate(ORIGINS):
        store.put(origin, StoredRobots(meta={"i": i}, body=origin.encode()))
        assert store.acquire_lease(origin, "me", 60)
    for i, origin in enumerate(ORIGINS):
        assert store.get(origin) == StoredRobots(meta={"i": i}, body=origin.encode())
        assert other.get(origin) is None
        assert other.acquire_lease(origin, "them", 60)
    # The middleware normalises origins; the store itself never folds or trims them.
    assert store.get("http://EXAMPLE.com") is None
    assert store.get("http://example.com/") is None


def test_lease_is_exclusive_reentrant_and_released_only_by_owner(backends: OpenBackend) -> None:
    first, second = backends(), backends()
    assert first.acquire_lease("http://a.test", "p1", 60)
    assert not second.acquire_lease("http://a.test", "p2", 60)
    assert first.acquire_lease("http://a.test", "p1", 60)
    assert second.acquire_lease("https://a.test", "p2", 60)
    second.release_lease("http://a.test", "p2")
    assert not second.acquire_lease("http://a.test", "p2", 60)
    first.release_lease("http://a.test", "p1")
    assert second.acquire_lease("http://a.test", "p2", 60)
    assert not first.acquire_lease("http://a.test", "p1", 60)


def test_lease_of_a_dead_holder_expires(backends: OpenBackend) -> None:
    first, second = backends(), backends()
    assert first.acquire_lease("http://a.test", "dead", 0.3)
    assert not second.acquire_lease("http://a.test", "alive", 60)
    assert wait_until(lambda: second.acquire_lease("http://a.test", "alive", 60), timeout=5)
    assert not first.acquire_lease("http://a.test", "dead", 60)


def test_lease_taken_again_by_its_owner_is_renewed_with_the_new_ttl(
    backends: OpenBackend,
) -> None:
    # The middleware renews its lease during a fetch by taking it again: the new TTL replaces
    # the old one (here shortened, so the lapse shows without waiting a long TTL out).
    first, second = backends(), backends()
    assert first.acquire_lease("http://a.test", "p1", 600)
    assert first.acquire_lease("http://a.test", "p1", 0.3)
    assert not second.acquire_lease("http://a.test", "p2", 60)
    assert wait_until(lambda: second.acquire_lease("http://a.test", "p2", 60), timeout=5)

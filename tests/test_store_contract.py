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

from scrapy_rep.storage.results import MemoryStore, StoredRobots
from scrapy_rep.storage.results._redis import RedisStore
from scrapy_rep.storage.results._sqlite import SQLiteStore
from scrapy_rep.storage.results._threaded import Backend

OpenBackend = Callable[..., Backend]


@pytest.fixture(params=["sqlite", "redis"])
def backends(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenBackend]:
    """``backends(prefix=...)``: another connection to one store, like another process."""
    yield from _open_backends(request.param, tmp_path)


def _open_backends(kind: str, tmp_path: Path) -> Iterator[OpenBackend]:
    opened: list[Backend] = []
    with contextlib.ExitStack() as stack:
        if kind == "redis":
            server = stack.enter_context(RedisServer.start(tmp_path / "redis"))

        def open_backend(prefix: str = "scrapy-rep:") -> Backend:
            backend: Backend
            if kind == "redis":
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


# -- pauses (SPEC H5): every store, the memory one included ----------------------------------


class _Immediate:
    """A MemoryStore behind the blocking interface (its Deferreds have fired already)."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Callable[..., object]:
        method = getattr(self._store, name)

        def call(*args: object) -> object:
            found: list[object] = []
            method(*args).addBoth(found.append)
            return found[0]

        return call


@pytest.fixture(params=["memory", "sqlite", "redis"])
def pause_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenBackend]:
    """``pause_stores()``: another connection to one store (the memory store: itself)."""
    if request.param == "memory":
        memory = _Immediate(MemoryStore())
        yield lambda prefix="scrapy-rep:": memory  # type: ignore[misc]
        return
    yield from _open_backends(request.param, tmp_path)


def test_a_pause_is_shared_with_its_time_left_failures_and_reason(
    pause_stores: OpenBackend,
) -> None:
    first, second = pause_stores(), pause_stores()
    version, found = second.pauses()
    assert found == {}
    first.set_pause("http://a.test", 60, 2, "HTTP 503 at /x")
    assert second.pause_version() != version
    version, found = second.pauses()
    assert set(found) == {"http://a.test"}
    pause = found["http://a.test"]
    assert 59 < pause.remaining <= 60
    assert (pause.failures, pause.reason) == (2, "HTTP 503 at /x")
    assert version == second.pause_version()


def test_a_pause_over_stays_until_cleared_and_clearing_is_seen(pause_stores: OpenBackend) -> None:
    first, second = pause_stores(), pause_stores()
    first.set_pause("https://a.test", 0.3, 1, "HTTP 429")
    first.set_pause("http://b.test", 60, 1, "HTTP 503")
    # Over: a probe is due, and the record says how many pauses came in a row.
    assert wait_until(lambda: second.pauses()[1]["https://a.test"].remaining == 0, timeout=5)
    before = second.pause_version()
    first.clear_pause("https://a.test")
    assert second.pause_version() != before
    assert set(second.pauses()[1]) == {"http://b.test"}
    first.clear_pause("http://nothing.test")  # clearing what is not there is no error


def test_pauses_of_other_prefixes_are_not_seen(backends: OpenBackend) -> None:
    store, other = backends(prefix="one:"), backends(prefix="two:")
    store.set_pause("http://a.test", 60, 1, "HTTP 503")
    assert other.pauses()[1] == {}

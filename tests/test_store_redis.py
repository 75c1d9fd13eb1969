"""RedisStore specifics against a real redis-server started by the test (never fakeredis).

What every backend must do is in test_store_contract.py.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import pytest
import redis
from _redis_server import RedisServer, free_port
from _store_cases import BINARY, ORIGINS, close_while_busy, crawl_store, wait_until
from _store_client import StoreClient

from scrapy_rep.core.policy import FORMAT_VERSION
from scrapy_rep.storage.results import StoredRobots, open_store
from scrapy_rep.storage.results._base import StoreUnavailable
from scrapy_rep.storage.results._redis import RedisBackend, RedisStore


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    with RedisServer.start(tmp_path / "redis") as running:
        yield running


@pytest.fixture
def stores(server: RedisServer) -> Iterator[Callable[..., RedisStore]]:
    opened: list[RedisStore] = []

    def open_redis(**options: float | str) -> RedisStore:
        store = RedisStore.from_url(server.url, **options)  # type: ignore[arg-type]
        opened.append(store)
        return store

    yield open_redis
    for store in opened:
        store.backend.close()


@pytest.fixture
def raw(server: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(server.url, socket_timeout=5)
    yield client
    client.close()


def backend(stores: Callable[..., RedisStore], **options: float | str) -> RedisBackend:
    return stores(**options).backend


def test_entries_expire_after_entry_ttl(
    stores: Callable[..., RedisStore], raw: redis.Redis
) -> None:
    store = backend(stores, entry_ttl=3600.0)
    store.put("http://a.test", StoredRobots(meta={}, body=b"x"))
    assert 3500_000 < raw.pttl("scrapy-rep:robots:http://a.test") <= 3600_000
    short = backend(stores, entry_ttl=0.2)
    short.put("http://b.test", StoredRobots(meta={}, body=b"x"))
    assert wait_until(lambda: short.get("http://b.test") is None, timeout=5)


def test_other_format_version_or_garbage_is_ignored(
    stores: Callable[..., RedisStore], raw: redis.Redis
) -> None:
    store = backend(stores)
    store.put("http://a.test", StoredRobots(meta={"x": 1}, body=b"old"))
    raw.hset("scrapy-rep:robots:http://a.test", "v", str(FORMAT_VERSION + 1))
    raw.hset("scrapy-rep:robots:http://b.test", mapping={"v": "1", "meta": b"\x80not json"})
    raw.hset("scrapy-rep:robots:http://c.test", mapping={"v": "x", "meta": "{}"})
    raw.hset("scrapy-rep:robots:http://d.test", mapping={"meta": "{}"})
    # A pickle is just bytes that are not JSON: ignored, never unpickled.
    raw.hset("scrapy-rep:robots:http://e.test", mapping={"v": "1", "meta": b"\x80\x04K\x01."})
    for origin in ("http://a.test", "http://b.test", "http://c.test", "http://d.test"):
        assert store.get(origin) is None
    assert store.get("http://e.test") is None
    raw.set("scrapy-rep:robots:http://f.test", "a string, not a hash")
    assert store.get("http://f.test") is None
    store.put("http://a.test", StoredRobots(meta={"x": 2}, body=b"new"))
    assert store.get("http://a.test") == StoredRobots(meta={"x": 2}, body=b"new")
    store.put("http://f.test", StoredRobots(meta={"x": 3}, body=None))
    assert store.get("http://f.test") == StoredRobots(meta={"x": 3}, body=None)


def test_key_layout_one_hash_and_one_lease_key_per_origin_under_the_prefix(
    stores: Callable[..., RedisStore], raw: redis.Redis
) -> None:
    store = backend(stores, prefix="proj:")
    for i, origin in enumerate(ORIGINS):
        store.put(origin, StoredRobots(meta={"i": i}, body=origin.encode()))
        assert store.acquire_lease(origin, "me", 60)
    keys = {k.decode() for k in cast("list[bytes]", raw.keys("*"))}
    assert keys == {f"proj:robots:{o}" for o in ORIGINS} | {f"proj:lease:{o}" for o in ORIGINS}
    assert raw.hget(f"proj:robots:{ORIGINS[0]}", "body") == ORIGINS[0].encode()


def test_redis_killed_fails_fast_then_works_after_restart(
    stores: Callable[..., RedisStore], server: RedisServer
) -> None:
    store = backend(stores, timeout=0.5)
    store.put("http://a.test", StoredRobots(meta={}, body=b"1"))
    server.kill()
    for call in (
        lambda: store.get("http://a.test"),
        lambda: store.put("http://a.test", StoredRobots(meta={}, body=b"2")),
        lambda: store.acquire_lease("http://a.test", "p", 5),
        lambda: store.release_lease("http://a.test", "p"),
    ):
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match=f"127.0.0.1:{server.port}/0"):
            call()
        assert time.monotonic() - started < 2
    server.restart()
    # The pooled connections are stale now; the one immediate reconnect hides that.
    assert store.get("http://a.test") is None
    store.put("http://a.test", StoredRobots(meta={}, body=b"3"))
    assert store.get("http://a.test") == StoredRobots(meta={}, body=b"3")
    assert store.acquire_lease("http://a.test", "p", 5)


def test_redis_not_answering_times_out_as_store_unavailable(
    stores: Callable[..., RedisStore], server: RedisServer
) -> None:
    store = backend(stores, timeout=0.3)
    assert store.acquire_lease("http://a.test", "p", 5)
    server.pause()
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match=r"[Tt]imeout|timed out"):
            store.get("http://a.test")
        assert time.monotonic() - started < 2
    finally:
        server.resume()
    assert wait_until(lambda: store.acquire_lease("http://a.test", "p", 5))


def test_redis_down_at_start_does_not_stop_the_store(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    store = RedisStore.from_url(url, timeout=0.5)
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        store.backend.get("http://a.test")
    assert time.monotonic() - started < 2
    store.backend.close()


def test_deferred_api_fails_fast_while_down_and_reconnects(server: RedisServer) -> None:
    with StoreClient(server.url, timeout=0.5, retry_interval=0.3) as client:
        assert client.call("put", "http://a.test", {"v": 1}, BINARY).error is None
        assert client.call("get", "http://a.test").value == {"meta": {"v": 1}, "body": BINARY}
        assert client.call("acquire_lease", "http://a.test", "me", 30).value is True
        server.kill()
        first = client.call("get", "http://a.test")
        assert first.error == "StoreUnavailable"
        assert first.seconds < 2
        # Until retry_interval passes, calls fail without touching the network.
        again = client.call("acquire_lease", "http://a.test", "me", 30)
        assert again.error == "StoreUnavailable"
        assert again.seconds < 0.2
        server.restart()
        assert wait_until(lambda: client.call("put", "http://a.test", {"v": 2}, None).error is None)
        assert client.call("get", "http://a.test").value == {"meta": {"v": 2}, "body": None}
        assert client.call("acquire_lease", "http://a.test", "me", 30).value is True
        assert client.call("release_lease", "http://a.test", "me").error is None
        assert client.close() == 0


def test_url_and_settings(server: RedisServer) -> None:
    store = open_store(server.url)
    assert isinstance(store, RedisStore)
    store.backend.close()
    from_settings = crawl_store(
        {"REP_STORE": server.url, "REP_STORE_PREFIX": "x:", "REP_STORE_TIMEOUT": 1}
    )
    assert isinstance(from_settings, RedisStore)
    from_settings.backend.put("http://a.test", StoredRobots(meta={}, body=None))
    client = redis.Redis.from_url(server.url)
    assert client.exists("x:robots:http://a.test")
    assert 39 * 86400_000 < client.pttl("x:robots:http://a.test")
    client.close()
    from_settings.backend.close()
    with pytest.raises(ValueError, match="REP_STORE"):
        open_store("redis://127.0.0.1:6379/not-a-db")


def test_missing_redis_py_says_which_extra_to_install() -> None:
    code = (
        "import sys; sys.modules['redis'] = None\n"
        "from scrapy_rep.storage.results import open_store\n"
        "try:\n"
        "    open_store('redis://127.0.0.1:6379/0')\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert "pip install 'scrapy-rep[redis]'" in out


def test_calls_made_before_close_reach_the_store(
    server: RedisServer, stores: Callable[..., RedisStore]
) -> None:
    # All four threads busy when the crawl closes the store: a pause its last answer began
    # still reaches Redis, and no "is closed" store error is counted for it.
    assert close_while_busy(server.url) == "[None]"
    assert list(stores().backend.pauses()[1]) == ["http://a.test"]

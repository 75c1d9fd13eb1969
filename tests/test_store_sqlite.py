"""SQLiteStore specifics: the file, locking, the Deferred API in a real reactor subprocess.

What every backend must do is in test_store_contract.py.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _store_cases import BINARY, close_while_busy, crawl_store, wait_until
from _store_client import StoreClient
from scrapy.settings import Settings

from scrapy_rep.core.policy import FORMAT_VERSION
from scrapy_rep.crawl._settings import store_options
from scrapy_rep.storage.results import StoredRobots, open_store
from scrapy_rep.storage.results._base import StoreUnavailable
from scrapy_rep.storage.results._sqlite import SQLiteBackend, SQLiteStore, path_from_url


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "robots.sqlite3"


@pytest.fixture
def backends(db: Path) -> Iterator[Callable[..., SQLiteBackend]]:
    opened: list[SQLiteBackend] = []

    def open_backend(prefix: str = "scrapy-rep:", timeout: float = 2.0) -> SQLiteBackend:
        backend = SQLiteBackend(db, prefix=prefix, timeout=timeout, entry_ttl=3600.0)
        backend.connect()
        opened.append(backend)
        return backend

    yield open_backend
    for backend in opened:
        backend.close()


def test_other_format_version_or_garbage_is_ignored(
    backends: Callable[..., SQLiteBackend], db: Path
) -> None:
    store = backends()
    store.put("http://a.test", StoredRobots(meta={"x": 1}, body=b"old"))
    with sqlite3.connect(db) as raw:
        raw.execute(
            "UPDATE scrapy_rep_robots SET version = ? WHERE key = ?",
            (FORMAT_VERSION + 1, "scrapy-rep:http://a.test"),
        )
        raw.execute(
            "INSERT INTO scrapy_rep_robots VALUES (?, ?, ?, ?, ?)",
            ("scrapy-rep:http://b.test", FORMAT_VERSION, "not json", b"x", time.time()),
        )
        raw.execute(
            "INSERT INTO scrapy_rep_robots VALUES (?, ?, ?, ?, ?)",
            ("scrapy-rep:http://c.test", FORMAT_VERSION, "[1, 2]", b"x", time.time()),
        )
    assert store.get("http://a.test") is None
    assert store.get("http://b.test") is None
    assert store.get("http://c.test") is None
    store.put("http://a.test", StoredRobots(meta={"x": 2}, body=b"new"))
    assert store.get("http://a.test") == StoredRobots(meta={"x": 2}, body=b"new")


def test_prefix_separates_projects_in_one_file(
    backends: Callable[..., SQLiteBackend], db: Path
) -> None:
    one, two = backends(prefix="one:"), backends(prefix="two:")
    one.put("http://a.test", StoredRobots(meta={"who": 1}, body=b"1"))
    assert two.get("http://a.test") is None
    assert one.acquire_lease("http://a.test", "x", 60)
    assert two.acquire_lease("http://a.test", "y", 60)
    with sqlite3.connect(db) as raw:
        keys = [k for (k,) in raw.execute("SELECT key FROM scrapy_rep_robots")]
    assert keys == ["one:http://a.test"]


def test_two_processes_share_the_file(db: Path) -> None:
    url = f"sqlite://{db}"
    with StoreClient(url) as one, StoreClient(url) as two:
        assert one.call("acquire_lease", "http://a.test", "one", 60).value is True
        assert two.call("acquire_lease", "http://a.test", "two", 60).value is False
        assert one.call("put", "http://a.test", {"status": 200}, BINARY).error is None
        assert two.call("get", "http://a.test").value == {"meta": {"status": 200}, "body": BINARY}
        assert one.call("release_lease", "http://a.test", "one").error is None
        assert two.call("acquire_lease", "http://a.test", "two", 60).value is True
        assert one.close() == 0
        assert two.close() == 0


def test_not_a_database_is_a_startup_error_naming_the_file(db: Path) -> None:
    db.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ValueError) as info:
        open_store(f"sqlite://{db}")
    message = str(info.value)
    assert str(db) in message
    assert "REP_STORE" in message
    assert "not a usable SQLite database" in message


def test_unopenable_path_is_a_startup_error_naming_the_file(tmp_path: Path) -> None:
    directory = tmp_path / "a-directory"
    directory.mkdir()
    with pytest.raises(ValueError, match="REP_STORE") as info:
        open_store(f"sqlite://{directory}")
    assert str(directory) in str(info.value)


def test_foreign_tables_of_the_same_name_are_a_startup_error(db: Path) -> None:
    with sqlite3.connect(db) as raw:
        raw.execute("CREATE TABLE scrapy_rep_robots (k TEXT)")
    with pytest.raises(ValueError, match="REP_STORE") as info:
        open_store(f"sqlite://{db}")
    assert str(db) in str(info.value)


def test_locked_file_times_out_as_store_unavailable_then_recovers(
    backends: Callable[..., SQLiteBackend], db: Path
) -> None:
    store = backends(timeout=0.3)
    store.put("http://a.test", StoredRobots(meta={"v": 1}, body=b"1"))
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="locked"):
            store.put("http://a.test", StoredRobots(meta={"v": 2}, body=b"2"))
        assert 0.2 < time.monotonic() - started < 5
        with pytest.raises(StoreUnavailable):
            store.acquire_lease("http://a.test", "p", 60)
        # WAL: readers never wait for a writer.
        assert store.get("http://a.test") == StoredRobots(meta={"v": 1}, body=b"1")
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    store.put("http://a.test", StoredRobots(meta={"v": 2}, body=b"2"))
    assert store.get("http://a.test") == StoredRobots(meta={"v": 2}, body=b"2")


def test_locked_at_startup_opens_and_fails_calls_until_free(db: Path) -> None:
    SQLiteStore.from_url(f"sqlite://{db}").backend.close()  # create it, in WAL mode
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        store = SQLiteStore.from_url(f"sqlite://{db}", timeout=0.2)
        with pytest.raises(StoreUnavailable):
            store.backend.put("http://a.test", StoredRobots(meta={}, body=None))
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    store.backend.put("http://a.test", StoredRobots(meta={}, body=None))
    assert store.backend.get("http://a.test") == StoredRobots(meta={}, body=None)
    store.backend.close()


def test_deferred_api_fails_fast_while_locked_and_recovers(db: Path) -> None:
    url = f"sqlite://{db}"
    with StoreClient(url, timeout=0.3, retry_interval=0.5) as client:
        assert client.call("put", "http://a.test", {"v": 1}, b"1").error is None
        locker = sqlite3.connect(db, isolation_level=None)
        locker.execute("BEGIN EXCLUSIVE")
        try:
            slow = client.call("put", "http://a.test", {"v": 2}, b"2")
            assert slow.error == "StoreUnavailable"
            assert str(db) in slow.message
            assert slow.seconds < 5
            fast = client.call("get", "http://a.test")
            assert fast.error == "StoreUnavailable"
            assert fast.seconds < 0.2
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        assert wait_until(lambda: client.call("put", "http://a.test", {"v": 3}, b"3").error is None)
        assert client.call("get", "http://a.test").value == {"meta": {"v": 3}, "body": b"3"}
        assert client.close() == 0


def test_url_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert path_from_url("sqlite:///abs/robots.sqlite3") == Path("/abs/robots.sqlite3")
    assert path_from_url("sqlite://rel/robots.sqlite3") == tmp_path.resolve() / "rel/robots.sqlite3"
    with pytest.raises(ValueError, match="REP_STORE"):
        path_from_url("sqlite://")
    store = open_store("sqlite://sub/dir/robots.sqlite3")
    assert isinstance(store, SQLiteStore)
    assert (tmp_path / "sub/dir/robots.sqlite3").is_file()
    store.backend.close()


def test_settings_choose_the_store(tmp_path: Path) -> None:
    assert store_options(Settings()).url == "memory://"
    assert store_options(Settings({"JOBDIR": str(tmp_path / "job")})).url == (
        f"sqlite://{tmp_path.resolve() / 'job' / 'robotstxt.sqlite3'}"
    )
    jobdir_and_store = Settings({"JOBDIR": str(tmp_path), "REP_STORE": "memory://"})
    assert store_options(jobdir_and_store).url == "memory://"
    store = crawl_store({"JOBDIR": str(tmp_path / "job"), "REP_STORE_PREFIX": "p:"})
    assert isinstance(store, SQLiteStore)
    store.backend.put("http://a.test", StoredRobots(meta={}, body=b""))
    store.backend.close()
    with sqlite3.connect(tmp_path / "job" / "robotstxt.sqlite3") as raw:
        assert [k for (k,) in raw.execute("SELECT key FROM scrapy_rep_robots")] == [
            "p:http://a.test"
        ]
    for bad in (0, -1, "soon", float("nan")):
        with pytest.raises(ValueError, match="REP_STORE_TIMEOUT"):
            crawl_store({"REP_STORE_TIMEOUT": bad})


def test_calls_made_before_close_reach_the_store(db: Path) -> None:
    url = f"sqlite://{db}"
    assert close_while_busy(url) == "[None]"  # the pause's call succeeded, after close began
    backend = SQLiteStore.from_url(url).backend
    try:
        assert list(backend.pauses()[1]) == ["http://a.test"]
    finally:
        backend.close()

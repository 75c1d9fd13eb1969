"""SQLite store: one file that survives restarts and is shared by the processes of one machine.

URL: ``sqlite:///abs/path/robots.sqlite3`` (absolute) or ``sqlite://relative/robots.sqlite3``
(relative to the working directory at startup): everything after ``sqlite://`` is the path.

Calls run in a one-thread private pool: most take well under a millisecond, but a write may wait
up to the busy timeout for another process, and the reactor must not freeze meanwhile. The file
uses WAL journaling, so readers never wait for a writer.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

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

_SCHEMA = """
CREATE TABLE IF NOT EXISTS scrapy_rep_robots (
    key TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    meta TEXT NOT NULL,
    body BLOB,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS scrapy_rep_leases (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS scrapy_rep_pauses (
    key TEXT PRIMARY KEY,
    failures INTEGER NOT NULL,
    reason TEXT NOT NULL,
    over_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS scrapy_rep_counters (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
"""

# One more pause change for the processes polling the version.
_BUMP = """
INSERT INTO scrapy_rep_counters (key, value) VALUES (?, 1)
ON CONFLICT (key) DO UPDATE SET value = value + 1
"""

# Take the lease when it is free, ours, or expired — one statement, so atomic across processes.
_ACQUIRE = """
INSERT INTO scrapy_rep_leases (key, owner, expires_at) VALUES (?, ?, ?)
ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
WHERE scrapy_rep_leases.owner = excluded.owner OR scrapy_rep_leases.expires_at <= ?
"""


def path_from_url(url: str) -> Path:
    rest = url.partition("://")[2]
    if not rest:
        raise ValueError(
            f"REP_STORE={url!r} names no file: use 'sqlite:///absolute/path/robots.sqlite3' "
            "or 'sqlite://relative/path/robots.sqlite3'"
        )
    return Path(rest).expanduser().resolve()


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class SQLiteBackend:
    """The blocking half; used from one thread at a time."""

    def __init__(self, path: Path, *, prefix: str, timeout: float, entry_ttl: float) -> None:
        self.path = path
        self._prefix = prefix
        self._timeout = timeout
        self._entry_ttl = entry_ttl
        self._conn: sqlite3.Connection | None = None

    def connect(self) -> None:
        """Open the file and set it up.

        Raises ValueError naming the file when it can never work (not a database, unreadable,
        foreign tables) and StoreUnavailable when it is only locked right now.
        """
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(
                f"REP_STORE: cannot create the directory of sqlite file {self.path} ({exc}): "
                "point REP_STORE elsewhere"
            ) from exc
        try:
            conn = sqlite3.connect(
                self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise self._unusable(exc) from exc
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
            # Tables of the same name but another layout fail here, at startup, not mid-crawl.
            conn.execute(
                "SELECT key, version, meta, body, updated_at FROM scrapy_rep_robots LIMIT 0"
            )
            conn.execute("SELECT key, owner, expires_at FROM scrapy_rep_leases LIMIT 0")
            conn.execute(
                "SELECT key, failures, reason, over_at, updated_at FROM scrapy_rep_pauses LIMIT 0"
            )
            self._prune(conn)
        except sqlite3.Error as exc:
            conn.close()
            if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
                raise self._unavailable(exc) from exc
            raise self._unusable(exc) from exc
        self._conn = conn

    def _prune(self, conn: sqlite3.Connection) -> None:
        """Drop entries past their time; housekeeping, so skipped rather than waited for."""
        # Wall-clock times throughout: the file is shared by processes, which share no other
        # clock (and this runs in the store's thread, given none).
        now = time.time()
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            conn.execute(
                "DELETE FROM scrapy_rep_robots WHERE substr(key, 1, ?) = ? AND updated_at < ?",
                (len(self._prefix), self._prefix, now - self._entry_ttl),
            )
            conn.execute("DELETE FROM scrapy_rep_leases WHERE expires_at <= ?", (now,))
            conn.execute(
                "DELETE FROM scrapy_rep_pauses WHERE updated_at < ?", (now - PAUSE_RECORD_TTL,)
            )
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                raise
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")

    def _unusable(self, exc: sqlite3.Error) -> ValueError:
        if isinstance(exc, sqlite3.OperationalError):
            return ValueError(
                f"REP_STORE: cannot use sqlite file {self.path} ({exc}): check the path and its "
                "permissions, delete the file, or point REP_STORE elsewhere"
            )
        return ValueError(
            f"REP_STORE: sqlite file {self.path} is not a usable SQLite database ({exc}): "
            "delete it or point REP_STORE elsewhere"
        )

    def _unavailable(self, exc: sqlite3.Error) -> StoreUnavailable:
        return StoreUnavailable(f"sqlite store {self.path}: {exc}")

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                self.connect()
            except ValueError as exc:
                # The file went bad after startup: a store fault, not a reason to stop the crawl.
                raise StoreUnavailable(str(exc)) from exc
        assert self._conn is not None
        return self._conn

    def _execute(self, sql: str, params: tuple[Any, ...]) -> sqlite3.Cursor:
        conn = self._connection()
        try:
            return conn.execute(sql, params)
        except sqlite3.Error as exc:
            raise self._unavailable(exc) from exc

    def get(self, origin: str) -> StoredRobots | None:
        row = self._execute(
            "SELECT version, meta, body FROM scrapy_rep_robots WHERE key = ?",
            (self._prefix + origin,),
        ).fetchone()
        if row is None:
            return None
        version, meta, body = row
        return decode(version, meta, None if body is None else bytes(body), origin)

    def put(self, origin: str, entry: StoredRobots) -> None:
        self._execute(
            "INSERT OR REPLACE INTO scrapy_rep_robots (key, version, meta, body, updated_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (
                self._prefix + origin,
                FORMAT_VERSION,
                encode_meta(entry.meta),
                entry.body,
                time.time(),
            ),
        )

    def acquire_lease(self, origin: str, owner: str, ttl: float) -> bool:
        now = time.time()
        cursor = self._execute(_ACQUIRE, (self._prefix + origin, owner, now + ttl, now))
        return cursor.rowcount == 1

    def release_lease(self, origin: str, owner: str) -> None:
        self._execute(
            "DELETE FROM scrapy_rep_leases WHERE key = ? AND owner = ?",
            (self._prefix + origin, owner),
        )

    # Pauses: wall-clock times, as the leases (one machine's processes share its clock).

    def set_pause(self, origin: str, seconds: float, failures: int, reason: str) -> None:
        now = time.time()
        with self._transaction():
            self._execute(
                "INSERT OR REPLACE INTO scrapy_rep_pauses "
                "(key, failures, reason, over_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                (self._prefix + origin, failures, reason, now + seconds, now),
            )
            self._execute(_BUMP, (self._version_key,))

    def clear_pause(self, origin: str) -> None:
        with self._transaction():
            cursor = self._execute(
                "DELETE FROM scrapy_rep_pauses WHERE key = ?", (self._prefix + origin,)
            )
            if cursor.rowcount:
                self._execute(_BUMP, (self._version_key,))

    def pauses(self) -> tuple[int, dict[str, StoredPause]]:
        now = time.time()
        with self._transaction(write=False):
            version = self.pause_version()
            rows = self._execute(
                "SELECT key, failures, reason, over_at FROM scrapy_rep_pauses "
                "WHERE substr(key, 1, ?) = ? AND updated_at >= ?",
                (len(self._prefix), self._prefix, now - PAUSE_RECORD_TTL),
            ).fetchall()
        found = {
            key[len(self._prefix) :]: StoredPause(max(0.0, over_at - now), failures, reason)
            for key, failures, reason, over_at in rows
        }
        return version, found

    def pause_version(self) -> int:
        row = self._execute(
            "SELECT value FROM scrapy_rep_counters WHERE key = ?", (self._version_key,)
        ).fetchone()
        return int(row[0]) if row is not None else 0

    @property
    def _version_key(self) -> str:
        return self._prefix + "pauses"

    @contextmanager
    def _transaction(self, write: bool = True) -> Iterator[None]:
        """One transaction: other processes see all of its writes or none; a read sees one
        state of the file."""
        self._execute("BEGIN IMMEDIATE" if write else "BEGIN", ())
        try:
            yield
        except BaseException:
            with suppress(StoreUnavailable):
                self._execute("ROLLBACK", ())
            raise
        self._execute("COMMIT", ())

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class SQLiteStore(ThreadedStore):
    backend: SQLiteBackend

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        timeout: float = DEFAULT_TIMEOUT,
        entry_ttl: float = DEFAULT_ENTRY_TTL,
        retry_interval: float = DEFAULT_RETRY_INTERVAL,
    ) -> SQLiteStore:
        backend = SQLiteBackend(
            path_from_url(url), prefix=prefix, timeout=timeout, entry_ttl=entry_ttl
        )
        try:
            backend.connect()
        except StoreUnavailable:
            # Locked right now: the first call retries; until then the crawl runs in memory.
            pass
        return cls(
            backend,
            name=f"sqlite store {backend.path}",
            threads=1,
            retry_interval=retry_interval,
        )

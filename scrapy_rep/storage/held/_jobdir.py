"""Held requests in ``<JOBDIR>/robotstxt-held.sqlite3``: on disk from ``add`` until ``take``.

Why SQLite and not queuelib's disk queues (what Scrapy's JOBDIR scheduler uses):
``FifoDiskQueue``/``LifoDiskQueue`` write their bookkeeping (``info.json``, the size header)
only on ``close()``, so a ``kill -9`` loses the queue; ``FifoSQLiteQueue`` commits every push
but is one file and one open connection per queue, and holds are per origin (thousands of
origins in a broad crawl). So: queuelib's SQLite design — one committed transaction per push —
in one table keyed by origin. Each commit is durable against the death of the process
(``kill -9``, OOM kill); with ``synchronous=NORMAL`` in WAL mode a power cut may lose the last
commits, the price of no fsync per held request.

Requests are serialised as Scrapy's disk queues do (``request.to_dict(spider=...)`` pickled,
protocol 4): the file is the user's own JOBDIR, trusted as Scrapy trusts its queues. A request
that cannot be serialised (a callback that is not a spider method, an unpicklable meta value)
is kept in memory as Scrapy's scheduler keeps it (WARNING for the first one, stat
``robotstxt/held_unserializable`` for each) and is lost if the process dies.
"""

from __future__ import annotations

import logging
import pickle
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.utils.request import request_from_dict

from scrapy_rep.core.stats import (
    HELD_DROPPED_ON_CLOSE,
    HELD_FILE_CORRUPT,
    HELD_UNREADABLE,
    HELD_UNSERIALIZABLE,
)
from scrapy_rep.storage.held._memory import Spill

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.http import Request
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

#: The database file inside JOBDIR.
HELD_DB = "robotstxt-held.sqlite3"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS held "
    "(seq INTEGER PRIMARY KEY, origin TEXT NOT NULL, data BLOB NOT NULL)",
    "CREATE INDEX IF NOT EXISTS held_origin ON held (origin, seq)",
    # Requests the run stopped waiting for (given up, held too long): the next run's.
    "CREATE TABLE IF NOT EXISTS kept "
    "(seq INTEGER PRIMARY KEY, origin TEXT NOT NULL, data BLOB NOT NULL)",
)


class JobdirHeld:
    """See the module docstring. Build it when the spider is open (``open``)."""

    def __init__(
        self, path: Path, db: sqlite3.Connection, spider: Spider, stats: StatsCollector | None
    ) -> None:
        self.path = path
        self._db = db
        self._spider = spider
        self._stats = stats
        self._spill = Spill()
        self.next_run = f"{path}; resume the job with the same JOBDIR"
        # What an earlier run put aside is this run's to try again.
        with db:
            db.execute("INSERT INTO held SELECT * FROM kept")
            db.execute("DELETE FROM kept")
        self._kept = 0
        row = db.execute("SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM held").fetchone()
        self._durable: int = row[0]
        self._next_seq: int = row[1] + 1
        self._warned_unserializable = False

    @classmethod
    def open(
        cls, jobdir: str | Path, spider: Spider, stats: StatsCollector | None = None
    ) -> JobdirHeld:
        """Open (or create) the file; a corrupt one is moved aside with a WARNING, never fatal."""
        directory = Path(jobdir)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / HELD_DB
        try:
            db = _connect(path)
        except sqlite3.DatabaseError as exc:
            aside = _move_aside(path)
            _count(stats, HELD_FILE_CORRUPT)
            logger.warning(
                "%s is not a readable held-requests file (%s): moved aside to %s; the requests "
                "it held for robots.txt (count unknown) are lost",
                path,
                exc,
                aside,
                extra={"spider": spider},
            )
            db = _connect(path)
        return cls(path, db, spider, stats)

    def add(self, origin: str, request: Request) -> None:
        seq = self._next_seq
        self._next_seq += 1
        try:
            data = self._dump(request)
        except Exception as exc:  # as Scrapy's disk queues: ValueError, PicklingError, TypeError…
            self._keep_in_memory(origin, seq, request, f"cannot be serialised: {exc}")
            return
        try:
            with self._db:
                self._db.execute("INSERT INTO held VALUES (?, ?, ?)", (seq, origin, data))
        except sqlite3.Error as exc:  # disk full, file removed under us
            self._keep_in_memory(origin, seq, request, f"cannot be written to {self.path}: {exc}")
            return
        self._durable += 1

    def take(self, origin: str) -> list[Request]:
        with self._db:
            rows = self._db.execute(
                "SELECT seq, data FROM held WHERE origin = ? ORDER BY seq", (origin,)
            ).fetchall()
            self._db.execute("DELETE FROM held WHERE origin = ?", (origin,))
        self._durable -= len(rows)
        durable: list[tuple[int, Request]] = []
        for seq, data in rows:
            request = self._load(data, f"row {seq} of {self.path}")
            if request is not None:
                durable.append((seq, request))
        return self._spill.merge(origin, durable)

    def origins(self) -> list[str]:
        stored = {row[0] for row in self._db.execute("SELECT DISTINCT origin FROM held")}
        return sorted(stored | self._spill.origins())

    def peek(self) -> list[Request]:
        found = []
        for (data,) in self._db.execute("SELECT data FROM held ORDER BY seq"):
            try:
                found.append(self._loads(data))
            except Exception:  # ``take`` counts and reports it
                continue
        return found + self._spill.peek()

    def put_aside(self, origin: str, requests: list[Request]) -> list[Request]:
        rows, lost = [], []
        for request in requests:
            try:
                data = self._dump(request)
            except Exception:  # it was in memory only for this reason: it cannot wait on disk
                lost.append(request)
                continue
            rows.append((self._next_seq, origin, data))
            self._next_seq += 1
        try:
            with self._db:
                self._db.executemany("INSERT INTO kept VALUES (?, ?, ?)", rows)
        except sqlite3.Error:  # disk full, file removed under us
            return requests
        self._kept += len(rows)
        return lost

    def __len__(self) -> int:
        return self._durable + len(self._spill)

    def _dump(self, request: Request) -> bytes:
        """As Scrapy's disk queues serialise a request (raises when it cannot be)."""
        return pickle.dumps(request.to_dict(spider=self._spider), protocol=4)

    def in_memory(self) -> int:
        return len(self._spill)

    def close(self) -> None:
        """Close the file (deleted when empty); requests only in memory are lost, with a WARNING."""
        lost = len(self._spill)
        if lost:
            _count(self._stats, HELD_DROPPED_ON_CLOSE, lost)
            logger.warning(
                "%d request(s) held for robots.txt were only in memory (not serialisable or "
                "not writable to %s) and are lost with this process",
                lost,
                self.path,
                extra={"spider": self._spider},
            )
        self._db.close()
        if not self._durable and not self._kept:
            for file in _files(self.path):
                file.unlink(missing_ok=True)

    def _keep_in_memory(self, origin: str, seq: int, request: Request, why: str) -> None:
        self._spill.add(origin, seq, request)
        _count(self._stats, HELD_UNSERIALIZABLE)
        if not self._warned_unserializable:
            self._warned_unserializable = True
            logger.warning(
                "Held request %s %s; kept in memory, lost if the process dies (further such "
                "requests are only counted in %s)",
                request,
                why,
                HELD_UNSERIALIZABLE,
                extra={"spider": self._spider},
            )

    def _loads(self, data: bytes) -> Request:
        # Our own JOBDIR file, as Scrapy's disk queues unpickle theirs.
        return request_from_dict(pickle.loads(data), spider=self._spider)

    def _load(self, data: bytes, where: str) -> Request | None:
        try:
            return self._loads(data)
        except Exception as exc:  # torn row, or its callback no longer exists on the spider
            _count(self._stats, HELD_UNREADABLE)
            logger.warning(
                "A request held for robots.txt cannot be restored from %s: %s; it is lost",
                where,
                exc,
                extra={"spider": self._spider},
            )
            return None


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level="DEFERRED")
    try:
        # WAL + NORMAL: a commit reaches the OS before it returns (survives kill -9), no fsync.
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        (verdict,) = db.execute("PRAGMA quick_check").fetchone()
        if verdict != "ok":
            raise sqlite3.DatabaseError(f"integrity check: {verdict}")
        with db:
            for statement in _SCHEMA:
                db.execute(statement)
    except sqlite3.DatabaseError:
        db.close()
        raise
    return db


def _files(path: Path) -> list[Path]:
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def _move_aside(path: Path) -> Path:
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}")
    for file in _files(path):
        if file.exists():
            file.replace(aside.with_name(aside.name + file.name[len(path.name) :]))
    return aside


def _count(stats: StatsCollector | None, name: str, count: int = 1) -> None:
    if stats is not None:
        stats.inc_value(name, count)

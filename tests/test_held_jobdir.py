"""JobdirHeld and MemoryHeld on real files: order, survival of kill -9, corrupt files."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _held_child import HeldSpider
from scrapy.http import Request
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler
from twisted.internet.task import Clock

from scrapy_rep.storage.held import HeldRequests, JobdirHeld, MemoryHeld, open_held
from scrapy_rep.storage.held._jobdir import HELD_DB
from scrapy_rep.storage.options import StoreOptions

TESTS_DIR = Path(__file__).resolve().parent
A, B = "http://a.test", "http://b.test"


@pytest.fixture
def spider() -> HeldSpider:
    return HeldSpider()


@pytest.fixture
def stats() -> MemoryStatsCollector:
    return MemoryStatsCollector(get_crawler())


def urls(requests: list[Request]) -> list[str]:
    return [r.url for r in requests]


def filled(kind: str, tmp_path: Path, spider: HeldSpider) -> HeldRequests:
    """A place of ``kind`` holding five requests of two origins."""
    held: HeldRequests = MemoryHeld() if kind == "memory" else JobdirHeld.open(tmp_path, spider)
    for origin, path in [(A, "/1"), (B, "/1"), (A, "/2"), (A, "/3"), (B, "/2")]:
        held.add(origin, Request(origin + path, callback=spider.parse, meta={"k": (1, b"x")}))
    return held


@pytest.mark.parametrize("kind", ["memory", "jobdir"])
def test_take_returns_an_origins_requests_oldest_first_and_removes_them(
    kind: str, tmp_path: Path, spider: HeldSpider
) -> None:
    held = filled(kind, tmp_path, spider)
    assert len(held) == 5
    assert sorted(held.origins()) == [A, B]
    taken = held.take(A)
    assert urls(taken) == [A + "/1", A + "/2", A + "/3"]
    assert taken[0].callback == spider.parse
    assert taken[0].meta["k"] == (1, b"x")
    assert held.take(A) == []
    assert held.origins() == [B]
    assert len(held) == 2
    held.close()


@pytest.mark.parametrize("kind", ["memory", "jobdir"])
def test_peek_reads_every_held_request_and_takes_none(
    kind: str, tmp_path: Path, spider: HeldSpider
) -> None:
    held = filled(kind, tmp_path, spider)
    peeked = held.peek()
    assert sorted(urls(peeked)) == sorted([A + "/1", B + "/1", A + "/2", A + "/3", B + "/2"])
    assert peeked[0].callback == spider.parse and peeked[0].meta["k"] == (1, b"x")
    assert len(held) == 5
    assert urls(held.take(A)) == [A + "/1", A + "/2", A + "/3"]
    assert urls(held.peek()) == [B + "/1", B + "/2"]
    held.close()


def test_requests_survive_reopening_and_the_file_goes_when_empty(
    tmp_path: Path, spider: HeldSpider
) -> None:
    held = filled("jobdir", tmp_path, spider)
    held.close()
    again = JobdirHeld.open(tmp_path, spider)
    assert len(again) == 5
    again.add(A, Request(A + "/4"))
    assert urls(again.take(A)) == [A + "/1", A + "/2", A + "/3", A + "/4"]
    assert urls(again.take(B)) == [B + "/1", B + "/2"]
    again.close()
    assert not (tmp_path / HELD_DB).exists()


def test_kill_9_after_add_returned_loses_nothing(tmp_path: Path, spider: HeldSpider) -> None:
    jobdir = tmp_path / "job"
    child = subprocess.Popen(
        [sys.executable, str(TESTS_DIR / "_held_child.py"), str(jobdir), "300"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=TESTS_DIR,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == b"held 300\n"
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    held = JobdirHeld.open(jobdir, spider)
    assert len(held) == 300
    assert sorted(held.origins()) == [f"http://site{i}.test" for i in range(3)]
    taken = held.take("http://site1.test")
    assert urls(taken) == [f"http://site1.test/page/{i}" for i in range(1, 300, 3)]
    assert [r.meta["i"] for r in taken] == list(range(1, 300, 3))
    assert taken[0].callback == spider.parse
    held.close()


def test_a_corrupt_file_is_moved_aside_with_a_warning(
    tmp_path: Path, spider: HeldSpider, stats: MemoryStatsCollector, caplog: Any
) -> None:
    (tmp_path / HELD_DB).write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)
    with caplog.at_level(logging.WARNING):
        held = JobdirHeld.open(tmp_path, spider, stats)
    assert len(held) == 0
    asides = list(tmp_path.glob(HELD_DB + ".corrupt-*"))
    assert len(asides) == 1
    assert str(tmp_path / HELD_DB) in caplog.text
    assert "moved aside" in caplog.text
    assert stats.get_value("robotstxt/held_file_corrupt") == 1
    held.add(A, Request(A + "/1"))
    assert urls(held.take(A)) == [A + "/1"]
    held.close()


def test_a_torn_row_is_a_warning_and_the_rest_is_restored(
    tmp_path: Path, spider: HeldSpider, stats: MemoryStatsCollector, caplog: Any
) -> None:
    held = filled("jobdir", tmp_path, spider)
    held.close()
    import sqlite3

    with sqlite3.connect(tmp_path / HELD_DB) as db:
        db.execute("UPDATE held SET data = substr(data, 1, 20) WHERE seq = 3")
    held = JobdirHeld.open(tmp_path, spider, stats)
    with caplog.at_level(logging.WARNING):
        # peek leaves the torn row out quietly: take reports it.
        assert urls(held.peek()) == [A + "/1", B + "/1", A + "/3", B + "/2"]
        assert caplog.text == ""
        assert urls(held.take(A)) == [A + "/1", A + "/3"]
    assert "row 3 of" in caplog.text
    assert stats.get_value("robotstxt/held_unreadable") == 1
    held.close()


def test_unserialisable_requests_stay_in_memory_in_order_with_a_stat(
    tmp_path: Path, spider: HeldSpider, stats: MemoryStatsCollector, caplog: Any
) -> None:
    held = JobdirHeld.open(tmp_path, spider, stats)
    held.add(A, Request(A + "/1"))
    with caplog.at_level(logging.WARNING):
        held.add(A, Request(A + "/2", callback=lambda r: None))  # not a spider method
        held.add(A, Request(A + "/3", meta={"lock": __import__("threading").Lock()}))
    held.add(A, Request(A + "/4"))
    assert len(held) == 4
    assert sorted(urls(held.peek())) == [A + "/1", A + "/2", A + "/3", A + "/4"]
    assert stats.get_value("robotstxt/held_unserializable") == 2
    assert caplog.text.count("cannot be serialised") == 1  # the first one only, as Scrapy
    assert urls(held.take(A)) == [A + "/1", A + "/2", A + "/3", A + "/4"]
    held.add(B, Request(B + "/1", callback=lambda r: None))
    with caplog.at_level(logging.WARNING):
        held.close()
    assert stats.get_value("robotstxt/held_dropped_on_close") == 1
    assert "lost with this process" in caplog.text


def test_open_held_picks_memory_or_jobdir(tmp_path: Path, spider: HeldSpider) -> None:
    def open_with(url: str, jobdir: str | None) -> HeldRequests:
        return open_held(
            StoreOptions(url),
            jobdir=jobdir,
            spider=spider,
            stats=None,
            clock=Clock(),
            on_adopted=lambda _: None,
        )

    assert type(open_with("memory://", None)) is MemoryHeld
    held = open_with(f"sqlite://{tmp_path}/robots.sqlite3", str(tmp_path))
    assert type(held) is JobdirHeld and held.path == tmp_path / HELD_DB
    held.close()

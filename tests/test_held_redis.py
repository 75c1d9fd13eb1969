"""RedisHeld against a real redis-server: order, JSON only, adoption of a dead owner's requests,
Redis outages (requests kept in memory, takes retried)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from _held_child import HeldSpider
from _redis_server import RedisServer
from scrapy.http import FormRequest, Request
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler
from twisted.internet.task import Clock

from scrapy_rep.storage.held import RedisHeld, open_held
from scrapy_rep.storage.held._redis import DEFAULT_OWNER_TTL
from scrapy_rep.storage.options import StoreOptions

A, B = "http://a.test", "https://b.test:8443"
PREFIX = "p:"


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(redis_server.url, socket_timeout=1, socket_connect_timeout=1)
    yield connection
    connection.close()


class Process:
    """One fleet process's RedisHeld, with what it was told to adopt."""

    def __init__(self, client: redis.Redis, stats: MemoryStatsCollector | None = None) -> None:
        self.clock = Clock()
        self.adopted: list[dict[str, int]] = []
        self.spider = HeldSpider()
        self.held = RedisHeld(
            client,
            spider=self.spider,
            clock=self.clock,
            on_adopted=self.adopted.append,
            prefix=PREFIX,
            stats=stats,
        )


def urls(requests: list[Request]) -> list[str]:
    return [r.url for r in requests]


def test_take_returns_oldest_first_and_what_is_stored_is_json(client: redis.Redis) -> None:
    process = Process(client)
    process.held.start()
    spider = process.spider
    for origin, path in [(A, "/1"), (B, "/1"), (A, "/2")]:
        process.held.add(
            origin,
            Request(
                origin + path,
                callback=spider.parse,
                errback=spider.on_error,
                meta={"t": (1, b"\xff"), "n": None, "d": {"x": [1.5]}},
                headers={"X-A": "b"},
                priority=3,
            ),
        )
    process.held.add(A, FormRequest(A + "/form", formdata={"q": "1"}))
    assert len(process.held) == 4
    assert process.held.origins() == [A, B]
    raw = client.lrange(f"{PREFIX}held:list:{process.held.owner}:{A}", 0, -1)
    assert all(item.startswith(b'{"s":') for item in raw)  # JSON, never a pickle
    taken = process.held.take(A)
    assert urls(taken) == [A + "/1", A + "/2", A + "/form"]
    first = taken[0]
    assert first.callback == spider.parse and first.errback == spider.on_error
    assert first.meta == {"t": (1, b"\xff"), "n": None, "d": {"x": [1.5]}}
    assert first.headers[b"X-A"] == b"b" and first.priority == 3
    assert type(taken[2]) is FormRequest and taken[2].method == "POST"
    assert process.held.take(A) == []
    assert process.held.origins() == [B]
    assert client.smembers(f"{PREFIX}held:origins:{process.held.owner}") == {B.encode()}
    process.held.close()


def test_heartbeat_key_expires_owner_ttl_after_the_last_beat(client: redis.Redis) -> None:
    process = Process(client)
    process.held.start()
    alive = f"{PREFIX}held:alive:{process.held.owner}"
    assert 0 < client.pttl(alive) <= DEFAULT_OWNER_TTL * 1000
    client.delete(alive)
    process.clock.advance(DEFAULT_OWNER_TTL / 3)  # the next beat renews it
    assert client.exists(alive)
    process.held.close()
    assert not client.exists(alive)


def test_a_live_process_adopts_the_requests_of_a_dead_one(client: redis.Redis) -> None:
    stats = MemoryStatsCollector(get_crawler())
    dead, live = Process(client), Process(client, stats)
    dead.held.start()
    live.held.start()
    for i in range(3):
        dead.held.add(A, Request(f"{A}/{i}", callback=dead.spider.parse))
    dead.held.add(B, Request(f"{B}/0"))
    live.held.add(A, Request(f"{A}/live"))
    assert live.held.pending_elsewhere()
    live.clock.advance(DEFAULT_OWNER_TTL / 3)
    assert live.adopted == []  # the other one still beats
    # kill -9: no more beats; its heartbeat key expires (deleted here rather than waited for).
    client.delete(f"{PREFIX}held:alive:{dead.held.owner}")
    live.clock.advance(DEFAULT_OWNER_TTL / 3)
    assert live.adopted == [{A: 3, B: 1}]
    assert stats.get_value("robotstxt/held_adopted") == 4
    assert len(live.held) == 5
    assert not live.held.pending_elsewhere()
    # What a process adopts can be read without taking it (``Room.open`` files it with the
    # dupefilter before the spider starts).
    peeked = live.held.peek()
    assert sorted(urls(peeked)) == sorted([f"{A}/live", f"{A}/0", f"{A}/1", f"{A}/2", f"{B}/0"])
    assert len(live.held) == 5
    taken = live.held.take(A)
    assert urls(taken) == [f"{A}/live", f"{A}/0", f"{A}/1", f"{A}/2"]
    assert taken[1].callback == live.spider.parse  # resolved on the adopter's spider
    assert urls(live.held.take(B)) == [f"{B}/0"]
    assert client.smembers(f"{PREFIX}held:owners") == {live.held.owner.encode()}
    assert not client.keys(f"{PREFIX}held:*{dead.held.owner}*")


def test_a_clean_close_hands_what_is_still_held_to_the_fleet_at_once(client: redis.Redis) -> None:
    closing, live = Process(client), Process(client)
    closing.held.start()
    live.held.start()
    closing.held.add(A, Request(f"{A}/1"))
    closing.held.close()
    live.held.beat()
    assert live.adopted == [{A: 1}]
    # And a process started later adopts too (nobody alive at the time).
    live.held.close()
    later = Process(client)
    later.held.start()
    assert later.adopted == [{A: 1}]
    assert urls(later.held.take(A)) == [f"{A}/1"]


def test_requests_json_cannot_hold_are_kept_in_memory_in_order(client: redis.Redis) -> None:
    stats = MemoryStatsCollector(get_crawler())
    process = Process(client, stats)
    process.held.start()
    process.held.add(A, Request(f"{A}/1"))
    process.held.add(A, Request(f"{A}/2", meta={"s": {1, 2}}))
    process.held.add(A, Request(f"{A}/3"))
    assert len(process.held) == 3
    assert stats.get_value("robotstxt/held_not_durable") == 1
    assert sorted(urls(process.held.peek())) == [f"{A}/1", f"{A}/2", f"{A}/3"]
    assert urls(process.held.take(A)) == [f"{A}/1", f"{A}/2", f"{A}/3"]


def test_foreign_or_hostile_entries_are_warned_about_never_executed(
    client: redis.Redis, caplog: Any
) -> None:
    stats = MemoryStatsCollector(get_crawler())
    process = Process(client, stats)
    process.held.start()
    process.held.add(A, Request(f"{A}/1"))
    key = f"{PREFIX}held:list:{process.held.owner}:{A}"
    hostile = b'{"s":2,"r":{"d":{"_class":"subprocess.Popen","args":["touch","x"],"url":"http://a.test/"}}}'
    client.rpush(key, b"\x80\x04pickle", hostile)
    with caplog.at_level(logging.WARNING):
        assert urls(process.held.take(A)) == [f"{A}/1"]
    assert stats.get_value("robotstxt/held_unreadable") == 2
    assert "not an imported scrapy.Request class" in caplog.text


def test_redis_down_releases_its_own_copies_and_skips_them_when_redis_is_back(
    client: redis.Redis, redis_server: RedisServer, caplog: Any
) -> None:
    stats = MemoryStatsCollector(get_crawler())
    process = Process(client, stats)
    process.held.start()
    process.held.add(A, Request(f"{A}/1"))
    redis_server.pause()
    try:
        with caplog.at_level(logging.WARNING):
            process.held.add(A, Request(f"{A}/2"))  # times out once, then Redis is not asked
            process.held.add(B, Request(f"{B}/1"))
            process.clock.advance(5)
            # /1 is in Redis, which does not answer: this process's own copy of it comes back,
            # so an outage never strands a held request (the crawl can end without Redis).
            assert urls(process.held.take(A)) == [f"{A}/1", f"{A}/2"]
    finally:
        redis_server.resume()
    assert caplog.text.count("Redis unavailable for held requests") == 1
    assert stats.get_value("robotstxt/held_not_durable") == 2
    process.clock.advance(DEFAULT_OWNER_TTL / 3)
    assert list(process.adopted[0]) == [A]  # Redis answers again: its list of A is taken
    # Redis's copy of /1 is skipped (released already). A write whose answer timed out may have
    # landed all the same (the server ran it when it woke): then /2 comes twice — a duplicate
    # for the dupefilter, never a loss.
    assert set(urls(process.held.take(A))) <= {f"{A}/2"}
    assert client.llen(f"{PREFIX}held:list:{process.held.owner}:{A}") == 0
    assert urls(process.held.take(B)) == [f"{B}/1"]  # never sent: Redis was known down
    assert len(process.held) == 0


def test_open_held_with_a_redis_store_starts_a_fleet_member(
    client: redis.Redis, redis_server: RedisServer
) -> None:
    clock = Clock()
    held = open_held(
        StoreOptions(redis_server.url, prefix=PREFIX),
        jobdir=None,
        spider=HeldSpider(),
        stats=None,
        clock=clock,
        on_adopted=lambda _: None,
        owner_ttl=7,
    )
    assert isinstance(held, RedisHeld)
    assert 5000 < client.pttl(f"{PREFIX}held:alive:{held.owner}") <= 7000
    held.close()

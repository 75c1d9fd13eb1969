"""``RedisPlaces`` against a real redis-server: a fleet's places in a download slot (the lease,
its owner, the members' queue, the spacing on Redis's clock, the fallback when Redis is away).
Crawls of three processes: tests/test_fleet_limits.py."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from _redis_server import RedisServer
from _servers import ScriptedServer
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler
from twisted.internet import task

from scrapy_rep.core.stats import SLOT_FLEET_LOCAL, STORE_ERROR
from scrapy_rep.storage.fleet import RedisPlaces, SlotLimits, fleet_state
from scrapy_rep.storage.options import StoreOptions
from scrapy_rep.storage.results._redis import redis_client

TWO = SlotLimits(2, 0.0, 0.0)


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[redis.Redis]:
    made = redis_client(redis_server.url, timeout=2, connections=2)
    yield made
    made.close()


def member(client: redis.Redis, name: str, **kwargs: object) -> RedisPlaces:
    places = RedisPlaces(client, clock=task.Clock(), prefix="t:", member=name, **kwargs)  # type: ignore[arg-type]
    places.beat()
    return places


def test_a_slot_holds_its_concurrency_across_members_first_come_first_served(
    client: redis.Redis,
) -> None:
    a, b, c = (member(client, name) for name in "abc")
    first, second = a.take("site", TWO, more=False), a.take("site", TWO, more=False)
    assert isinstance(first, str) and isinstance(second, str)
    # Full: b and then c wait (0.0: until woken), in that order.
    assert b.take("site", TWO, more=False) == 0.0
    assert c.take("site", TWO, more=False) == 0.0
    state = fleet_state(client, "t:", "site")
    assert (state.taken, state.next_start, state.members, state.limit) == (2, 0.0, 3, 2)
    a.give("site", first)
    # a itself asks again first: b came first.
    assert a.take("site", TWO, more=False) == 0.0
    assert c.take("site", TWO, more=False) == 0.0
    assert isinstance(b.take("site", TWO, more=False), str)
    a.give("site", second)
    assert isinstance(c.take("site", TWO, more=False), str)


def test_a_place_given_back_and_the_next_taken_in_one_call_keeps_the_queue_order(
    client: redis.Redis,
) -> None:
    one = SlotLimits(1, 0.0, 0.0)
    a, b = member(client, "a"), member(client, "b")
    first = a.take("site", one, more=False)
    assert isinstance(first, str)
    second = a.take("site", one, more=False, release=first)
    assert isinstance(second, str)
    assert client.hgetall("t:fleet:places:site") == {second.encode(): b"a"}
    # b waits first: a's next hand-over gives the place back, and a waits behind b.
    assert b.take("site", one, more=False) == 0.0
    assert a.take("site", one, more=False, release=second) == 0.0
    assert client.hgetall("t:fleet:places:site") == {}
    assert isinstance(b.take("site", one, more=False), str)


def test_the_lowest_concurrency_a_live_member_declares_holds(client: redis.Redis) -> None:
    a, b = member(client, "a"), member(client, "b")
    assert isinstance(a.take("site", SlotLimits(5, 0, 0), more=False), str)
    assert b.take("site", SlotLimits(1, 0, 0), more=False) == 0.0
    assert fleet_state(client, "t:", "site").limit == 1


def test_a_release_checks_the_owner(client: redis.Redis) -> None:
    a, b = member(client, "a"), member(client, "b")
    lease = a.take("site", SlotLimits(1, 0, 0), more=False)
    assert isinstance(lease, str)
    b._held["site"] = {lease}  # b gives back a place it does not own
    b.give("site", lease)
    assert fleet_state(client, "t:", "site").taken == 1


def test_a_dead_members_places_come_back_once_its_heartbeat_lapses(client: redis.Redis) -> None:
    a, b = member(client, "a"), member(client, "b")
    assert isinstance(a.take("site", TWO, more=False), str)
    assert isinstance(a.take("site", TWO, more=False), str)
    assert b.take("site", TWO, more=False) == 0.0
    # SIGKILL: a beats no more; its heartbeat key expires (here: now).
    client.delete("t:fleet:alive:a")
    assert isinstance(b.take("site", TWO, more=True), str)
    assert isinstance(b.take("site", TWO, more=False), str)
    state = fleet_state(client, "t:", "site")
    assert (state.taken, state.next_start, state.members) == (2, 0.0, 1)


def test_the_heartbeat_lasts_its_ttl(client: redis.Redis) -> None:
    member(client, "a", ttl=4.0)
    assert 3000 < client.pttl("t:fleet:alive:a") <= 4000


def test_starts_are_spaced_on_redis_clock_with_scrapys_randomisation(client: redis.Redis) -> None:
    exact = SlotLimits(10, 1.0, 0.0)
    a, b = member(client, "a"), member(client, "b")
    assert isinstance(a.take("site", exact, more=False), str)
    wait = b.take("site", exact, more=False)
    assert isinstance(wait, float) and 0.9 < wait <= 1.0
    # jitter 0.5, draws 0 and 1: 0.5 and 1.5 times the delay, less the time the take and the
    # look took (Redis's clock runs no faster than ours; 2 ms for its millisecond rounding).
    for draw, low, high in ((0.0, 0.5, 0.5), (0.999, 1.499, 1.5)):
        client.delete("t:fleet:next:other", "t:fleet:decl:other")
        c = member(client, f"c{draw}", draw=lambda draw=draw: draw)
        started = time.monotonic()
        assert isinstance(c.take("other", SlotLimits(10, 1.0, 0.5), more=False), str)
        left = fleet_state(client, "t:", "other").next_start
        assert low - (time.monotonic() - started) - 0.002 <= left <= high


def test_a_member_told_a_place_freed_hears_it(client: redis.Redis) -> None:
    a, b = member(client, "a"), member(client, "b")
    heard: list[str] = []
    woken = threading.Event()

    def on_reactor(call: object, slot: str) -> None:
        heard.append(slot)
        woken.set()

    b.start(lambda slot: None, on_reactor)
    try:
        lease = a.take("site", SlotLimits(1, 0, 0), more=False)
        assert b.take("site", SlotLimits(1, 0, 0), more=False) == 0.0
        # The listener subscribes in its thread: wait until it is (b's wake channel).
        for _ in range(200):
            if client.pubsub_numsub("t:fleet:wake")[0][1]:
                break
            threading.Event().wait(0.01)
        assert isinstance(lease, str)
        a.give("site", lease)
        assert woken.wait(5)
        assert heard == ["site"]
    finally:
        b.close()


def test_a_clean_close_gives_every_place_back(client: redis.Redis) -> None:
    a, b = member(client, "a"), member(client, "b")
    assert isinstance(a.take("site", SlotLimits(1, 0, 0), more=False), str)
    assert b.take("site", SlotLimits(1, 0, 0), more=False) == 0.0
    a.close()
    assert client.exists("t:fleet:alive:a") == 0
    assert isinstance(b.take("site", SlotLimits(1, 0, 0), more=False), str)


def test_redis_away_each_member_takes_its_share_alone_then_registers_its_places(
    redis_server: RedisServer, client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    stats = MemoryStatsCollector(get_crawler())
    clock = task.Clock()
    clock.advance(1000)
    a = RedisPlaces(client, clock=clock, prefix="t:", member="a", stats=stats)
    a.beat()
    others = [member(client, name) for name in "bc"]
    limits = SlotLimits(4, 1.0, 0.0)
    assert isinstance(a.take("site", limits, more=False), str)
    for other in others:
        assert other.take("site", limits, more=False) != 0.0  # spaced: they wait
    assert isinstance(a.take("site", limits, more=False), float)  # spaced
    held = set(a._held["site"])
    redis_server.kill()
    with caplog.at_level(logging.WARNING):
        # 3 members last seen, 4 places: 1 each, 3 times the delay; the one Redis place held
        # counts.
        assert a.take("site", limits, more=False) == 1.0
        a.give("site", next(iter(held)))
        first = a.take("site", limits, more=False)
        assert isinstance(first, str)
        assert a.take("site", limits, more=False) == 1.0
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "each process holds its share" in warnings[0].getMessage()
    assert stats.get_value(SLOT_FLEET_LOCAL) == 1
    assert stats.get_value(STORE_ERROR) >= 1
    a.give("site", first)
    clock.advance(2.9)  # 3 x 1 s since the place taken alone
    second = a.take("site", limits, more=False)
    assert second == pytest.approx(0.1)
    clock.advance(0.1)
    second = a.take("site", limits, more=False)
    assert isinstance(second, str)
    redis_server.restart()
    clock.advance(5)  # the retry interval
    a.beat()
    # Back: the place taken alone is the fleet's.
    assert client.hgetall("t:fleet:places:site") == {second.encode(): b"a"}
    assert "answers again" in caplog.text
    # Until the others have had their try at Redis, a keeps to its share (1 place)...
    assert a.take("site", limits, more=False) == 1.0
    # ...then the fleet's limit is Redis's again: 4 places, the 1 s spacing on Redis's clock.
    clock.advance(5 + 2.5)
    assert isinstance(a.take("site", limits, more=False), str)
    assert len(client.hgetall("t:fleet:places:site")) == 2


def test_open_places_only_for_a_redis_store(redis_server: RedisServer) -> None:
    from scrapy_rep.storage.fleet import open_places

    clock = task.Clock()
    for url in ("memory://", "sqlite:///tmp/x.sqlite3"):
        assert open_places(StoreOptions(url), clock=clock, stats=None, spider=lambda: None) is None
    places = open_places(
        StoreOptions(redis_server.url), clock=clock, stats=None, spider=lambda: None
    )
    assert isinstance(places, RedisPlaces)


def test_fleet_limits_asked_for_without_a_redis_store_stops_the_crawl_saying_why() -> None:
    from scrapy.settings import Settings

    from scrapy_rep.crawl._settings import MiddlewareSettings

    asked = Settings({"ROBOTSTXT_OBEY": True, "REP_FLEET_LIMITS": True})
    with pytest.raises(ValueError, match=r"REP_FLEET_LIMITS = True needs a Redis REP_STORE .*"):
        MiddlewareSettings.from_settings(asked)
    # Its default, on, is simply unused with another store; off is always accepted.
    for values in ({}, {"REP_FLEET_LIMITS": False}, {"REP_STORE": "redis://127.0.0.1:1/0"}):
        assert MiddlewareSettings.from_settings(Settings({"ROBOTSTXT_OBEY": True, **values}))


def test_scrapy_robots_shows_a_sites_fleet_state(
    client: redis.Redis, redis_server: RedisServer, http_server: ScriptedServer, tmp_path: Path
) -> None:
    from test_explain import scrapy_robots

    http_server.robots("User-agent: *\nAllow: /\n")
    limits = SlotLimits(2, 1.0, 0.0)
    a, b = member(client, "a"), member(client, "b")
    assert isinstance(a.take("127.0.0.1", limits, more=False), str)
    assert b.take("127.0.0.1", limits, more=False) > 0  # spaced: b waits its turn
    shown = scrapy_robots(
        *("-s", f"REP_STORE={redis_server.url}", "-s", "REP_STORE_PREFIX=t:"),
        http_server.url("/page/1"),
        cwd=tmp_path,
    )
    assert shown.returncode == 0, shown.stderr
    (line,) = [line for line in shown.stdout.splitlines() if line.startswith("  fleet:")]
    assert line.startswith("  fleet:  slot 127.0.0.1: 1 of 2 places taken, 1s apart, ")
    assert line.endswith(", 2 process(es), 1 waiting"), line

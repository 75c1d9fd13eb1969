"""Each download slot's concurrency (``Slots``, crawl/_slots.py) on ``task.Clock``: counting until a
request leaves the downloader, FIFO waiters and the place passed to the first, however many
wait, the sweep of places left without the signal on the room's one tick (``Room.tick``), a
close (the waits end without a place)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scrapy import Spider
from scrapy.http import Request
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler
from twisted.internet import task
from twisted.python.failure import Failure

from scrapy_rep.crawl import _compat
from scrapy_rep.crawl._events import Events
from scrapy_rep.crawl._settings import MiddlewareSettings
from scrapy_rep.crawl._slots import SlotClosed, Slots
from scrapy_rep.crawl.robotstxt_middleware import build_components
from scrapy_rep.storage.results import MemoryStore


@dataclass
class Slot:
    """What ``_compat`` reads and writes of a Scrapy download slot (``Slot``'s constructor
    differs between Scrapy versions)."""

    concurrency: int
    delay: float
    active: set[Request] = field(default_factory=set)


class Setup:
    def __init__(self, concurrency: int = 2, *, delayed: bool = False) -> None:
        self.clock = task.Clock()
        crawler = get_crawler(Spider)
        assert crawler.stats is not None
        self.stats = crawler.stats
        self.concurrency = concurrency
        self.delayed = delayed
        #: What Scrapy's Downloader.active would hold.
        self.active: set[Request] = set()
        #: Is the engine asked to close?
        self.closing = False
        #: Scrapy's download slots, by key, and each request whose slot was asked for.
        self.scrapy_slots: dict[str, Slot] = {}
        self.asked: list[Request] = []
        #: The Deferred each request ``enter`` made wait got.
        self.waiters: dict[Request, Any] = {}
        events = Events(crawler.stats, lambda: None)
        self.slots = Slots(
            slot_of=self.slot_of,
            limit_of=_compat.slot_limit,
            mark=_compat.in_slot,
            in_flight=lambda request: request in self.active,
            events=events,
        )
        # The room whose tick sweeps the slots and notices the close.
        self.room = build_components(
            clock=self.clock,
            store=MemoryStore(clock=self.clock.seconds),
            fetcher_for=lambda kind: None,  # nothing is fetched here
            events=events,
            config=MiddlewareSettings.from_settings(Settings()),
            owner="me",
            crawl=lambda request: None,
            closing=lambda: self.closing,
            slots=self.slots,
        ).room

    def slot_of(self, request: Request) -> tuple[str, Slot]:
        """As ``Downloader._get_slot``: the slot of ``request``'s key, made if new (with this
        setup's concurrency and delay as they are now)."""
        self.asked.append(request)
        key = request.meta.get("download_slot", "a")
        slot = self.scrapy_slots.setdefault(key, Slot(self.concurrency, 0.0))
        slot.concurrency, slot.delay = self.concurrency, 1.0 if self.delayed else 0.0
        return key, slot

    def through(self, request: Request) -> bool:
        """``request`` at the guard: let through (and in the downloader) or made to wait
        (its Deferred in ``waiters``)."""
        waiter = self.slots.enter(request)
        if waiter is None:
            self.active.add(request)
            return True
        self.room.watch_slots()  # as the room does
        self.waiters[request] = waiter
        return False

    def stat(self, name: str) -> int:
        return int(self.stats.get_value(f"robotstxt/slot/{name}", 0))


def _requests(n: int, slot: str = "a") -> list[Request]:
    return [Request(f"http://{slot}.test/{i}", meta={"download_slot": slot}) for i in range(n)]


def test_at_most_the_concurrency_then_fifo_as_places_free() -> None:
    setup = Setup(concurrency=2)
    first, second, third, fourth, fifth = _requests(5)
    assert setup.through(first) and setup.through(second)
    assert not setup.through(third)
    woken: list[Request] = []
    setup.waiters[third].addCallback(lambda _: woken.append(third))
    assert not setup.through(fourth)
    setup.waiters[fourth].addCallback(lambda _: woken.append(fourth))
    setup.slots.left(first)
    assert woken == [third]
    # The freed place went to the first waiter: a newcomer does not take it.
    assert not setup.through(fifth)
    setup.waiters[fifth].addCallback(lambda _: woken.append(fifth))
    setup.slots.left(second)
    setup.slots.left(third)
    assert woken == [third, fourth, fifth]
    assert setup.stat("waited") == 3
    assert setup.stat("waiting_max") == 2
    assert not setup.slots.busy()


def test_slots_are_apart() -> None:
    setup = Setup(concurrency=1)
    a, b = _requests(1, "a")[0], _requests(1, "b")[0]
    assert setup.through(a)
    assert setup.through(b)
    assert not setup.through(_requests(2, "a")[1])


def test_a_request_never_let_through_frees_nothing() -> None:
    setup = Setup(concurrency=1)
    first, second, stranger = _requests(3)
    assert setup.through(first)
    assert not setup.through(second)
    woken: list[Request] = []
    setup.waiters[second].addCallback(lambda _: woken.append(second))
    setup.slots.left(stranger)  # an unknown request leaving (a slot Scrapy holds itself)
    assert woken == []


def test_where_scrapy_holds_the_limit_every_request_goes_and_counts() -> None:
    setup = Setup(concurrency=1, delayed=True)
    requests = _requests(3)
    assert all(setup.through(request) for request in requests)
    # Counted, should the slot's delay drop to 0: a newcomer then waits for all three.
    setup.delayed = False
    late = _requests(4)[3]
    assert not setup.through(late)
    woken: list[Request] = []
    setup.waiters[late].addCallback(lambda _: woken.append(late))
    for request in requests[:2]:
        setup.slots.left(request)
    assert woken == []
    setup.slots.left(requests[2])
    assert woken == [late]


def test_any_number_wait_and_go_in_order() -> None:
    """No bound on the waiting: a slow site's backlog waits here (off ``Downloader.active``),
    not in the engine's places, however long it is; each goes, in order, as a place frees."""
    setup = Setup(concurrency=2)
    first, second, *waiting = _requests(2 + 5_000)
    assert setup.through(first) and setup.through(second)
    gone: list[Request] = []
    for request in waiting:
        assert not setup.through(request)
        setup.waiters[request].addCallback(lambda _, r=request: gone.append(r))
    assert setup.stat("waited") == setup.stat("waiting_max") == 5_000
    setup.slots.left(first)
    setup.slots.left(second)
    for _ in range(len(waiting) - 2):
        setup.slots.left(gone[len(gone) - 2])  # the older of the two through
    assert gone == waiting
    assert not setup.slots.busy()


def test_a_woken_request_that_leaves_at_once_passes_its_place_on() -> None:
    """Without asyncio a waiter's coroutine runs on inside the wake: one whose route paused
    meanwhile leaves at once (``left``), and its place goes to the next, re-entrantly."""
    setup = Setup(concurrency=1)
    first, second, third = _requests(3)
    assert setup.through(first)
    assert not setup.through(second) and not setup.through(third)
    woken: list[Request] = []
    second_waits = setup.waiters[second]
    second_waits.addCallback(lambda _: woken.append(second))
    second_waits.addCallback(lambda _: setup.slots.left(second))  # it leaves at once
    setup.waiters[third].addCallback(lambda _: woken.append(third))
    setup.slots.left(first)
    assert woken == [second, third]
    assert not setup.slots.busy()
    assert not setup.through(_requests(4)[3])  # the third holds the one place


def _one_through_one_waiting(setup: Setup) -> tuple[Request, Request, list[Request]]:
    """In a slot of 1: the first request through, the second waiting (``woken`` when it goes)."""
    first, second = _requests(2)
    assert setup.through(first)
    assert not setup.through(second)
    woken: list[Request] = []
    setup.waiters[second].addCallback(lambda _: woken.append(second))
    return first, second, woken


def test_a_place_left_without_the_signal_is_freed_on_the_tick() -> None:
    setup = Setup(concurrency=1)
    first, second, woken = _one_through_one_waiting(setup)
    setup.clock.advance(1)
    assert woken == []  # still in the downloader
    setup.active.discard(first)  # answered by a middleware above the guard: no signal
    setup.clock.advance(0.999)
    assert woken == []
    setup.clock.advance(0.001)
    assert woken == [second]
    assert not setup.clock.getDelayedCalls()  # nothing waits: no tick


def test_requests_taken_out_of_the_slot_queue_free_their_places() -> None:
    setup = Setup(concurrency=1)
    first, second, woken = _one_through_one_waiting(setup)
    taken = [(first, object())]
    assert setup.slots.taken(taken) is taken
    assert woken == [second]


def _waiting_for_one_place(setup: Setup, count: int) -> tuple[Request, list[Failure]]:
    """One request through a slot of 1, ``count`` waiting: the first, and where the waiters'
    failures go."""
    first, *waiting = _requests(1 + count)
    assert setup.through(first)
    failed: list[Failure] = []
    for request in waiting:
        assert not setup.through(request)
        setup.waiters[request].addErrback(failed.append)
    return first, failed


def test_a_close_asked_ends_every_wait_without_a_place_within_a_second() -> None:
    setup = Setup(concurrency=1)
    first, failed = _waiting_for_one_place(setup, 3)
    setup.clock.advance(1)
    assert failed == []  # not closing: they wait on
    setup.closing = True
    setup.clock.advance(1)
    # Not downloaded on the way out at the slot's pace: each told it has no place.
    assert len(failed) == 3 and all(f.check(SlotClosed) for f in failed)
    assert not setup.slots.busy()
    assert not setup.clock.getDelayedCalls()
    # The one in flight still frees its place, to nobody.
    setup.slots.left(first)
    assert setup.through(_requests(1)[0])


def test_the_spider_closing_ends_every_wait_without_a_place() -> None:
    setup = Setup(concurrency=1)
    _first, failed = _waiting_for_one_place(setup, 3)
    setup.room.close()
    assert len(failed) == 3 and all(f.check(SlotClosed) for f in failed)
    assert not setup.slots.busy()
    assert not setup.clock.getDelayedCalls()


def test_a_waiting_request_counts_in_its_scrapy_slot_and_its_slot_is_asked_for_once() -> None:
    """While it waits, a request is in its Scrapy slot's ``active`` (what the downloader-aware
    queue ranks slots by), and not once it goes or the close ends its wait; Scrapy's
    ``_get_slot`` is asked once per request, waiting or not."""
    setup = Setup(concurrency=1)
    first, second, third = _requests(3)
    assert setup.through(first)
    assert not setup.through(second) and not setup.through(third)
    slot = setup.scrapy_slots["a"]
    assert slot.active == {second, third}
    setup.slots.left(first)
    assert setup.waiters[second].called and slot.active == {third}
    setup.waiters[third].addErrback(lambda failure: failure.trap(SlotClosed))
    setup.slots.let_go()
    assert slot.active == set()
    assert setup.asked == [first, second, third]


def test_a_wait_begun_once_the_room_let_go_ends_at_once() -> None:
    """The room noticed the close (its tick, or the spider closing) and a request still reaches
    the last look: its wait ends without a place now, not on a tick that no longer runs."""
    setup = Setup(concurrency=1)
    first, second = _requests(2)
    assert setup.through(first)
    setup.room.let_go()
    assert not setup.through(second)
    failed: list[Failure] = []
    setup.waiters[second].addErrback(failed.append)
    assert len(failed) == 1 and failed[0].check(SlotClosed)
    assert not setup.slots.busy()
    assert not setup.clock.getDelayedCalls()

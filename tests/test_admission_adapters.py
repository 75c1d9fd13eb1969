"""Each place that asks the admission does exactly what it answers (a scripted decision).

The gate, the final gate (for a request from the scheduler and for an ``engine.download``
caller), a held request being released and the guard's last look (``PageAnswers``) are thin
adapters: with the decision scripted, each is seen to go, hold, wait, send back or drop as told,
on ``task.Clock``. What the decision answers is tested in test_admission.py.
"""

from __future__ import annotations

import inspect
from collections.abc import Coroutine
from typing import Any

import pytest
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request
from scrapy.utils.test import get_crawler
from test_middleware_basic import MIDDLEWARE
from twisted.internet import task
from twisted.internet.defer import Deferred

from scrapy_rep import RobotsTxtMiddleware
from scrapy_rep.crawl._admission import ADMITTED, FIRST, GO, Admission, Drop, Wait
from scrapy_rep.crawl._events import Why
from scrapy_rep.crawl._settings import MiddlewareSettings
from scrapy_rep.crawl.exceptions import RequestDropped
from scrapy_rep.storage.results import MemoryStore

ORIGIN = "http://a.test"
START = 1_000_000.0


class Never:
    """Something to wait for that never comes."""

    name = "never"

    def wait(self, origin: str, trigger: Request | None) -> Deferred[Any]:
        return Deferred()


class Comes:
    """Something to wait for that comes when the test says so (``come``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.waiting: list[Deferred[Any]] = []

    def wait(self, origin: str, trigger: Request | None) -> Deferred[Any]:
        self.waiting.append(Deferred())
        return self.waiting[-1]

    def come(self) -> None:
        waiting, self.waiting = self.waiting, []
        for found in waiting:
            found.callback(None)


class Scripted:
    """The admission, answering what the test says; the rest is the real one's."""

    def __init__(self, real: Admission) -> None:
        self.real = real
        self.answer: Any = GO
        self.leave = False
        self.still: Any = None
        self.asked: list[str] = []

    def decide(self, request: Request, origin: str, now: float, at: str) -> Any:
        self.asked.append(at)
        return self.answer

    def awaited(self, request: Request, origin: str, now: float) -> Any:
        self.asked.append("release")
        return self.still

    def leaving(self, request: Request) -> bool:
        return self.leave

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


class Adapters:
    def __init__(self) -> None:
        self.clock = task.Clock()
        self.clock.advance(START)
        crawler = get_crawler(settings_dict=MIDDLEWARE)
        config = MiddlewareSettings.from_settings(crawler.settings)
        store = MemoryStore(clock=self.clock.seconds)
        self.middleware = RobotsTxtMiddleware(crawler, config, store, self.clock)
        self.stats = crawler.stats
        self.crawled: list[Request] = []
        self.middleware._room._crawl = self.crawled.append
        self.middleware._room.off_active = _waits  # type: ignore[method-assign,assignment]
        self.scripted = Scripted(self.middleware._admission)
        self.middleware._admission = self.scripted  # type: ignore[assignment]
        self.middleware._room._admission = self.scripted  # type: ignore[assignment]
        self.middleware._components.page_answers._admission = self.scripted  # type: ignore[assignment]

    def stat(self, name: str) -> int:
        return int(self.stats.get_value(name, 0))


class _Pending:
    def __await__(self) -> Any:
        yield


async def _waits(waiter: Deferred[Any], request: Request, downloads: Any = None) -> Any:
    """Waiting off ``Downloader.active``, without an engine: it waits."""
    await _Pending()


DROP = Drop(Why("disallowed", "Forbidden by robots.txt", ORIGIN))


def test_the_gate_goes_holds_or_drops_as_answered() -> None:
    gates = Adapters()
    for answer in (GO, FIRST):
        gates.scripted.answer = answer
        assert gates.middleware._on_scheduled(Request(ORIGIN + "/go")) is None
    gates.scripted.answer = Wait(Never())
    with pytest.raises(IgnoreRequest, match="held until never is known"):
        gates.middleware._on_scheduled(Request(ORIGIN + "/held"))
    assert gates.stat("robotstxt/held") == 1
    gates.scripted.answer = Wait(gates.middleware._components.pauses)
    with pytest.raises(IgnoreRequest, match="held while its origin is paused"):
        gates.middleware._on_scheduled(Request(ORIGIN + "/paused"))
    assert gates.stat("robotstxt/held") == 2
    gates.scripted.answer = DROP
    with pytest.raises(RequestDropped, match=r"Forbidden by robots\.txt"):
        gates.middleware._on_scheduled(Request(ORIGIN + "/dropped"))
    assert gates.stat("robotstxt/forbidden_before_schedule") == 1
    assert gates.scripted.asked == ["gate"] * 5
    # A request robots.txt does not apply to, or told not to obey it, asks nothing.
    assert gates.middleware._on_scheduled(Request("data:,x")) is None
    assert (
        gates.middleware._on_scheduled(Request(ORIGIN + "/x", meta={"dont_obey_robotstxt": True}))
        is None
    )
    assert gates.scripted.asked == ["gate"] * 5


def _run(waiting: Any) -> Any:
    """Run a coroutine as far as it goes without a reactor: its result, or itself if it waits."""
    assert inspect.iscoroutine(waiting)
    coroutine: Coroutine[Any, Any, Any] = waiting
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    return coroutine


def test_the_final_gate_downloads_drops_waits_or_sends_back_as_answered() -> None:
    gates = Adapters()
    final = gates.middleware._final_gate
    gates.scripted.answer = GO
    assert final(Request(ORIGIN + "/go")) is None
    gates.scripted.answer = DROP
    with pytest.raises(RequestDropped):
        final(Request(ORIGIN + "/dropped"))
    assert gates.stat("robotstxt/forbidden_before_download") == 1
    # From the scheduler, told to wait for its route's pause: back to the gate, to be held.
    gates.scripted.answer = Wait(gates.middleware._components.pauses)
    scheduled = Request(ORIGIN + "/scheduled", meta={ADMITTED: "1:x"})
    assert _run(final(scheduled)) is scheduled
    assert ADMITTED not in scheduled.meta and scheduled.dont_filter
    assert gates.stat("robotstxt/rescheduled") == 1
    # An engine.download caller (no token) waits here instead, as it must for anything.
    caller = Request(ORIGIN + "/caller")
    assert inspect.iscoroutine(_run(final(caller)))
    gates.scripted.answer = Wait(Never())
    assert inspect.iscoroutine(_run(final(Request(ORIGIN + "/document", meta={ADMITTED: "1:x"}))))
    assert gates.stat("robotstxt/rescheduled") == 1
    assert gates.scripted.asked == ["download"] * 5


def test_a_released_request_stays_held_or_goes_as_answered() -> None:
    gates = Adapters()
    room = gates.middleware._room
    request = Request(ORIGIN + "/held")
    first, then = Comes("first"), Comes("then")
    room.hold(ORIGIN, request, until=first)
    # Released, still waiting for something else: held on, the one hold it is.
    gates.scripted.still = then
    first.come()
    gates.clock.advance(0)  # released on the next reactor turn
    assert gates.crawled == [] and room.wanted(ORIGIN) and len(then.waiting) == 1
    assert gates.stat("robotstxt/held") == 1 and gates.stat("robotstxt/released") == 0
    # Nothing more to wait for: to the scheduler (the gate admits it on its way).
    gates.scripted.still = None
    then.come()
    gates.clock.advance(0)
    assert gates.crawled == [request] and not room.wanted(ORIGIN)
    assert gates.stat("robotstxt/held") == 1 and gates.stat("robotstxt/released") == 1
    assert gates.scripted.asked == ["release", "release"]


def test_the_last_look_sends_back_only_what_the_admission_says() -> None:
    gates = Adapters()
    pages = gates.middleware._components.page_answers
    request = Request(ORIGIN + "/leaving", meta={ADMITTED: "1:x"})
    assert pages.page_leaving(request) is None
    gates.scripted.leave = True
    assert pages.page_leaving(request) is request
    assert ADMITTED not in request.meta and gates.stat("robotstxt/rescheduled") == 1

"""``_inline``: a download's Deferred fires in the turn of the event loop the download ends in,
and a caller that takes its download goes on in that same turn (an origin's first request,
the moment its robots.txt is known).

Real asyncio loops; the downloads are coroutines awaiting futures the test resolves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from scrapy_rep.crawl import _inline


class _Turns:
    """Counts turns of the running event loop (one ``call_soon`` after another)."""

    def __init__(self) -> None:
        self.count = 0
        self._loop = asyncio.get_running_loop()
        self._handle = self._loop.call_soon(self._tick)

    def _tick(self) -> None:
        self.count += 1
        self._handle = self._loop.call_soon(self._tick)

    def stop(self) -> None:
        self._handle.cancel()


def _download(
    answer: asyncio.Future[str], started: list[str], name: str
) -> Coroutine[Any, Any, str]:
    async def download() -> str:
        started.append(name)
        return await answer

    return download()


def _run(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(main())


def test_a_taken_download_runs_in_the_callers_task_which_goes_on_in_the_answers_turn() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        turns = _Turns()
        first, second = loop.create_future(), loop.create_future()
        started: list[str] = []
        fired: dict[str, int] = {}

        def redirected(response: str) -> Deferred[str]:
            # A callback that asks for the next download (a redirect's next hop).
            fired["first"] = turns.count
            follow = _inline.deliver(_download(second, started, "second"))
            follow.addCallback(lambda r: fired.setdefault("second", turns.count) and r)
            return follow

        with _inline.taken() as mine:
            done = _inline.deliver(_download(first, started, "first"))
        done.addCallback(redirected)
        assert len(mine) == 1 and started == []  # taken, not started

        async def answer() -> None:
            await asyncio.sleep(0)
            first.set_result("moved")
            await asyncio.sleep(0)
            fired["answered"] = turns.count
            second.set_result("robots.txt")

        answering = loop.create_task(answer())
        await _inline.run(mine)
        went_on = turns.count
        await answering
        turns.stop()
        assert started == ["first", "second"]
        assert done.called and done.result == "robots.txt"
        # The caller goes on one turn after the answer at most (its own wake-up), where a
        # Deferred wrapped around a task and awaited as a future takes three.
        assert went_on - fired["answered"] <= 1
        assert fired["second"] - fired["answered"] <= 1

    _run(main)


def test_only_the_first_download_is_taken_the_next_starts_in_its_own_task() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        answers = [loop.create_future(), loop.create_future()]
        started: list[str] = []
        with _inline.taken() as mine:
            taken = _inline.deliver(_download(answers[0], started, "taken"))
            other = _inline.deliver(_download(answers[1], started, "other"))
        assert len(mine) == 1
        await asyncio.sleep(0)
        assert started == ["other"]
        answers[1].set_result("ok")
        for answer in answers:
            if not answer.done():
                answer.set_result("ok")
        await _inline.run(mine)
        await asyncio.sleep(0)
        assert taken.called and other.called

    _run(main)


def test_an_untaken_download_fires_its_deferred_in_the_turn_it_ends() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        turns = _Turns()
        answer = loop.create_future()
        started: list[str] = []
        done = _inline.deliver(_download(answer, started, "own"))
        fired: list[int] = []
        done.addCallback(lambda _: fired.append(turns.count))
        await asyncio.sleep(0)
        answered = turns.count
        answer.set_result("robots.txt")
        while not fired:
            await asyncio.sleep(0)
        turns.stop()
        assert started == ["own"]
        assert fired[0] - answered <= 1

    _run(main)


def test_a_failed_download_errbacks_and_the_caller_goes_on() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str] = loop.create_future()
        answer.set_exception(ConnectionRefusedError("refused"))
        with _inline.taken() as mine:
            done = _inline.deliver(_download(answer, [], "refused"))
        errors: list[Failure] = []
        done.addErrback(errors.append)
        await _inline.run(mine)
        assert [type(f.value) for f in errors] == [ConnectionRefusedError]

    _run(main)


def test_a_cancelled_caller_stays_cancelled_and_its_download_fails() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str] = loop.create_future()
        with _inline.taken() as mine:
            done = _inline.deliver(_download(answer, [], "slow"))
        errors: list[Failure] = []
        done.addErrback(errors.append)
        caller = loop.create_task(_inline.run(mine))
        await asyncio.sleep(0)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert [type(f.value) for f in errors] == [asyncio.CancelledError]

    _run(main)


def test_without_an_asyncio_loop_a_download_runs_on_deferreds() -> None:
    # Another Twisted reactor: the download awaits Deferreds, and runs in a Deferred's task.
    answer: Deferred[str] = Deferred()

    async def download() -> str:
        return await answer

    done = _inline.deliver(download())
    assert not done.called
    answer.callback("robots.txt")
    assert done.called and done.result == "robots.txt"

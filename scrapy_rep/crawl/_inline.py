"""An engine download as a Deferred, with as few event-loop turns as the download itself takes.

Under the asyncio reactor each hand-over between a Deferred and a coroutine costs a turn of the
event loop, and in a busy crawl a turn takes as long as every response ready at once takes to
handle (0.1-0.2 s at 10,000 sites). Scrapy's own robots.txt middleware awaits the download in
the task of the request waiting for it, which goes on in the same turn as the answer. Here:

- ``deliver``: the Deferred fires from inside the task awaiting the download, not one turn
  later (``Deferred.fromFuture``), so the resolver and what waits for it run at once;
- ``taken()`` / ``run``: a caller about to wait for a download it starts (an origin's first
  request at the final gate) takes it instead of a task of its own and awaits it itself, so it
  goes on in the very turn robots.txt is known, as with Scrapy's own middleware.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

__all__ = ["Taken", "deliver", "run", "taken"]

_T = TypeVar("_T")


#: Downloads taken by a caller (``taken``), run by it (``run``): each a coroutine and the
#: Deferred its outcome fires.
Taken = list[tuple[Coroutine[Any, Any, Any], Deferred[Any]]]

#: Set while a caller takes the next download started (a synchronous stretch: no other task
#: runs meanwhile).
_taker: Taken | None = None

_tasks: set[asyncio.Task[None]] = set()


def deliver(coroutine: Coroutine[Any, Any, _T]) -> Deferred[_T]:
    """``coroutine``'s outcome as a Deferred: taken by the caller of ``taken()`` if one takes
    a download now (the first one only), else awaited in a task of its own."""
    done: Deferred[_T] = Deferred()
    if _taker is not None and not _taker:
        _taker.append((coroutine, done))
        return done
    # A task of its own: an asyncio task under the asyncio reactor, else a Deferred's (what
    # Scrapy's deferred_from_coro picks, without its reactor lookup, which would install a
    # reactor where none runs).
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        Deferred.fromCoroutine(_await(coroutine, done, None))
    else:
        task = loop.create_task(_await(coroutine, done, None))
        # The loop keeps only a weak reference to a task.
        _tasks.add(task)
        task.add_done_callback(_tasks.discard)
    return done


@contextmanager
def taken() -> Iterator[Taken]:
    """The download ``deliver`` is asked for in this block, for the caller to ``run``."""
    global _taker
    mine: Taken = []
    previous, _taker = _taker, mine
    try:
        yield mine
    finally:
        _taker = previous


async def run(mine: Taken) -> None:
    """Await the downloads ``mine`` took in this task, and any one their Deferreds' callbacks
    start in turn (a redirect's next hop)."""
    while mine:
        await _await(*mine.pop(), mine)


async def _await(
    coroutine: Coroutine[Any, Any, _T], done: Deferred[_T], mine: Taken | None
) -> None:
    """Await ``coroutine`` and fire ``done`` from here; a download started by ``done``'s
    callbacks goes to ``mine`` (None: a task of its own)."""
    global _taker
    try:
        result: _T | Failure = await coroutine
    except BaseException:
        result = Failure()  # type: ignore[no-untyped-call]
    previous, _taker = _taker, mine
    try:
        done.callback(result)  # a Failure goes to the errbacks, as with errback()
    finally:
        _taker = previous
    if isinstance(result, Failure) and mine is not None and not isinstance(result.value, Exception):
        # A cancelled caller stays cancelled (the download's Deferred has its failure).
        result.raiseException()

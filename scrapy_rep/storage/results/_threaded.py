"""Turn a blocking store backend into a RobotsStore: calls run in a small private thread pool.

A private pool (not the reactor's) so that a slow store can never starve DNS resolution, which
shares the reactor's pool. After a call fails with StoreUnavailable, calls fail at once for
``retry_interval`` seconds instead of each waiting for the timeout again; then the next call
tries the store again, which is how a store that comes back is picked up.

Calls are run in batches: every call made while the pool's threads are busy waits, and the next
free thread runs all of them in one job. A store call takes microseconds, but a worker thread
gets the GIL from a CPU-busy reactor only once per switch interval (5 ms): one call per job
would make every call wait at least that long, behind all the calls queued before it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.threads import deferToThreadPool
from twisted.python.failure import Failure
from twisted.python.threadpool import ThreadPool

from scrapy_rep.storage.results._base import StoredPause, StoredRobots, StoreUnavailable

_T = TypeVar("_T")

#: Seconds during which calls fail fast after the store was found unavailable.
DEFAULT_RETRY_INTERVAL = 5.0

# A call waiting for a thread: what to run, and the Deferred its outcome fires.
_Call = tuple[Callable[..., Any], tuple[object, ...], "Deferred[Any]"]


class Backend(Protocol):
    """The blocking half of a store; every method may raise StoreUnavailable."""

    def get(self, origin: str) -> StoredRobots | None: ...

    def put(self, origin: str, entry: StoredRobots) -> None: ...

    def acquire_lease(self, origin: str, owner: str, ttl: float) -> bool: ...

    def release_lease(self, origin: str, owner: str) -> None: ...

    def set_pause(self, origin: str, seconds: float, failures: int, reason: str) -> None: ...

    def clear_pause(self, origin: str) -> None: ...

    def pauses(self) -> tuple[int, dict[str, StoredPause]]: ...

    def pause_version(self) -> int: ...

    def close(self) -> None: ...


class ThreadedStore:
    def __init__(
        self,
        backend: Backend,
        *,
        name: str,
        threads: int,
        retry_interval: float = DEFAULT_RETRY_INTERVAL,
    ) -> None:
        self.backend = backend
        self.name = name
        self._threads = threads
        self._retry_interval = retry_interval
        self._down_until = 0.0
        self._down_reason = ""
        self._pool: ThreadPool | None = None
        self._shutdown_trigger: object = None
        self._closed = False
        # Calls not handed to a thread yet, and how many batches the threads are running.
        self._waiting: list[_Call] = []
        self._running = 0
        # ``close``'s Deferred while the calls made before it still run.
        self._closing: Deferred[None] | None = None

    def get(self, origin: str) -> Deferred[StoredRobots | None]:
        return self._run(self.backend.get, origin)

    def put(self, origin: str, entry: StoredRobots) -> Deferred[None]:
        return self._run(self.backend.put, origin, entry)

    def acquire_lease(self, origin: str, owner: str, ttl: float) -> Deferred[bool]:
        return self._run(self.backend.acquire_lease, origin, owner, ttl)

    def release_lease(self, origin: str, owner: str) -> Deferred[None]:
        return self._run(self.backend.release_lease, origin, owner)

    def set_pause(self, origin: str, seconds: float, failures: int, reason: str) -> Deferred[None]:
        return self._run(self.backend.set_pause, origin, seconds, failures, reason)

    def clear_pause(self, origin: str) -> Deferred[None]:
        return self._run(self.backend.clear_pause, origin)

    def pauses(self) -> Deferred[tuple[int, dict[str, StoredPause]]]:
        return self._run(self.backend.pauses)

    def pause_version(self) -> Deferred[int]:
        return self._run(self.backend.pause_version)

    def close(self) -> Deferred[None]:
        """Close the backend once the calls made before have run (a pause the crawl's last
        answer began is written as the crawl stops: dropping the calls that waited for a busy
        thread lost it); calls made after fail."""
        if self._closed:
            return succeed(None)
        self._closed = True
        self._closing = Deferred()
        closing = self._closing
        self._close_when_done()
        return closing

    def _close_when_done(self) -> None:
        closing = self._closing
        if closing is None or self._running or self._waiting:
            return
        self._closing = None
        if self._pool is None:
            self.backend.close()
            closing.callback(None)
            return
        d = deferToThreadPool(_reactor(), self._pool, self.backend.close)
        d.addBoth(self._after_close)
        d.chainDeferred(closing)

    def _closed_error(self) -> StoreUnavailable:
        return StoreUnavailable(f"{self.name} is closed")

    def _after_close(self, result: _T) -> _T:
        if self._shutdown_trigger is not None:
            _reactor().removeSystemEventTrigger(self._shutdown_trigger)
            self._shutdown_trigger = None
        self._stop_pool()
        return result

    def _run(self, fn: Callable[..., _T], *args: object) -> Deferred[_T]:
        if self._closed:
            return fail(self._closed_error())
        # The fail-fast window is this store's own, read in its threads too: the process's
        # monotonic clock (a store is opened from the settings alone, given no clock).
        if time.monotonic() < self._down_until:
            return fail(StoreUnavailable(self._down_reason))
        deferred: Deferred[_T] = Deferred()
        self._waiting.append((fn, args, deferred))
        self._dispatch()
        return deferred

    def _dispatch(self) -> None:
        while self._waiting and self._running < self._threads:
            batch, self._waiting = self._waiting, []
            self._running += 1
            calls = [(fn, args) for fn, args, _deferred in batch]
            job = deferToThreadPool(_reactor(), self._ensure_pool(), self._run_batch, calls)
            job.addBoth(self._batch_done, [deferred for _fn, _args, deferred in batch])

    def _run_batch(
        self, calls: list[tuple[Callable[..., Any], tuple[object, ...]]]
    ) -> list[object]:
        """In a pool thread: each call's result, or its Failure."""
        outcomes: list[object] = []
        for fn, args in calls:
            try:
                outcomes.append(self._guarded(fn, *args))
            except Exception:
                outcomes.append(Failure())  # type: ignore[no-untyped-call]
        return outcomes

    def _batch_done(self, outcomes: list[object] | Failure, deferreds: list[Deferred[Any]]) -> None:
        for i, deferred in enumerate(deferreds):
            outcome = outcomes if isinstance(outcomes, Failure) else outcomes[i]
            if isinstance(outcome, Failure):
                deferred.errback(outcome)
            else:
                deferred.callback(outcome)
        # Calls made by those callbacks joined the waiting ones: all go in the next batch.
        self._running -= 1
        self._dispatch()
        self._close_when_done()

    def _guarded(self, fn: Callable[..., _T], *args: object) -> _T:
        # Calls queued before an outage was noticed fail fast too, instead of each timing out.
        if time.monotonic() < self._down_until:
            raise StoreUnavailable(self._down_reason)
        try:
            return fn(*args)
        except StoreUnavailable as exc:
            self._down_reason = str(exc)
            self._down_until = time.monotonic() + self._retry_interval
            raise

    def _ensure_pool(self) -> ThreadPool:
        if self._pool is None:
            self._pool = ThreadPool(minthreads=0, maxthreads=self._threads, name=self.name)
            self._pool.start()
            # Worker threads are not daemons: stop them with the reactor if nobody closed us.
            self._shutdown_trigger = _reactor().addSystemEventTrigger(
                "during", "shutdown", self._stop_pool
            )
        return self._pool

    def _stop_pool(self) -> None:
        if self._pool is not None:
            self._pool.stop()
            self._pool = None


def _reactor() -> Any:
    # Imported late: importing the module must not install a reactor before Scrapy picks one.
    from twisted.internet import reactor

    return reactor

"""Deferred bookkeeping the resolvers and the pauses share: waiters per key that may cancel,
and store calls that must not break the crawl."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred
    from twisted.python.failure import Failure

    from scrapy_rep.crawl._events import Events

__all__ = ["guarded", "withdraw"]

_T = TypeVar("_T")


def withdraw(waiters: dict[str, list[Deferred[_T]]], key: str, waiter: Deferred[_T]) -> None:
    """``waiter`` (cancelled) no longer waits for ``key``; a key no one waits for is dropped."""
    waiting = waiters.get(key, [])
    if waiter in waiting:
        waiting.remove(waiter)
    if not waiting:
        waiters.pop(key, None)


def guarded(events: Events, call: Deferred[Any], default: Any = None) -> Deferred[Any]:
    """``call``'s result (a store call), or ``default`` when the store fails: warned once per
    outage (``Events.store_failed``), its end told (``Events.store_answered``)."""

    def answered(result: Any) -> Any:
        events.store_answered()
        return result

    def failed(failure: Failure) -> Any:
        events.store_failed(failure.getErrorMessage())
        return default

    return call.addCallbacks(answered, failed)

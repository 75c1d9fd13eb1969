"""The one clock type: what the crawl's parts and the held-requests places are given, Twisted's
``IReactorTime`` (the reactor in a crawl, ``twisted.internet.task.Clock`` in unit tests), typed
as a Protocol for mypy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["Clock", "DelayedCall"]


class DelayedCall(Protocol):
    def active(self) -> bool: ...

    def cancel(self) -> None: ...


class Clock(Protocol):
    def seconds(self) -> float:
        """Epoch seconds (the reactor's clock is ``time.time``)."""

    def callLater(
        self, delay: float, callable: Callable[..., Any], *args: Any, **kw: Any
    ) -> DelayedCall: ...

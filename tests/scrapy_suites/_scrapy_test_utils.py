"""What the vendored Scrapy test modules import from Scrapy's own ``tests.utils``.

Scrapy runs its suite under pytest-twisted or pytest-asyncio; scrapy-rep's test
environment has neither, so ``coroutine_test`` runs the test's coroutine in a
fresh asyncio loop: Scrapy's reactorless mode, in which a running loop makes
``is_asyncio_available()`` true and Deferreds are awaited as Futures.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from functools import wraps
from typing import Any, ParamSpec

_P = ParamSpec("_P")


def coroutine_test(coro_f: Callable[_P, Coroutine[Any, Any, None]]) -> Callable[_P, None]:
    """Run an ``async def`` test to completion in its own asyncio loop."""

    @wraps(coro_f)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> None:
        asyncio.run(coro_f(*args, **kwargs))

    return run

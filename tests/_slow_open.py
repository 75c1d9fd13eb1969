"""``SlowPausesMiddleware``: scrapy_rep's RobotsTxtMiddleware whose first read of the store's
pauses (``Pauses.open``, awaited by its ``spider_opened`` handler) answers ``DELAY`` seconds
late, as a fleet's far-away Redis may. Loaded by import path in crawls of ``tests/_crawl.py``
(``tests/`` is on the crawl's sys.path)."""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.task import deferLater

from scrapy_rep.crawl.robotstxt_middleware import RobotsTxtMiddleware

DELAY = 1.5


class SlowPausesMiddleware(RobotsTxtMiddleware):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        pauses = self._components.pauses
        first_read = pauses.open

        def open_late() -> Deferred[None]:
            from twisted.internet import reactor

            return deferLater(reactor, DELAY, first_read)  # type: ignore[arg-type]

        pauses.open = open_late  # type: ignore[method-assign]

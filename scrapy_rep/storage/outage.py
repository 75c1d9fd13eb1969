"""A store that stops answering, as the user reads it: the robots.txt store, Redis for held
requests. Every failed call is counted (``robotstxt/store_error``); one WARNING when an outage
starts, one INFO line when the store answers again."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scrapy_rep.core.stats import STORE_ERROR

__all__ = ["Outage"]


@dataclass(kw_only=True)
class Outage:
    """``lost``: the WARNING (``%s`` is the error); ``back``: the INFO line; ``spider``: the
    spider the lines are about (Scrapy's log ``extra``); ``stats``: a stats collector or None."""

    stats: Any
    logger: logging.Logger
    lost: str
    back: str
    spider: Callable[[], object]
    down: bool = False

    def failed(self, error: object) -> None:
        if self.stats is not None:
            self.stats.inc_value(STORE_ERROR)
        if not self.down:
            self.down = True
            self.logger.warning(self.lost, error, extra={"spider": self.spider()})

    def answered(self) -> None:
        if self.down:
            self.down = False
            self.logger.info(self.back, extra={"spider": self.spider()})

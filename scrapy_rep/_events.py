"""What the middleware tells the user: every stat name and every log line, in one place.

The other parts call these methods ("a request was held", "robots.txt became unreachable")
and never format a message or name a stat themselves.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.http import Request

    from scrapy_rep._cache import OriginState

__all__ = ["Events", "duration"]

logger = logging.getLogger("scrapy_rep.middleware")

# Stat names (README "Stats" table); all under Scrapy's ``robotstxt/`` prefix.
FORBIDDEN = "robotstxt/forbidden"
FORBIDDEN_BEFORE_SCHEDULE = "robotstxt/forbidden_before_schedule"
HELD = "robotstxt/held"
RELEASED = "robotstxt/released"
RELEASE_FAILED = "robotstxt/release_failed"
HELD_DROPPED = "robotstxt/held_dropped"
HELD_DROPPED_ON_CLOSE = "robotstxt/held_dropped_on_close"
HELD_PERSISTED = "robotstxt/held_persisted"
HELD_RESTORED = "robotstxt/held_restored"
RESCHEDULED = "robotstxt/rescheduled"
STORE_HIT = "robotstxt/store_hit"
STORE_ERROR = "robotstxt/store_error"
REFRESH = "robotstxt/refresh"
UNREACHABLE = "robotstxt/unreachable"
RECOVERED = "robotstxt/recovered"
STALE_SERVED = "robotstxt/stale_served"
CRAWL_DELAY_APPLIED = "robotstxt/crawl_delay_applied"


class Events:
    def __init__(self, stats: Any, spider: Callable[[], object]) -> None:
        self._stats = stats
        self._spider = spider
        self._store_down = False

    def _extra(self) -> dict[str, object]:
        return {"spider": self._spider()}

    def count(self, stat: str, n: int = 1) -> None:
        self._stats.inc_value(stat, n)

    def forbidden(
        self, stat: str, request: Request, explain: Callable[[], tuple[str, str]]
    ) -> None:
        self._stats.inc_value(stat)
        if logger.isEnabledFor(logging.DEBUG):
            when = "before scheduling" if stat == FORBIDDEN_BEFORE_SCHEDULE else "before download"
            where, reason = explain()
            logger.debug(
                "Forbidden by robots.txt %s: %s (%s; %s)",
                when,
                request,
                where,
                reason,
                extra=self._extra(),
            )

    def dropped(self, origin: str, count: int, reason: str) -> None:
        self._stats.inc_value(HELD_DROPPED, count)
        logger.warning(
            "Dropped %d request(s) for %s: %s", count, origin, reason, extra=self._extra()
        )

    def release_failed(self, request: Request, error: BaseException) -> None:
        self._stats.inc_value(RELEASE_FAILED)
        logger.warning(
            "Could not send %s back to the scheduler (%s): it stays held and is retried",
            request,
            error,
            extra=self._extra(),
        )

    def store_failed(self, error: str) -> None:
        self._stats.inc_value(STORE_ERROR)
        if not self._store_down:
            self._store_down = True
            logger.warning(
                "robots.txt store unavailable (%s): going on with this process's own "
                "state until it answers again",
                error,
                extra=self._extra(),
            )

    def store_answered(self) -> None:
        if self._store_down:
            self._store_down = False
            logger.info("robots.txt store is available again", extra=self._extra())

    def resolve_failed(self, origin: str, error: object) -> None:
        logger.error("Resolving robots.txt of %s failed: %s", origin, error, extra=self._extra())

    def resolved(self, state: OriginState, previous: OriginState | None, now: float) -> None:
        """Log a freshly resolved robots.txt (SPEC B2/B3 outcome, next fetch)."""
        entry, decision = state.entry, state.serving
        failing = entry.outcome == "unreachable"
        was_failing = previous is not None and previous.entry.outcome == "unreachable"
        if failing and not was_failing:
            self._stats.inc_value(UNREACHABLE)
            logger.warning(
                "robots.txt of %s is unreachable (%s): %s",
                state.origin,
                entry.error,
                "serving the last good copy"
                if decision.stale and decision.kind != "hold"
                else "holding its requests"
                if decision.kind == "hold"
                else "unreachable too long, assuming no restrictions",
                extra=self._extra(),
            )
        elif was_failing and not failing:
            self._stats.inc_value(RECOVERED)
            logger.warning("robots.txt of %s is reachable again", state.origin, extra=self._extra())
        if failing and decision.stale:
            self._stats.inc_value(STALE_SERVED)
        logger.info(
            "robots.txt of %s: %s (%s, %d rules%s%s%s), next fetch in %s",
            state.origin,
            decision.outcome,
            entry.error if failing and entry.error else f"status {entry.status}",
            state.robots.rule_count if state.robots is not None else 0,
            f", {len(entry.redirects)} redirects" if entry.redirects else "",
            ", truncated" if entry.truncated else "",
            ", serving the last good copy" if failing and decision.stale else "",
            duration(decision.refresh_at - now),
            extra=self._extra(),
        )

    def closed_with_held(self, lost: int) -> None:
        """The crawl closed with ``lost`` requests held in memory only (no durable place)."""
        if lost:
            self._stats.inc_value(HELD_DROPPED_ON_CLOSE, lost)
            logger.warning(
                "Crawl closed with %d request(s) held for robots.txt; they were not downloaded "
                "(set JOBDIR, or a Redis REP_STORE, to keep them for the next run)",
                lost,
                extra=self._extra(),
            )

    def restored(self, count: int) -> None:
        self._stats.inc_value(HELD_RESTORED, count)
        logger.info(
            "Resuming %d request(s) held for robots.txt when the job stopped",
            count,
            extra=self._extra(),
        )


def duration(seconds: float) -> str:
    if math.isinf(seconds):
        return "never"
    if seconds >= 3600:
        return f"{seconds / 3600:.3g}h"
    if seconds >= 60:
        return f"{seconds / 60:.3g}m"
    return f"{max(seconds, 0.0):.3g}s"

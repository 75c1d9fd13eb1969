"""The middleware's REP_* settings: read once at startup, validated.

A bad value raises ValueError naming the setting to change. Defaults and
meanings are in the README settings table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy_rep._policy import Limits

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["MiddlewareSettings"]

_DAY = 86400.0


@dataclass(frozen=True)
class MiddlewareSettings:
    limits: Limits
    hold_timeout: float
    crawl_delay: bool
    parsed_cache_size: int
    lease_ttl: float
    lease_poll_interval: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> MiddlewareSettings:
        """Read and check every REP_* knob; a bad value raises ValueError naming it."""
        limits = Limits(
            cache_lifetime=_seconds(settings, "REP_CACHE_LIFETIME", _DAY),
            cache_min_lifetime=_seconds(settings, "REP_CACHE_MIN_LIFETIME", 60.0),
            cache_max_lifetime=_seconds(settings, "REP_CACHE_MAX_LIFETIME", 7 * _DAY),
            stale_max_age=_seconds(settings, "REP_STALE_MAX_AGE", 30 * _DAY),
            unreachable_allow_after=_seconds(settings, "REP_UNREACHABLE_ALLOW_AFTER", 30 * _DAY),
            retry_delay=_seconds(settings, "REP_RETRY_DELAY", 30.0),
            retry_fast_delay=_seconds(settings, "REP_RETRY_FAST_DELAY", 5.0),
            retry_max_delay=_seconds(settings, "REP_RETRY_MAX_DELAY", 600.0),
        )
        if limits.cache_min_lifetime > limits.cache_max_lifetime:
            raise ValueError(
                f"REP_CACHE_MIN_LIFETIME ({limits.cache_min_lifetime:g}) must not exceed "
                f"REP_CACHE_MAX_LIFETIME ({limits.cache_max_lifetime:g})"
            )
        size = _number(settings, "REP_PARSED_CACHE_SIZE", 4096)
        if size < 1 or size != int(size):
            raise ValueError(f"REP_PARSED_CACHE_SIZE must be a whole number >= 1, got {size!r}")
        lease_ttl = _seconds(settings, "REP_LEASE_TTL", 300.0)
        poll = _seconds(settings, "REP_LEASE_POLL_INTERVAL", 0.5)
        if lease_ttl <= 0 or poll <= 0:
            name = "REP_LEASE_TTL" if lease_ttl <= 0 else "REP_LEASE_POLL_INTERVAL"
            raise ValueError(f"{name} must be > 0, got {settings.get(name)!r}")
        return cls(
            limits=limits,
            hold_timeout=_seconds(settings, "REP_HOLD_TIMEOUT", 900.0),
            crawl_delay=_bool(settings, "REP_CRAWL_DELAY"),
            parsed_cache_size=int(size),
            lease_ttl=lease_ttl,
            lease_poll_interval=poll,
        )


def _number(settings: BaseSettings, name: str, default: float) -> float:
    value: Any = settings.get(name)
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if number != number:  # NaN
        raise ValueError(f"{name} must be a number, got {value!r}")
    return number


def _seconds(settings: BaseSettings, name: str, default: float) -> float:
    seconds = _number(settings, name, default)
    if seconds < 0:
        raise ValueError(f"{name} must be >= 0 (seconds), got {settings.get(name)!r}")
    return seconds


def _bool(settings: BaseSettings, name: str) -> bool:
    try:
        return settings.getbool(name, False)
    except ValueError:
        raise ValueError(f"{name} must be True or False, got {settings.get(name)!r}") from None

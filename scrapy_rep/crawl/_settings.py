"""Every REP_* setting, read once at startup and validated in one place.

A bad value raises ValueError naming the setting to change. Defaults and meanings are in the
README settings tables. ``MiddlewareSettings`` is what the robots.txt middleware runs with
(``StoreOptions``, part of it, is what opens its store); ``PageSettings`` what the page level
runs with. The token settings (REP_USER_AGENTS, with ROBOTSTXT_USER_AGENT and USER_AGENT) are
the exception: warned about rather than refused, they are read once per settings object by
``scrapy_rep.crawl._checks.settings_tokens``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy.settings import default_settings
from scrapy.utils.misc import load_object

from scrapy_rep.core.policy import Limits
from scrapy_rep.core.purpose import NO_PURPOSE, Purpose
from scrapy_rep.crawl.robot_parser import RobotParser
from scrapy_rep.storage.options import (
    DEFAULT_ENTRY_TTL,
    DEFAULT_MEMORY_STORE_SIZE,
    DEFAULT_PREFIX,
    DEFAULT_TIMEOUT,
    StoreOptions,
    store_url,
)

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["MiddlewareSettings", "PageSettings", "purpose", "store_options"]

_DAY = 86400.0

#: Kept beyond the middleware's longest use of an entry, so expiry never races that use.
_ENTRY_TTL_MARGIN = _DAY
#: The parser ROBOTSTXT_PARSER may name with the middleware (the add-on sets it).
_PARSER = "scrapy_rep.RobotParser"
#: What REP_PAGE_NOINDEX and REP_USAGE_ITEMS do with an item: set a field, or drop it.
_ITEM_MODES = ("mark", "drop")
#: REP_FETCH_META_KEYS' default: what decides where a request comes from and how it looks to
#: the site (its download slot, its source address, a TLS-impersonation plugin's browser);
#: the proxy is always copied. Not a browser-rendering switch (``playwright``, ``splash``,
#: ``zyte_api_automap``): robots.txt is a text file that must be read as served, not rendered
#: by a browser (which wraps it in HTML) or billed as an API call; nor cookies (a session's).
DEFAULT_FETCH_META_KEYS = ("download_slot", "bindaddress", "impersonate")


@dataclass(frozen=True)
class MiddlewareSettings:
    limits: Limits
    hold_timeout: float
    crawl_delay: bool
    parsed_cache_size: int
    lease_ttl: float
    lease_poll_interval: float
    held_owner_ttl: float
    store: StoreOptions
    purpose: Purpose = NO_PURPOSE
    fetch_timeout: float = 10.0
    fetch_meta_keys: tuple[str, ...] = DEFAULT_FETCH_META_KEYS

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> MiddlewareSettings:
        """Read and check every REP_* knob and ROBOTSTXT_PARSER; a bad value raises ValueError
        naming it."""
        _check_parser_setting(settings.get("ROBOTSTXT_PARSER"))
        limits = Limits(
            cache_lifetime=_seconds(settings, "REP_CACHE_LIFETIME", _DAY),
            cache_min_lifetime=_seconds(settings, "REP_CACHE_MIN_LIFETIME", 60.0),
            cache_max_lifetime=_seconds(settings, "REP_CACHE_MAX_LIFETIME", 7 * _DAY),
            stale_max_age=_seconds(settings, "REP_STALE_MAX_AGE", 30 * _DAY),
            unreachable_allow_after=_seconds(settings, "REP_UNREACHABLE_ALLOW_AFTER", 30 * _DAY),
            retry_delay=_seconds(settings, "REP_RETRY_DELAY", 30.0),
            retry_fast_delay=_seconds(settings, "REP_RETRY_FAST_DELAY", 5.0),
            retry_max_delay=_seconds(settings, "REP_RETRY_MAX_DELAY", 600.0),
            give_up_after=_attempts(settings, "REP_GIVE_UP_AFTER", 3),
        )
        if limits.cache_min_lifetime > limits.cache_max_lifetime:
            raise ValueError(
                f"REP_CACHE_MIN_LIFETIME ({limits.cache_min_lifetime:g}) must not exceed "
                f"REP_CACHE_MAX_LIFETIME ({limits.cache_max_lifetime:g})"
            )
        return cls(
            limits=limits,
            hold_timeout=_seconds(settings, "REP_HOLD_TIMEOUT", 900.0),
            crawl_delay=_bool(settings, "REP_CRAWL_DELAY"),
            parsed_cache_size=_count(settings, "REP_PARSED_CACHE_SIZE", 4096),
            # Short, and renewed while its holder fetches: a killed holder delays the origin
            # by one TTL at most.
            lease_ttl=_positive(settings, "REP_LEASE_TTL", 30.0),
            lease_poll_interval=_positive(settings, "REP_LEASE_POLL_INTERVAL", 0.5),
            # Seconds after a fleet process's last heartbeat before a live one adopts the
            # requests it held (Redis REP_STORE only).
            held_owner_ttl=_positive(settings, "REP_HELD_OWNER_TTL", 30.0),
            store=store_options(
                settings, keep_for=max(limits.stale_max_age, limits.unreachable_allow_after)
            ),
            purpose=purpose(settings),
            # Each attempt: with the default retry schedule an origin whose robots.txt never
            # answers is given up within 3 x 10 + 30 + 60 s (SPEC C4), not 3 x DOWNLOAD_TIMEOUT.
            fetch_timeout=_positive(settings, "REP_FETCH_TIMEOUT", 10.0),
            fetch_meta_keys=_names(settings, "REP_FETCH_META_KEYS", DEFAULT_FETCH_META_KEYS),
        )


@dataclass(frozen=True)
class PageSettings:
    """What the page level runs with (REP_PAGE_*, REP_USAGE_ITEMS, REP_USAGE_FIELD)."""

    noindex: str
    noindex_field: str
    rel_nofollow: bool
    purpose: Purpose = NO_PURPOSE
    usage_items: str = "drop"
    usage_field: str = "rep_usage_refused"

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> PageSettings:
        """The settings; a bad value raises ValueError naming the setting."""
        return cls(
            noindex=_item_mode(settings, "REP_PAGE_NOINDEX", "mark"),
            noindex_field=_field(settings, "REP_PAGE_NOINDEX_FIELD", "rep_noindex"),
            rel_nofollow=_bool(settings, "REP_PAGE_RELNOFOLLOW"),
            purpose=purpose(settings),
            usage_items=_item_mode(settings, "REP_USAGE_ITEMS", "drop"),
            usage_field=_field(settings, "REP_USAGE_FIELD", "rep_usage_refused"),
        )

    @staticmethod
    def enabled(settings: BaseSettings) -> bool:
        """Page rules are obeyed when robots.txt is, unless REP_PAGE_RULES is False (SPEC D8)."""
        return _bool(settings, "ROBOTSTXT_OBEY") and _bool(settings, "REP_PAGE_RULES", True)


def purpose(settings: BaseSettings) -> Purpose:
    """REP_USAGE_PURPOSES (labels; a comma-separated string works too) and REP_USAGE_STRICT."""
    value = settings.get("REP_USAGE_PURPOSES")
    if value is None or value == "":
        labels: list[object] = []
    elif isinstance(value, str):
        labels = [label.strip() for label in value.split(",") if label.strip()]
    elif isinstance(value, list | tuple):
        labels = list(value)
    else:
        raise ValueError(f"REP_USAGE_PURPOSES must be a list of labels, got {value!r}")
    if not all(isinstance(label, str) for label in labels):
        raise ValueError(f"REP_USAGE_PURPOSES must be a list of labels, got {value!r}")
    names = tuple(dict.fromkeys(str(label) for label in labels))
    try:
        return Purpose(names, _bool(settings, "REP_USAGE_STRICT"))
    except ValueError as exc:
        raise ValueError(f"REP_USAGE_PURPOSES: {exc}") from None


def _check_parser_setting(value: object) -> None:
    """Refuse a ROBOTSTXT_PARSER this middleware would not use.

    The middleware matches with Google's rules itself (``RobotsTxt``: tokens, Crawl-delay,
    explanations, the store); another parser could only be honoured by giving all of that up,
    so a setting naming one is a mistake to be told about rather than silently ignored.
    Scrapy's default (Protego) is the value of a project that never set it: accepted.
    """
    if value is None or value == default_settings.ROBOTSTXT_PARSER:
        return
    try:
        parser = load_object(value) if isinstance(value, str) else value
    except (ImportError, NameError, ValueError, AttributeError):
        parser = None
    if isinstance(parser, type) and issubclass(parser, RobotParser):
        return
    raise ValueError(
        f"ROBOTSTXT_PARSER={value!r} is not used by scrapy_rep.RobotsTxtMiddleware, which "
        f"applies Google's rules itself: remove the setting or set it to {_PARSER!r} (or, to "
        "use that parser, remove scrapy_rep's middleware and the add-on and enable Scrapy's "
        "own RobotsTxtMiddleware)"
    )


def store_options(settings: BaseSettings, *, keep_for: float = 0.0) -> StoreOptions:
    """The store settings, checked.

    ``keep_for``: the longest time (seconds) the middleware may still use an entry after its
    last write (its stale max age / unreachable limit); persistent entries outlive it.
    """
    url = settings.get("REP_STORE")
    if url and not isinstance(url, str):
        raise ValueError(f"REP_STORE must be a URL string, got {url!r}")
    return StoreOptions(
        url=store_url(url, settings.get("JOBDIR")),
        prefix=_string(settings, "REP_STORE_PREFIX", DEFAULT_PREFIX),
        timeout=_positive(settings, "REP_STORE_TIMEOUT", DEFAULT_TIMEOUT),
        entry_ttl=max(DEFAULT_ENTRY_TTL, keep_for + _ENTRY_TTL_MARGIN),
        memory_size=_count(settings, "REP_MEMORY_STORE_SIZE", DEFAULT_MEMORY_STORE_SIZE),
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


def _positive(settings: BaseSettings, name: str, default: float) -> float:
    seconds = _number(settings, name, default)
    if not 0 < seconds < float("inf"):
        raise ValueError(f"{name} must be a number of seconds > 0, got {settings.get(name)!r}")
    return seconds


def _count(settings: BaseSettings, name: str, default: int) -> int:
    size = _number(settings, name, default)
    if not 1 <= size < float("inf") or size != int(size):
        raise ValueError(f"{name} must be a whole number >= 1, got {settings.get(name)!r}")
    return int(size)


def _attempts(settings: BaseSettings, name: str, default: int) -> int:
    count = _number(settings, name, default)
    if not 0 <= count < float("inf") or count != int(count):
        raise ValueError(
            f"{name} must be a whole number >= 0 (0: never), got {settings.get(name)!r}"
        )
    return int(count)


def _names(settings: BaseSettings, name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = settings.get(name)
    if value is None:
        return default
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{name} must be a list of meta keys, got {value!r}")
    return tuple(dict.fromkeys(value))


def _string(settings: BaseSettings, name: str, default: str) -> str:
    value = settings.get(name, default)
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, got {value!r}")
    return value


def _field(settings: BaseSettings, name: str, default: str) -> str:
    field = settings.get(name, default)
    if not isinstance(field, str) or not field:
        raise ValueError(f"{name} must be a field name, got {field!r}")
    return field


def _item_mode(settings: BaseSettings, name: str, default: str) -> str:
    mode = str(settings.get(name) or default).lower()
    if mode not in _ITEM_MODES:
        raise ValueError(f"{name} must be 'mark' or 'drop', got {settings.get(name)!r}")
    return mode


def _bool(settings: BaseSettings, name: str, default: bool = False) -> bool:
    try:
        return settings.getbool(name, default)
    except ValueError:
        raise ValueError(f"{name} must be True or False, got {settings.get(name)!r}") from None

"""Every REP_* setting, read once at startup and validated in one place.

Each is read through its row of ``scrapy_rep.core.settings.SETTINGS`` (name, default, check,
meaning; README's settings tables say the same): a bad value raises ValueError naming the
setting to change. What spans settings or needs Scrapy is checked here: each minimum against
its maximum (``_AT_MOST``), and ROBOTSTXT_PARSER. ``MiddlewareSettings`` is what the
robots.txt middleware runs with (``StoreOptions``, part of it, is what opens its store);
``PageSettings`` what the page level runs with. The token settings (REP_USER_AGENTS, with
ROBOTSTXT_USER_AGENT and USER_AGENT) are the exception: warned about rather than refused, they
are read once per settings object by ``scrapy_rep.crawl._tokens.settings_tokens``.

What the user reads at startup: the components read their settings inside
``refused_at_startup``, which logs a refused value at ERROR (the first ERROR line of the run)
and stops the crawl; and ``warn_unknown_settings`` warns once about each name that looks like a
misspelled REP_* setting, naming the setting meant.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypeVar

from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.misc import load_object

from scrapy_rep.core.policy import Limits
from scrapy_rep.core.purpose import NO_PURPOSE, Purpose
from scrapy_rep.core.settings import SETTINGS, default, misspelled, switch
from scrapy_rep.core.sources import UsageDocument
from scrapy_rep.crawl import _compat
from scrapy_rep.crawl.robot_parser import RobotParser
from scrapy_rep.storage.options import (
    DEFAULT_ENTRY_TTL,
    StoreOptions,
    store_kind,
    store_url,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

__all__ = [
    "MiddlewareSettings",
    "PageSettings",
    "SettingError",
    "purpose",
    "refused_at_startup",
    "store_options",
    "usage_documents",
    "warn_unknown_settings",
]

# Log lines given while the settings are read, before any component that holds an Events
# exists (as the token warnings of ``_tokens.py``): to the public ``scrapy_rep`` logger.
logger = logging.getLogger("scrapy_rep")
_T = TypeVar("_T")

#: (a setting, the setting it must not exceed): a minimum or first delay above its cap would be
#: cut to the cap without a word (``policy.lifetime``, ``policy.retry_delay``,
#: ``pause.pause_seconds``).
_AT_MOST = (
    ("REP_CACHE_MIN_LIFETIME", "REP_CACHE_MAX_LIFETIME"),
    ("REP_RETRY_DELAY", "REP_RETRY_MAX_DELAY"),
    ("REP_RETRY_FAST_DELAY", "REP_RETRY_MAX_DELAY"),
    ("REP_PAUSE_DELAY", "REP_PAUSE_MAX_DELAY"),
)


class SettingError(ValueError):
    """A setting scrapy-rep refuses (a REP_* value, ROBOTSTXT_PARSER), raised while a component
    starts, once ``refused_at_startup`` has logged why."""


@contextmanager
def refused_at_startup(crawler: Crawler) -> Iterator[None]:
    """Around a component's reading of its settings in ``from_crawler``: a setting refused (a
    ValueError naming it, the value given and what is accepted) is logged at ERROR, then raised
    as ``SettingError``, which stops the crawl before any request with a non-zero exit
    (``_compat.fail_startup``).

    Logged here because Scrapy's own report of an exception raised while components start
    comes later and differs by release (2.11: a CRITICAL "Unhandled error in Deferred"; 2.19:
    "[asyncio] ERROR: Task exception was never retrieved"), a traceback whose last line says
    it: the user's first ERROR line is this one. ``REP_STORE`` naming Redis without redis-py
    installed (ImportError) is logged the same way and raised unchanged.
    """
    try:
        yield
    except (ValueError, ImportError) as exc:
        logger.error(
            "%s. The crawl stops before its first request.",
            str(exc).rstrip("."),
            extra={"crawler": crawler},
        )
        _compat.fail_startup(crawler)
        if isinstance(exc, ImportError):
            raise
        raise SettingError(str(exc)) from None


#: Where a setting was set, by the priority Scrapy set it at.
_SET_AT: dict[int | None, str] = {
    SETTINGS_PRIORITIES["project"]: "in the project settings",
    SETTINGS_PRIORITIES["spider"]: "in the spider's custom_settings",
    SETTINGS_PRIORITIES["cmdline"]: "with -s on the command line",
    SETTINGS_PRIORITIES["command"]: "by the command",
    SETTINGS_PRIORITIES["addon"]: "by an add-on",
}
#: The names of each crawler's settings already looked at (and warned about if unknown).
_checked: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()


def warn_unknown_settings(crawler: Crawler) -> None:
    """One WARNING per name of ``crawler``'s settings that is no setting of scrapy-rep but
    looks meant as one: it starts with REP_ (in any case), or it is one edit from one
    (RPE_PAUSE, REP-PAUSE); the warning says which setting it most likely misspells and where
    it was set (settings.py, ``-s``, a spider's ``custom_settings``). Each component that reads
    REP_* settings calls it, whether the add-on enabled it or the project did by hand: each
    name is warned about once per crawler."""
    settings = crawler.settings
    checked = _checked.setdefault(crawler, set())
    for name in settings:
        if not isinstance(name, str) or name in SETTINGS or name in checked:
            continue
        checked.add(name)
        rep = name[:4].upper() == "REP_"
        guesses = misspelled(name) if rep else misspelled(name, most_edits=1)
        if not (rep or guesses):
            continue
        unknown = f"Unknown setting {name} (set {_set_at(settings.getpriority(name))})"
        if guesses:
            message = f"{unknown}: did you mean {' or '.join(guesses)}? scrapy-rep ignores it"
        else:
            message = (
                f"{unknown}: scrapy-rep has no such setting (README's settings tables list them) "
                "and ignores it"
            )
        logger.warning("%s", message, extra={"crawler": crawler})


def _set_at(priority: int | None) -> str:
    """Where a setting at ``priority`` was set, in words ("in the project settings")."""
    return _SET_AT.get(priority, f"at priority {priority}")


@dataclass(frozen=True)
class MiddlewareSettings:
    limits: Limits
    store: StoreOptions
    hold_timeout: float = default("REP_HOLD_TIMEOUT")
    crawl_delay: bool = default("REP_CRAWL_DELAY")
    parsed_cache_size: int = default("REP_PARSED_CACHE_SIZE")
    lease_ttl: float = default("REP_LEASE_TTL")
    lease_poll_interval: float = default("REP_LEASE_POLL_INTERVAL")
    held_owner_ttl: float = default("REP_HELD_OWNER_TTL")
    purpose: Purpose = NO_PURPOSE
    fetch_timeout: float = default("REP_FETCH_TIMEOUT")
    fetch_meta_keys: tuple[str, ...] = default("REP_FETCH_META_KEYS")
    #: REP_USAGE_SOURCES: tdmrep.json and what the project adds. Keyword-only, so that it needs
    #: no default where it stands in the reading order (``_read``).
    usage_documents: tuple[UsageDocument, ...] = field(kw_only=True)
    crawl_delay_max: float = default("REP_CRAWL_DELAY_MAX")
    crawl_delay_above_max: str = default("REP_CRAWL_DELAY_ABOVE_MAX")
    pause: bool = default("REP_PAUSE")
    pause_delay: float = default("REP_PAUSE_DELAY")
    pause_max_delay: float = default("REP_PAUSE_MAX_DELAY")
    pause_give_up_after: float = default("REP_PAUSE_GIVE_UP_AFTER")
    slot_concurrency: bool = default("REP_SLOT_CONCURRENCY")
    fleet_limits: bool = default("REP_FLEET_LIMITS")
    record: str | None = default("REP_RECORD")
    record_query_key: str | None = default("REP_RECORD_QUERY_KEY")

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> MiddlewareSettings:
        """Read and check every REP_* knob and ROBOTSTXT_PARSER; a bad value raises ValueError
        naming it."""
        _check_parser_setting(settings)
        for lower, upper in _AT_MOST:
            low, high = _setting(settings, lower), _setting(settings, upper)
            if low > high:
                raise ValueError(f"{lower} ({low:.15g}) must not exceed {upper} ({high:.15g})")
        _check_fleet_setting(settings)
        limits = _read(Limits, settings)
        keep_for = max(limits.stale_max_age, limits.unreachable_allow_after)
        return _read(
            cls,
            settings,
            limits=lambda: limits,
            store=lambda: store_options(settings, keep_for=keep_for),
            purpose=lambda: purpose(settings),
            usage_documents=lambda: usage_documents(settings),
        )


def _read(cls: type[_T], settings: BaseSettings, **made: Callable[[], Any]) -> _T:
    """``cls`` with each field the REP_* setting of its name in capitals (or the one its
    metadata names), or what ``made`` makes for it; read in field order (with several bad
    values, the first is reported)."""
    values: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        name = f.metadata.get("setting", f"REP_{f.name.upper()}")
        values[f.name] = made[f.name]() if f.name in made else _setting(settings, name)
    return cls(**values)


@dataclass(frozen=True)
class PageSettings:
    """What the page level runs with (REP_PAGE_*, REP_USAGE_ITEMS, REP_USAGE_FIELD)."""

    noindex: str = field(metadata={"setting": "REP_PAGE_NOINDEX"})
    noindex_field: str = field(metadata={"setting": "REP_PAGE_NOINDEX_FIELD"})
    rel_nofollow: bool = field(metadata={"setting": "REP_PAGE_RELNOFOLLOW"})
    purpose: Purpose = NO_PURPOSE
    usage_items: str = default("REP_USAGE_ITEMS")
    usage_field: str = default("REP_USAGE_FIELD")

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> PageSettings:
        """The settings; a bad value raises ValueError naming the setting."""
        return _read(cls, settings, purpose=lambda: purpose(settings))

    @staticmethod
    def enabled(settings: BaseSettings) -> bool:
        """Page rules are obeyed when robots.txt is, unless REP_PAGE_RULES is False (SPEC D8)."""
        obey = switch("ROBOTSTXT_OBEY", settings.get("ROBOTSTXT_OBEY", False))
        return obey and bool(_setting(settings, "REP_PAGE_RULES"))


#: What a usage document must have (``scrapy_rep.core.sources.UsageDocument``).
_DOCUMENT_API = ("name", "path", "stats_prefix", "labels", "parse", "statement", "summary")


def usage_documents(settings: BaseSettings) -> tuple[UsageDocument, ...]:
    """REP_USAGE_SOURCES with tdmrep.json: each import path loaded (a class is instantiated)
    and checked to be a ``UsageDocument``; a bad entry raises ValueError naming it."""
    documents: list[UsageDocument] = []
    for path in _setting(settings, "REP_USAGE_SOURCES"):
        try:
            found = load_object(path)
        except (ImportError, NameError, ValueError, AttributeError) as exc:
            raise ValueError(f"REP_USAGE_SOURCES: cannot load {path!r} ({exc})") from None
        document = found() if isinstance(found, type) else found
        if missing := [name for name in _DOCUMENT_API if not hasattr(document, name)]:
            raise ValueError(
                f"REP_USAGE_SOURCES: {path!r} is not a usage document (no {', '.join(missing)}; "
                "see scrapy_rep.core.sources.UsageDocument)"
            )
        documents.append(document)
    names = [document.name for document in documents]
    prefixes = [document.stats_prefix for document in documents]
    # robots.txt's own stats prefix counts as taken.
    if len(set(names)) < len(names) or len(set(prefixes) - {"robotstxt"}) < len(prefixes):
        raise ValueError(
            f"REP_USAGE_SOURCES: each usage document needs its own name and stats_prefix "
            f"(and not robots.txt's), got {names} and {prefixes}"
        )
    return tuple(documents)


def purpose(settings: BaseSettings) -> Purpose:
    """REP_USAGE_PURPOSES (labels; a comma-separated string works too) and REP_USAGE_STRICT."""
    labels = _setting(settings, "REP_USAGE_PURPOSES")
    strict = _setting(settings, "REP_USAGE_STRICT")
    try:
        return Purpose(labels, strict)
    except ValueError as exc:  # a label outside the vocabulary
        raise ValueError(
            f"REP_USAGE_PURPOSES: {exc} (a list of them or a comma-separated string)"
        ) from None


def _check_fleet_setting(settings: BaseSettings) -> None:
    """Refuse REP_FLEET_LIMITS set to True where there is no fleet to hold limits with: only a
    Redis store is shared by the processes of a fleet (its default, True, is simply unused
    with the other stores)."""
    priority = settings.getpriority("REP_FLEET_LIMITS")
    if priority is None or priority <= SETTINGS_PRIORITIES["default"]:
        return
    url = store_url(_setting(settings, "REP_STORE"), settings.get("JOBDIR"))
    if _setting(settings, "REP_FLEET_LIMITS") and store_kind(url) != "redis":
        raise ValueError(
            f"REP_FLEET_LIMITS = True needs a Redis REP_STORE (the store is {url!r}, whose "
            "limits each process holds alone): set REP_STORE = 'redis://host:6379/0', shared by "
            "the fleet, or remove REP_FLEET_LIMITS"
        )


def _check_parser_setting(settings: BaseSettings) -> None:
    """Refuse a ROBOTSTXT_PARSER this middleware would not use.

    The middleware matches with Google's rules itself (``RobotsTxt``: tokens, Crawl-delay,
    explanations, the store); another parser could only be honoured by giving all of that up,
    so a setting naming one is a mistake to be told about rather than silently ignored.
    Scrapy's default (Protego) is the value of a project that never set it: accepted at the
    default priority only, since the same value set by the project asks for Protego's answers.
    """
    value = settings.get("ROBOTSTXT_PARSER")
    priority = settings.getpriority("ROBOTSTXT_PARSER")
    if value is None or priority is None or priority <= SETTINGS_PRIORITIES["default"]:
        return
    parser = value  # a path that does not load stays a string: refused
    with suppress(ImportError, NameError, ValueError, AttributeError):
        parser = load_object(value) if isinstance(value, str) else value
    if not (isinstance(parser, type) and issubclass(parser, RobotParser)):
        raise ValueError(
            f"ROBOTSTXT_PARSER={value!r} is not used by scrapy_rep.RobotsTxtMiddleware, which "
            f"applies Google's rules itself (it was set {_set_at(priority)}): remove the setting "
            "or set it to 'scrapy_rep.RobotParser' (or, to use that parser, remove scrapy_rep's "
            "middleware and the add-on and enable Scrapy's own RobotsTxtMiddleware)"
        )


def store_options(settings: BaseSettings, *, keep_for: float = 0.0) -> StoreOptions:
    """The store settings, checked.

    ``keep_for``: the longest time (seconds) the middleware may still use an entry after its
    last write (its stale max age / unreachable limit); persistent entries outlive it.
    """
    return StoreOptions(
        url=store_url(_setting(settings, "REP_STORE"), settings.get("JOBDIR")),
        prefix=_setting(settings, "REP_STORE_PREFIX"),
        timeout=_setting(settings, "REP_STORE_TIMEOUT"),
        # Kept a day beyond the middleware's longest use of an entry, so expiry never races it.
        entry_ttl=max(DEFAULT_ENTRY_TTL, keep_for + 86400.0),
        memory_size=_setting(settings, "REP_MEMORY_STORE_SIZE"),
    )


def _setting(settings: BaseSettings, name: str) -> Any:
    """REP_* setting ``name`` as ``settings`` have it, checked by its row of the table (its
    default when not set)."""
    return SETTINGS[name].value(settings.get(name))

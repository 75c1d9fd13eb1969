"""Every REP_* setting in one table (``SETTINGS``): its name, default, check and meaning.

Pure: no Scrapy. ``scrapy_rep.crawl._settings`` reads each setting through its row, ``Limits``
and the store options take their defaults from it, and README's settings tables say the same
(tests/test_settings_table.py keeps them equal). A row's check takes the configured value and
returns it checked (seconds as a float, a list as a tuple) or raises ValueError naming the
setting and what it must be. Every number has a finite range (``Check.bounds``).
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from os import PathLike
from typing import Any, Generic, TypeVar

__all__ = [
    "SETTINGS",
    "USAGE_SOURCES_BASE",
    "Bounds",
    "Check",
    "Setting",
    "default",
    "misspelled",
    "switch",
]

T = TypeVar("T")

_DAY = 86400
# The ceilings of the numbers' ranges: a delay, timeout or TTL above a day is a mistake (a
# retry, pause or Crawl-delay of a day already stalls an origin for a crawl's life); a lifetime,
# an age or a wait for an origin may reach a year (defaults up to 30 days; README's Google-like
# REP_HOLD_TIMEOUT is 31 days).
_YEAR = 365 * _DAY
#: What REP_PAGE_NOINDEX and REP_USAGE_ITEMS do with an item: set a field, or drop it.
_ITEM_MODES = ("mark", "drop")


def _none(value: object) -> bool:
    return value is None


def _blank(value: object) -> bool:
    return value is None or value == ""


def _empty(value: object) -> bool:
    return not value


def _shown(number: float) -> str:
    """``number`` as a person writes it: 31536000 (not 3.1536e+07), 0.5."""
    return f"{number:.15g}"


@dataclass(frozen=True)
class Bounds:
    """The numbers a setting accepts: finite, from ``low`` to ``high`` (``low`` itself too
    unless ``above_low``), whole ones if ``whole`` (else seconds). ``str()`` says so in words."""

    low: float
    high: float
    above_low: bool = False
    whole: bool = False

    def __str__(self) -> str:
        what = "a whole number" if self.whole else "a number of seconds"
        low = f"over {_shown(self.low)}, up" if self.above_low else f"from {_shown(self.low)}"
        return f"{what} {low} to {_shown(self.high)}"

    def parse(self, name: str, value: Any) -> float:
        """``value`` as a float within the bounds, or ValueError naming ``name``, the value
        and the bounds. NaN and infinities are refused by the comparisons; True and False are
        not numbers here, though Python counts them as 1 and 0."""
        number = math.nan
        if not isinstance(value, bool):
            # OverflowError: an int too large for a float (10**400).
            with contextlib.suppress(TypeError, ValueError, OverflowError):
                number = float(value)
        above = number > self.low if self.above_low else number >= self.low
        if not (above and number <= self.high) or (self.whole and not number.is_integer()):
            raise ValueError(f"{name} must be {self}, got {value!r}")
        return number


@dataclass(frozen=True)
class Check(Generic[T]):
    """How a kind of setting is checked: ``parse(name, value)`` returns the value checked or
    raises ValueError naming the setting; a value ``unset`` accepts means "not set" (the
    setting's default applies). ``bounds``: a number's range (None for other kinds)."""

    parse: Callable[[str, Any], T]
    unset: Callable[[object], bool] = _none
    bounds: Bounds | None = None


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One row: ``default`` as README writes it (86400, not 86400.0: the check makes seconds
    floats), the check, and a one-line meaning."""

    name: str
    default: object
    check: Check[T]
    doc: str

    def value(self, raw: object = None) -> T:
        """``raw`` (the configured value; None: not set) checked, or the default checked."""
        return self.check.parse(self.name, self.default if self.check.unset(raw) else raw)


def default(name: str) -> Any:
    """The default of setting ``name`` as the crawl runs with it (checked)."""
    return SETTINGS[name].value()


def switch(name: str, value: Any) -> bool:
    """``value`` read as Scrapy's ``getbool`` reads it: 1/0, True/False, and their strings."""
    try:
        return bool(int(value))
    except (TypeError, ValueError):
        if value in ("True", "true"):
            return True
        if value in ("False", "false"):
            return False
        raise ValueError(f"{name} must be True or False, got {value!r}") from None


def _seconds(high: float, *, zero: bool = True) -> Check[float]:
    """Seconds from 0 (or over 0 unless ``zero``) to ``high``; blank ("", as `-s NAME=`
    gives) means "not set"."""
    bounds = Bounds(0, high, above_low=not zero)
    return Check(bounds.parse, _blank, bounds)


def _whole(low: int, high: int) -> Check[int]:
    """A whole number from ``low`` to ``high`` (2.0 and "2" too); blank means "not set"."""
    bounds = Bounds(low, high, whole=True)

    def parse(name: str, value: Any) -> int:
        return int(bounds.parse(name, value))

    return Check(parse, _blank, bounds)


def _strings(what: str) -> Callable[[str, Any], tuple[str, ...]]:
    """A list of strings (a comma-separated string works too), without duplicates."""

    def parse(name: str, value: Any) -> tuple[str, ...]:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{name} must be a list of {what}, got {value!r}")
        return tuple(dict.fromkeys(value))

    return parse


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, got {value!r}")
    return value


def _field(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a field name, got {value!r}")
    return value


def _item_mode(name: str, value: Any) -> str:
    mode = str(value).lower()
    if mode not in _ITEM_MODES:
        raise ValueError(f"{name} must be 'mark' or 'drop', got {value!r}")
    return mode


def _choice(*choices: str) -> Callable[[str, Any], str]:
    def parse(name: str, value: Any) -> str:
        text = str(value).lower()
        if text not in choices:
            raise ValueError(f"{name} must be {' or '.join(map(repr, choices))}, got {value!r}")
        return text

    return parse


def _store_url(name: str, value: Any) -> str | None:
    # Which URLs name a store is told by ``storage.options.store_kind``, when it is opened.
    if not value:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a URL string, got {value!r}")
    return value


def _path(name: str, value: Any) -> str | None:
    if not value:
        return None
    if not isinstance(value, (str, PathLike)):
        raise ValueError(f"{name} must be a directory path, got {value!r}")
    return str(value)


def _key(name: str, value: Any) -> str | None:
    if not value:
        return None
    if not isinstance(value, str) or len(value) < 16:
        raise ValueError(f"{name} must be a secret of at least 16 characters, got {value!r}")
    return value


def _as_given(name: str, value: Any) -> Any:
    return value


#: The usage documents every crawl knows (REP_USAGE_SOURCES adds to them, None removes one):
#: import path -> order, as Scrapy's component settings are written.
USAGE_SOURCES_BASE: Mapping[str, int] = {"scrapy_rep.core.tdmrep.TDMREP": 100}


def _sources(name: str, value: Any) -> tuple[str, ...]:
    """REP_USAGE_SOURCES merged over ``USAGE_SOURCES_BASE``: the import paths, in order."""
    if isinstance(value, str):  # `-s REP_USAGE_SOURCES='{"…": 200}'`, as Scrapy's getdict reads it
        try:
            value = json.loads(value)
        except ValueError:
            pass
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise ValueError(
            f"{name} must be a dict of import paths to orders, as "
            f'{{"myproject.sources.MySource": 200}}, got {value!r}'
        )
    merged: dict[str, Any] = {**USAGE_SOURCES_BASE, **value}
    for path, order in merged.items():
        if order is not None and (isinstance(order, bool) or not isinstance(order, int | float)):
            raise ValueError(
                f"{name}: the order of {path!r} must be a number or None, got {order!r}"
            )
    kept = [(order, path) for path, order in merged.items() if order is not None]
    return tuple(path for _order, path in sorted(kept))


_SWITCH = Check(switch)
# An empty item mode means "not set".
_ITEM_MODE = Check(_item_mode, _empty)
_ABOVE_MAX = Check(_choice("clamp", "skip"), _empty)
_FIELD = Check(_field)
_TEXT = Check(_text)
_META_KEYS = Check(_strings("meta keys"))
_SOURCES = Check(_sources)
_LABELS = Check(_strings("labels"))
_STORE_URL = Check(_store_url)
_PATH = Check(_path)
_KEY = Check(_key)
# Read by ``scrapy_rep.core.tokens``, which warns about a bad token rather than refusing it.
_TOKENS = Check(_as_given)

#: Every REP_* setting, in the order of README's Settings section.
SETTINGS: Mapping[str, Setting[Any]] = {
    row.name: row
    for row in (
        Setting(
            "REP_USER_AGENTS",
            (),
            _TOKENS,
            "tokens to obey robots.txt as, in order of preference; wins over ROBOTSTXT_USER_AGENT",
        ),
        Setting(
            "REP_CACHE_LIFETIME",
            _DAY,
            _seconds(_YEAR),
            "seconds a fetched result is used without Cache-Control: max-age",
        ),
        Setting("REP_CACHE_MIN_LIFETIME", 60, _seconds(_YEAR), "lower bound for max-age (seconds)"),
        Setting(
            "REP_CACHE_MAX_LIFETIME", 7 * _DAY, _seconds(_YEAR), "upper bound for max-age (seconds)"
        ),
        Setting(
            "REP_STALE_MAX_AGE",
            30 * _DAY,
            _seconds(_YEAR),
            "seconds the last good copy may still serve while refreshes fail",
        ),
        Setting(
            "REP_UNREACHABLE_ALLOW_AFTER",
            30 * _DAY,
            _seconds(_YEAR),
            "seconds unreachable with no good copy after which everything is allowed (Google's)",
        ),
        Setting(
            "REP_HOLD_TIMEOUT",
            900,
            _seconds(_YEAR),
            "seconds a request may wait for its origin's robots.txt before the crawl stops waiting",
        ),
        Setting(
            "REP_GIVE_UP_AFTER",
            3,
            _whole(0, 1000),
            "failures in a row after which the crawl stops waiting for an origin (0: never)",
        ),
        Setting(
            "REP_RETRY_DELAY",
            30,
            _seconds(_DAY),
            "first retry delay after a 5xx or network error; doubles per failure",
        ),
        Setting("REP_RETRY_FAST_DELAY", 5, _seconds(_DAY), "first retry delay after 429 or 503"),
        Setting(
            "REP_RETRY_MAX_DELAY", 600, _seconds(_DAY), "cap for retry delays, Retry-After included"
        ),
        # Each attempt: with the default retry schedule an origin whose robots.txt never
        # answers is given up within 3 x 10 + 30 + 60 s (SPEC C4), not 3 x DOWNLOAD_TIMEOUT.
        Setting(
            "REP_FETCH_TIMEOUT",
            10,
            _seconds(_DAY, zero=False),
            "seconds a robots.txt or tdmrep.json download may take (or DOWNLOAD_TIMEOUT if lower)",
        ),
        # What decides where a request comes from and how it looks to the site (its download
        # slot, its source address, a TLS-impersonation plugin's browser); the proxy is always
        # copied. Not a browser-rendering switch (``playwright``, ``splash``,
        # ``zyte_api_automap``): robots.txt is a text file that must be read as served, not
        # rendered by a browser (which wraps it in HTML) or billed as an API call; nor cookies
        # (a session's).
        Setting(
            "REP_FETCH_META_KEYS",
            ("download_slot", "bindaddress", "impersonate"),
            _META_KEYS,
            "meta keys copied from a request to the robots.txt fetch it needs, beside its proxy",
        ),
        Setting(
            "REP_CRAWL_DELAY",
            False,
            _SWITCH,
            "apply the selected group's Crawl-delay to the origin's download slot",
        ),
        # Nutch's and StormCrawler's cap (fetcher.max.crawl.delay): a Crawl-delay of an hour
        # would make a crawl wait an hour per page.
        Setting(
            "REP_CRAWL_DELAY_MAX",
            30,
            _seconds(_DAY),
            "the longest Crawl-delay applied (seconds); a longer one is clamped or skipped",
        ),
        Setting(
            "REP_CRAWL_DELAY_ABOVE_MAX",
            "clamp",
            _ABOVE_MAX,
            "a Crawl-delay above REP_CRAWL_DELAY_MAX: 'clamp' it to the max, or 'skip' the origin",
        ),
        Setting(
            "REP_PAUSE",
            True,
            _SWITCH,
            "pause an origin whose pages answer 503, 429 or several 5xx in a row (SPEC H)",
        ),
        # Small: one 503 from a healthy site costs a couple of seconds; doubling reaches a
        # minute after 5 pauses in a row.
        Setting(
            "REP_PAUSE_DELAY",
            2,
            _seconds(_DAY, zero=False),
            "first pause without Retry-After (seconds); doubles for each pause in a row",
        ),
        Setting(
            "REP_PAUSE_MAX_DELAY",
            600,
            _seconds(_DAY, zero=False),
            "cap for a pause, Retry-After included (seconds)",
        ),
        # A site still asking after a minute is rarely back within the crawl: its requests are
        # given up then (kept for the next run where the job is durable), busy crawl or idle.
        Setting(
            "REP_PAUSE_GIVE_UP_AFTER",
            60,
            _seconds(_YEAR),
            "seconds paused after which the crawl stops waiting for the origin (0: never)",
        ),
        # On: a site sees at most the concurrency its settings promise, which Scrapy >= 2.14
        # with the asyncio reactor and no download delay does not hold by itself.
        Setting(
            "REP_SLOT_CONCURRENCY",
            True,
            _SWITCH,
            "hold each download slot's concurrency where Scrapy does not (>= 2.14, no delay)",
        ),
        Setting(
            "REP_FLEET_LIMITS",
            True,
            _SWITCH,
            "with a Redis REP_STORE, hold each download slot's concurrency and delay across the "
            "fleet's processes",
        ),
        Setting(
            "REP_PARSED_CACHE_SIZE",
            4096,
            _whole(1, 10**9),
            "parsed robots.txt kept in memory per process (least recently used evicted)",
        ),
        # About 10,000 x the median robots.txt size (a few KiB) stays in tens of MiB.
        Setting(
            "REP_MEMORY_STORE_SIZE",
            10000,
            _whole(1, 10**9),
            "origins the memory:// store keeps (least recently used evicted)",
        ),
        Setting(
            "REP_STORE",
            None,
            _STORE_URL,
            "where results live; None: memory://, or sqlite:///<JOBDIR>/robotstxt.sqlite3 "
            "with JOBDIR (storage.options.store_url)",
        ),
        Setting(
            "REP_STORE_PREFIX",
            "scrapy-rep:",
            _TEXT,
            "key prefix in the store, so projects can share one Redis database or SQLite file",
        ),
        Setting(
            "REP_STORE_TIMEOUT",
            2.0,
            _seconds(_DAY, zero=False),
            "seconds one store call may take (Redis socket timeout, SQLite busy timeout)",
        ),
        Setting(
            "REP_HELD_OWNER_TTL",
            30,
            _seconds(_DAY, zero=False),
            "seconds after a fleet process's last heartbeat before a live one adopts its held "
            "requests (Redis REP_STORE only)",
        ),
        # Short, and renewed while its holder fetches: a killed holder delays the origin by
        # one TTL at most.
        Setting(
            "REP_LEASE_TTL",
            30,
            _seconds(_DAY, zero=False),
            "seconds a process's claim to fetch an origin's robots.txt lasts",
        ),
        Setting(
            "REP_LEASE_POLL_INTERVAL",
            0.5,
            _seconds(_DAY, zero=False),
            "how often (seconds) a process waiting on another's fetch looks for the result",
        ),
        Setting(
            "REP_USAGE_PURPOSES",
            (),
            _LABELS,
            "what the crawl's output is used for: usage labels (a list or comma-separated string)",
        ),
        Setting(
            "REP_USAGE_SOURCES",
            {},
            _SOURCES,
            "per-origin usage documents to add to tdmrep.json ({import path: order}; None "
            "removes one)",
        ),
        Setting(
            "REP_USAGE_STRICT",
            False,
            _SWITCH,
            "with a purpose: treat a label nothing states as refused",
        ),
        Setting(
            "REP_USAGE_ITEMS",
            "drop",
            _ITEM_MODE,
            "items of a response whose usage preferences refuse the purpose: 'drop' or 'mark'",
        ),
        Setting(
            "REP_USAGE_FIELD",
            "rep_usage_refused",
            _FIELD,
            "the item field 'mark' sets (to the reason)",
        ),
        Setting(
            "REP_PAGE_RULES",
            True,
            _SWITCH,
            "obey robots meta tags and X-Robots-Tag whenever robots.txt is obeyed",
        ),
        Setting(
            "REP_PAGE_NOINDEX", "mark", _ITEM_MODE, "items from noindex pages: 'mark' or 'drop'"
        ),
        Setting(
            "REP_PAGE_NOINDEX_FIELD",
            "rep_noindex",
            _FIELD,
            "the item field set to True on items from noindex pages",
        ),
        Setting(
            "REP_PAGE_RELNOFOLLOW",
            False,
            _SWITCH,
            "also drop requests to the page's rel=nofollow links",
        ),
        Setting(
            "REP_RECORD",
            None,
            _PATH,
            "a directory: write the compliance record there (docs/record.md); None: no record",
        ),
        Setting(
            "REP_RECORD_QUERY_KEY",
            None,
            _KEY,
            "a secret: the record keeps query strings as their HMAC-SHA256 under it; None: as "
            "they are",
        ),
    )
}


#: The most edits (a character left out, added or changed, two neighbours swapped) between an
#: unknown name and a setting for the name to be taken as a misspelling of it.
_MOST_EDITS = 3


def misspelled(name: str, most_edits: int = _MOST_EDITS) -> tuple[str, ...]:
    """The settings ``name`` (a name that is none of them) most likely misspells, case aside:
    those one edit away; else those whose words it has in another order (REP_TIMEOUT_FETCH);
    else those fewest edits away, up to ``most_edits``; else none. Several when equally near:
    REP_CACHE_MAN_LIFETIME is one edit from both REP_CACHE_MIN_LIFETIME and
    REP_CACHE_MAX_LIFETIME (the one such pair of one-edit misspellings,
    tests/test_settings_table.py)."""
    wanted = name.upper()
    if wanted in SETTINGS:
        return (wanted,)
    near = tuple(setting for setting in SETTINGS if _one_edit(wanted, setting))
    if near:
        return near
    words = sorted(wanted.split("_"))
    reordered = tuple(setting for setting in SETTINGS if sorted(setting.split("_")) == words)
    if reordered or most_edits <= 1:
        # One edit away was looked at first: the table below would find nothing more.
        return reordered
    edits = {
        setting: _edits(wanted, setting)
        for setting in SETTINGS
        if abs(len(setting) - len(wanted)) <= most_edits
    }
    fewest = min(edits.values(), default=most_edits + 1)
    if fewest > most_edits:
        return ()
    return tuple(setting for setting, count in edits.items() if count == fewest)


def _one_edit(a: str, b: str) -> bool:
    """Is ``b`` one edit from ``a`` (the common case, checked without ``_edits``'s table)?"""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    start = _common_start(a, b)
    rest_a, rest_b = a[start:], b[start:]
    end = _common_start(rest_a[::-1], rest_b[::-1])
    left_a, left_b = rest_a[: len(rest_a) - end], rest_b[: len(rest_b) - end]
    if len(left_a) <= 1 and len(left_b) <= 1:
        return True  # a character left out, added or changed
    return len(left_a) == len(left_b) == 2 and left_a == left_b[::-1]  # two swapped


def _common_start(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` begin with alike."""
    count = 0
    for char, other in zip(a, b, strict=False):
        if char != other:
            break
        count += 1
    return count


def _edits(a: str, b: str) -> int:
    """Edits from ``a`` to ``b``: characters left out, added or changed, neighbours swapped
    (the optimal string alignment distance)."""
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i, *([0] * len(b))]
        for j, other in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other))
            if i > 1 and j > 1 and char == b[j - 2] and a[i - 2] == other:
                current[j] = min(current[j], before[j - 2] + 1)
        before, previous = previous, current
    return previous[-1]

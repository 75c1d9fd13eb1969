"""The table of REP_* settings (scrapy_rep.core.settings) against README and the crawl.

README's settings tables (all under "## Settings") must give each setting of the table, in its
order, with its default;
the crawl must run with the table's defaults, so changing one there changes both (and this
fails until README follows).
"""

from __future__ import annotations

import json
import math
import re
import string
from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields, replace
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

import scrapy_rep
from scrapy_rep.core.policy import Limits
from scrapy_rep.core.settings import SETTINGS, Bounds, default, misspelled, switch
from scrapy_rep.crawl._settings import MiddlewareSettings, PageSettings
from scrapy_rep.storage.options import StoreOptions, store_url

README = Path(__file__).resolve().parent.parent / "README.md"
PACKAGE = Path(scrapy_rep.__file__).resolve().parent
#: A row of README's settings tables: | `NAME` | default | meaning |
ROW = re.compile(r"^\| `([A-Z_]+)` \| (.+?) \| ")


def readme_defaults() -> dict[str, str]:
    """The default column of the tables under README's "## Settings" (the page level's
    settings included), by setting, in README's order."""
    text = README.read_text(encoding="utf-8")
    defaults: dict[str, str] = {}
    section = text.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        row = ROW.match(line)
        if row:
            defaults[row[1]] = row[2]
    return defaults


README_DEFAULTS = readme_defaults()
README_SETTINGS = [name for name in README_DEFAULTS if name.startswith("REP_")]


def rendered(value: object) -> str:
    """A table default as README writes it: `86400`, `2.0`, `False`, `"drop"`, `[]`."""
    if isinstance(value, tuple):
        return json.dumps(list(value))
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def test_readme_lists_the_table_in_order() -> None:
    # The other rows are Scrapy's own settings, which README's table explains beside ours.
    assert [name for name in README_DEFAULTS if name not in README_SETTINGS] == [
        "ROBOTSTXT_OBEY",
        "ROBOTSTXT_PARSER",
        "ROBOTSTXT_USER_AGENT",
    ]
    assert README_SETTINGS == list(SETTINGS)


@pytest.mark.parametrize("name", [name for name in README_SETTINGS if name != "REP_STORE"])
def test_readme_default_is_the_table_default(name: str) -> None:
    assert name in SETTINGS, f"README documents {name}, which scrapy_rep.core.settings lacks"
    assert README_DEFAULTS[name] == f"`{rendered(SETTINGS[name].default)}`"


def test_readme_store_default_is_store_url() -> None:
    # REP_STORE's default depends on JOBDIR, so the table says None and store_url decides:
    # README names both of its answers (the JOBDIR placeholder resolves to itself).
    assert SETTINGS["REP_STORE"].default is None
    assert README_DEFAULTS["REP_STORE"] == (
        f"`{store_url(None, None)}`, or `{store_url(None, '/<JOBDIR>')}` with `JOBDIR`"
    )


def test_every_setting_read_is_in_the_table() -> None:
    table = PACKAGE / "core" / "settings.py"
    read = {
        name
        for path in PACKAGE.rglob("*.py")
        if path != table
        for name in re.findall(r"[\"'](REP_[A-Z0-9_]+)[\"']", path.read_text(encoding="utf-8"))
    }
    assert read == set(SETTINGS)


def test_rows_have_a_one_line_meaning() -> None:
    for name, row in SETTINGS.items():
        assert row.name == name
        assert row.doc and "\n" not in row.doc, name


@dataclass(frozen=True)
class Runtime:
    """What the crawl runs with for some settings."""

    middleware: MiddlewareSettings
    page: PageSettings
    page_rules: bool


def runtime(**values: Any) -> Runtime:
    settings = Settings({"ROBOTSTXT_OBEY": True, **values})
    return Runtime(
        MiddlewareSettings.from_settings(settings),
        PageSettings.from_settings(settings),
        PageSettings.enabled(settings),
    )


#: For every setting the crawl reads through the table: a default other than the table's,
#: and where the crawl's settings show it. REP_USER_AGENTS is read by core.tokens.
WHERE: dict[str, tuple[object, Callable[[Runtime], object]]] = {
    "REP_CACHE_LIFETIME": (1234, lambda r: r.middleware.limits.cache_lifetime),
    "REP_CACHE_MIN_LIFETIME": (120, lambda r: r.middleware.limits.cache_min_lifetime),
    "REP_CACHE_MAX_LIFETIME": (3600, lambda r: r.middleware.limits.cache_max_lifetime),
    "REP_STALE_MAX_AGE": (7, lambda r: r.middleware.limits.stale_max_age),
    "REP_UNREACHABLE_ALLOW_AFTER": (8, lambda r: r.middleware.limits.unreachable_allow_after),
    "REP_HOLD_TIMEOUT": (9, lambda r: r.middleware.hold_timeout),
    "REP_GIVE_UP_AFTER": (0, lambda r: r.middleware.limits.give_up_after),
    "REP_RETRY_DELAY": (11, lambda r: r.middleware.limits.retry_delay),
    "REP_RETRY_FAST_DELAY": (1, lambda r: r.middleware.limits.retry_fast_delay),
    "REP_RETRY_MAX_DELAY": (60, lambda r: r.middleware.limits.retry_max_delay),
    "REP_FETCH_TIMEOUT": (3, lambda r: r.middleware.fetch_timeout),
    "REP_FETCH_META_KEYS": (("download_slot",), lambda r: r.middleware.fetch_meta_keys),
    "REP_CRAWL_DELAY": (True, lambda r: r.middleware.crawl_delay),
    "REP_CRAWL_DELAY_MAX": (5, lambda r: r.middleware.crawl_delay_max),
    "REP_CRAWL_DELAY_ABOVE_MAX": ("skip", lambda r: r.middleware.crawl_delay_above_max),
    "REP_PAUSE": (False, lambda r: r.middleware.pause),
    "REP_PAUSE_DELAY": (7, lambda r: r.middleware.pause_delay),
    "REP_PAUSE_MAX_DELAY": (70, lambda r: r.middleware.pause_max_delay),
    "REP_PAUSE_GIVE_UP_AFTER": (0, lambda r: r.middleware.pause_give_up_after),
    "REP_SLOT_CONCURRENCY": (False, lambda r: r.middleware.slot_concurrency),
    "REP_FLEET_LIMITS": (False, lambda r: r.middleware.fleet_limits),
    "REP_RECORD": ("some/where", lambda r: r.middleware.record),
    "REP_RECORD_QUERY_KEY": ("a secret of 16 chars", lambda r: r.middleware.record_query_key),
    "REP_PARSED_CACHE_SIZE": (16, lambda r: r.middleware.parsed_cache_size),
    "REP_MEMORY_STORE_SIZE": (32, lambda r: r.middleware.store.memory_size),
    "REP_STORE": ("redis://localhost:6379/0", lambda r: r.middleware.store.url),
    "REP_STORE_PREFIX": ("other:", lambda r: r.middleware.store.prefix),
    "REP_STORE_TIMEOUT": (0.25, lambda r: r.middleware.store.timeout),
    "REP_HELD_OWNER_TTL": (12, lambda r: r.middleware.held_owner_ttl),
    "REP_LEASE_TTL": (13, lambda r: r.middleware.lease_ttl),
    "REP_LEASE_POLL_INTERVAL": (0.125, lambda r: r.middleware.lease_poll_interval),
    "REP_USAGE_PURPOSES": (("train-ai",), lambda r: (r.middleware.purpose, r.page.purpose)),
    "REP_USAGE_SOURCES": (
        {"scrapy_rep.core.tdmrep.TDMREP": None},
        lambda r: [document.name for document in r.middleware.usage_documents],
    ),
    "REP_USAGE_STRICT": (True, lambda r: (r.middleware.purpose, r.page.purpose)),
    "REP_USAGE_ITEMS": ("mark", lambda r: r.page.usage_items),
    "REP_USAGE_FIELD": ("refused", lambda r: r.page.usage_field),
    "REP_PAGE_RULES": (False, lambda r: r.page_rules),
    "REP_PAGE_NOINDEX": ("drop", lambda r: r.page.noindex),
    "REP_PAGE_NOINDEX_FIELD": ("noindex", lambda r: r.page.noindex_field),
    "REP_PAGE_RELNOFOLLOW": (True, lambda r: r.page.rel_nofollow),
}


def test_every_setting_has_a_runtime_case() -> None:
    assert set(WHERE) == set(SETTINGS) - {"REP_USER_AGENTS"}


@pytest.mark.parametrize("name", list(WHERE))
def test_the_crawl_runs_with_the_table_default(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    other, where = WHERE[name]
    before = where(runtime())
    monkeypatch.setitem(SETTINGS, name, replace(SETTINGS[name], default=other))
    changed = where(runtime())
    assert changed != before
    assert changed == where(runtime(**{name: other}))


@pytest.mark.parametrize(
    ("cls", "read"),
    [
        (Limits, lambda r: r.middleware.limits),
        (MiddlewareSettings, lambda r: r.middleware),
        (StoreOptions, lambda r: r.middleware.store),
        (PageSettings, lambda r: r.page),
    ],
)
def test_field_defaults_are_what_the_crawl_reads(
    cls: type[Any], read: Callable[[Runtime], object]
) -> None:
    defaults = {f.name: f.default for f in fields(cls) if f.default is not MISSING}
    assert defaults
    configured = read(runtime())
    assert defaults == {name: getattr(configured, name) for name in defaults}


def test_default_is_the_checked_table_default() -> None:
    assert default("REP_CACHE_LIFETIME") == float(SETTINGS["REP_CACHE_LIFETIME"].default)
    assert isinstance(default("REP_CACHE_LIFETIME"), float)
    assert default("REP_FETCH_META_KEYS") == SETTINGS["REP_FETCH_META_KEYS"].default


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("REP_CACHE_LIFETIME", ""),  # a number left blank, as `-s REP_CACHE_LIFETIME=` gives
        ("REP_STORE_TIMEOUT", ""),
        ("REP_PAGE_NOINDEX", ""),  # an empty item mode
        ("REP_USAGE_ITEMS", 0),
        ("REP_STORE", ""),
    ],
)
def test_a_blank_value_means_the_default(name: str, value: object) -> None:
    where = WHERE[name][1]
    assert where(runtime(**{name: value})) == where(runtime())


def test_an_empty_prefix_is_a_prefix() -> None:
    assert runtime(REP_STORE_PREFIX="").middleware.store.prefix == ""


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "REP_CACHE_LIFETIME",
            True,
            "REP_CACHE_LIFETIME must be a number of seconds from 0 to 31536000, got True",
        ),
        (
            "REP_CACHE_LIFETIME",
            "nan",
            "REP_CACHE_LIFETIME must be a number of seconds from 0 to 31536000, got 'nan'",
        ),
        (
            "REP_GIVE_UP_AFTER",
            1.5,
            "REP_GIVE_UP_AFTER must be a whole number from 0 to 1000, got 1.5",
        ),
        ("REP_MEMORY_STORE_SIZE", "2.5", "REP_MEMORY_STORE_SIZE must be a whole number from 1 to"),
        (
            "REP_STORE_TIMEOUT",
            float("inf"),
            "REP_STORE_TIMEOUT must be a number of seconds over 0, up to 86400, got inf",
        ),
        ("REP_STORE", 5, "REP_STORE must be a URL string, got 5"),
        ("REP_STORE_PREFIX", 5, "REP_STORE_PREFIX must be a string, got 5"),
        ("REP_USAGE_PURPOSES", 5, "REP_USAGE_PURPOSES must be a list of labels, got 5"),
        ("REP_USAGE_PURPOSES", ["train-ai", 1], "REP_USAGE_PURPOSES must be a list of labels"),
        ("REP_USAGE_PURPOSES", "train-genai", "REP_USAGE_PURPOSES: unknown usage label(s)"),
        ("REP_USAGE_STRICT", "maybe", "REP_USAGE_STRICT must be True or False, got 'maybe'"),
        ("REP_USAGE_FIELD", "", "REP_USAGE_FIELD must be a field name, got ''"),
        ("REP_USAGE_ITEMS", "keep", "REP_USAGE_ITEMS must be 'mark' or 'drop', got 'keep'"),
        ("REP_PAGE_RELNOFOLLOW", [], "REP_PAGE_RELNOFOLLOW must be True or False, got []"),
    ],
)
def test_a_bad_value_is_refused_naming_the_setting(name: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        runtime(**{name: value})


@pytest.mark.parametrize("value", [0, 1, "0", "1", "True", "true", "False", "false", True, 2.5])
def test_switches_read_as_scrapy_reads_booleans(value: object) -> None:
    assert switch("X", value) is Settings({"X": value}).getbool("X")


#: Every number of the table and its range, so a new numeric setting is covered below.
NUMBERS = {name: row.check.bounds for name, row in SETTINGS.items() if row.check.bounds}


def test_every_number_has_a_range() -> None:
    numeric = {
        name
        for name, row in SETTINGS.items()
        if isinstance(row.default, int | float) and not isinstance(row.default, bool)
    }
    assert numeric == set(NUMBERS)


def outside(bounds: Bounds) -> list[object]:
    """Values ``bounds`` refuse: infinities and NaN (as numbers and as `-s` gives them), a
    negative, a value past either end, a fraction where a whole number is due."""
    values: list[object] = [math.inf, "inf", -math.inf, math.nan, "nan", "1e308", -1]
    values.append(bounds.high + 1)
    if bounds.above_low or bounds.low > 0:
        values.append(bounds.low if bounds.above_low else bounds.low - 1)
    if bounds.whole:
        values.append(bounds.low + 0.5)
    return values


@pytest.mark.parametrize(
    ("name", "value"),
    [(name, value) for name, bounds in NUMBERS.items() for value in outside(bounds)],
)
def test_a_number_outside_its_range_is_refused(name: str, value: object) -> None:
    with pytest.raises(ValueError) as refused:
        runtime(**{name: value})
    assert str(refused.value) == f"{name} must be {NUMBERS[name]}, got {value!r}"


@pytest.mark.parametrize("name", list(NUMBERS))
def test_a_number_at_either_end_of_its_range_is_accepted(name: str) -> None:
    # Through the row alone: an end may be refused beside the defaults of the setting's
    # sibling (REP_RETRY_DELAY = 86400 above REP_RETRY_MAX_DELAY = 600), tested below.
    bounds, row = NUMBERS[name], SETTINGS[name]
    assert row.value(bounds.high) == bounds.high
    assert row.value(str(bounds.high)) == bounds.high
    if not bounds.above_low:
        assert row.value(bounds.low) == bounds.low


def test_the_range_is_said_in_words() -> None:
    assert str(NUMBERS["REP_HOLD_TIMEOUT"]) == "a number of seconds from 0 to 31536000"
    assert str(NUMBERS["REP_PAUSE_DELAY"]) == "a number of seconds over 0, up to 86400"
    assert str(NUMBERS["REP_PARSED_CACHE_SIZE"]) == "a whole number from 1 to 1000000000"


@pytest.mark.parametrize(
    ("lower", "upper"),
    [
        ("REP_CACHE_MIN_LIFETIME", "REP_CACHE_MAX_LIFETIME"),
        ("REP_RETRY_DELAY", "REP_RETRY_MAX_DELAY"),
        ("REP_RETRY_FAST_DELAY", "REP_RETRY_MAX_DELAY"),
        ("REP_PAUSE_DELAY", "REP_PAUSE_MAX_DELAY"),
    ],
)
def test_a_minimum_above_its_maximum_is_refused_naming_both(lower: str, upper: str) -> None:
    with pytest.raises(ValueError) as refused:
        runtime(**{lower: 100, upper: 50})
    assert str(refused.value) == f"{lower} (100) must not exceed {upper} (50)"
    # A minimum set alone meets its maximum's default.
    above = default(upper) + 1
    with pytest.raises(ValueError, match=re.escape(f"{lower} ({above:.15g}) must not exceed")):
        runtime(**{lower: above})
    assert runtime(**{lower: 100, upper: 100}).middleware


# -- misspelled names (the startup WARNING "Unknown setting …: did you mean …?") -----------

#: What a misspelling may put in a name.
_TYPED = string.ascii_uppercase + string.digits + "_-"


def one_edit_misspellings(name: str) -> dict[str, str]:
    """Every name one edit from ``name`` that is no setting: name -> the edit that made it (a
    character left out, added, changed, or two neighbours swapped)."""
    found: dict[str, str] = {}
    for i in range(len(name) + 1):
        for char in _TYPED:
            found.setdefault(name[:i] + char + name[i:], "added")
    for i in range(len(name)):
        found.setdefault(name[:i] + name[i + 1 :], "left out")
        for char in _TYPED:
            found.setdefault(name[:i] + char + name[i + 1 :], "changed")
        if i + 1 < len(name):
            found.setdefault(name[:i] + name[i + 1] + name[i] + name[i + 2 :], "swapped")
    return {typo: edit for typo, edit in found.items() if typo not in SETTINGS}


#: The one-edit misspellings that are one edit from two settings (the other misspellings of
#: every setting are one edit from it alone): the warning names both.
AMBIGUOUS = {
    typo: ("REP_CACHE_MIN_LIFETIME", "REP_CACHE_MAX_LIFETIME")
    for typo in ("REP_CACHE_MAN_LIFETIME", "REP_CACHE_MIX_LIFETIME")
}


@pytest.mark.parametrize("name", list(SETTINGS))
def test_every_one_edit_misspelling_names_its_setting(name: str) -> None:
    typos = one_edit_misspellings(name)
    assert {"added", "left out", "changed", "swapped"} == set(typos.values())
    wrong = {
        typo: misspelled(typo) for typo in typos if misspelled(typo) != AMBIGUOUS.get(typo, (name,))
    }
    assert wrong == {}
    assert misspelled(name.lower()) == (name,)


def test_the_ambiguous_misspellings_are_all_listed() -> None:
    ambiguous = {
        typo
        for name in SETTINGS
        for typo in one_edit_misspellings(name)
        if len(misspelled(typo)) > 1
    }
    assert ambiguous == set(AMBIGUOUS)


@pytest.mark.parametrize(
    ("name", "meant"),
    [
        ("REP_TIMEOUT_FETCH", ("REP_FETCH_TIMEOUT",)),  # words in another order
        ("REP_DELAY_PAUSE_MAX", ("REP_PAUSE_MAX_DELAY",)),
        ("REP_FECH_TIMOUT", ("REP_FETCH_TIMEOUT",)),  # two edits
        ("REP_STOR_TIMOT", ("REP_STORE_TIMEOUT",)),  # three
        ("REP_PAUSE_DL", ("REP_PAUSE", "REP_PAUSE_DELAY")),  # three from each
        ("REP_HOLD", ()),  # nothing near
        ("REP_FOO", ()),
    ],
)
def test_a_name_further_off_names_the_nearest_setting_or_none(
    name: str, meant: tuple[str, ...]
) -> None:
    assert misspelled(name) == meant


def test_one_edit_at_most_for_a_name_without_the_prefix() -> None:
    # Scrapy's own settings and other projects' are only taken for a misspelling this close.
    assert misspelled("RPE_PAUSE", most_edits=1) == ("REP_PAUSE",)
    assert misspelled("REP-PAUSE-DELAY", most_edits=1) == ()
    assert misspelled("REP-PAUSE_DELAY", most_edits=1) == ("REP_PAUSE_DELAY",)

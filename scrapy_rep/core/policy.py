"""Pure decisions about robots.txt fetches (SPEC B2, B3): no I/O, no Scrapy, no clock.

- ``classify(status)``: what an HTTP status of /robots.txt means.
- ``lifetime(cache_control, limits)``: how long a good result is reused.
- ``parse_retry_after(values, now)``, ``honoured``: what a ``Retry-After`` asks, and what of it
  is obeyed.
- ``retry_delay(failures, status, retry_after, limits)``: when to try again.
- ``record(entry, fetch, now, limits)``: the origin's next ``Entry`` after a fetch.
- ``serving(entry, now, limits)``: what the origin's requests get right now.
- ``given_up(entry, now, limits)``: may a crawl stop waiting for it?
- ``give_up_at(entry, limits)``: when, if robots.txt keeps failing, a crawl stops waiting.

An ``Entry`` is what the store keeps per origin (``StoredRobots.meta``, see
``Entry.to_meta`` for the JSON layout; the robots.txt body of the good copy is
``StoredRobots.body``).
"""

from __future__ import annotations

import datetime
import email.utils
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from scrapy_rep.core.settings import default

__all__ = [
    "FORMAT_VERSION",
    "MAX_REDIRECTS",
    "SLOW_DOWN",
    "Entry",
    "Fetch",
    "Good",
    "Limits",
    "Serving",
    "classify",
    "fast_retry",
    "give_up_at",
    "given_up",
    "honoured",
    "lifetime",
    "parse_retry_after",
    "record",
    "retry_delay",
    "serving",
]

#: SPEC B2: at most 5 redirects are followed; the 6th means "no robots.txt".
MAX_REDIRECTS = 5

#: Version of what a store keeps per origin: the ``Entry.to_meta`` layout and the body beside
#: it. Persistent stores stamp each record with it and treat a record of another version as
#: missing (never trusted): bump it when that layout changes.
FORMAT_VERSION = 1

Outcome = Literal["ok", "no_robots", "unreachable"]
Status = Literal["ok", "no_robots", "unreachable", "redirect"]
ServingKind = Literal["rules", "allow", "hold"]


@dataclass(frozen=True)
class Limits:
    """The knobs of the decisions below (the REP_* settings, defaults from ``core.settings``),
    in seconds."""

    cache_lifetime: float = default("REP_CACHE_LIFETIME")
    cache_min_lifetime: float = default("REP_CACHE_MIN_LIFETIME")
    cache_max_lifetime: float = default("REP_CACHE_MAX_LIFETIME")
    stale_max_age: float = default("REP_STALE_MAX_AGE")
    unreachable_allow_after: float = default("REP_UNREACHABLE_ALLOW_AFTER")
    retry_delay: float = default("REP_RETRY_DELAY")
    retry_fast_delay: float = default("REP_RETRY_FAST_DELAY")
    retry_max_delay: float = default("REP_RETRY_MAX_DELAY")
    #: Server errors in a row after which the crawl stops waiting (0: never).
    give_up_after: int = default("REP_GIVE_UP_AFTER")


#: The statuses by which a server says "come back later" (SPEC B2: robots.txt's first retry
#: comes sooner; SPEC H1: a page's pauses its site).
SLOW_DOWN = frozenset((429, 503))


def fast_retry(status: int | None) -> bool:
    """Does a robots.txt answer with ``status`` start its retries at REP_RETRY_FAST_DELAY?"""
    return status in SLOW_DOWN


def classify(status: int) -> Status:
    """SPEC B2 for an HTTP status (FTP "file not found" arrives as 404)."""
    if 200 <= status < 300:
        return "ok"
    if 300 <= status < 400:
        return "redirect"
    if status == 429 or 500 <= status < 600:
        return "unreachable"
    if 400 <= status < 500:
        return "no_robots"
    # 1xx as a final answer or a status outside HTTP: a broken response.
    return "unreachable"


#: RFC 9111 5.2.2.1: max-age's delta-seconds are ASCII digits (``\d`` alone takes "٣" too).
_MAX_AGE = re.compile(r"(?:^|[,\s])max-age\s*=\s*\"?(\d+)", re.IGNORECASE | re.ASCII)


def lifetime(cache_control: str | None, limits: Limits) -> float:
    """How long a good result is reused: ``max-age`` if given, within the bounds."""
    seconds = limits.cache_lifetime
    if cache_control:
        found = _MAX_AGE.search(cache_control)
        if found:
            seconds = float(found.group(1))
    return min(max(seconds, limits.cache_min_lifetime), limits.cache_max_lifetime)


#: RFC 9110 10.2.3: delay-seconds are ASCII digits (``str.isdigit`` also takes "²" and "٣").
_DELAY_SECONDS = re.compile(r"[0-9]+", re.ASCII)
#: Digits beyond which delay-seconds is longer than any cap (and ``int`` would refuse it).
_MAX_DIGITS = 12


def parse_retry_after(values: Iterable[str], now: float) -> float | None:
    """Seconds the ``Retry-After`` header values ask to wait, or None when none is valid.

    RFC 9110 10.2.3: delay-seconds (ASCII digits) or an HTTP-date (GMT; one in the past asks
    for 0 s). Anything else is ignored, as if absent. Never raises: the values are a site's.
    Of several values (the header sent twice) the longest wait wins: the site's most cautious
    statement.
    """
    longest: float | None = None
    for value in values:
        seconds = _retry_after_value(value.strip(" \t"), now)
        if seconds is not None and (longest is None or seconds > longest):
            longest = seconds
    return longest


def _retry_after_value(value: str, now: float) -> float | None:
    if _DELAY_SECONDS.fullmatch(value):
        return math.inf if len(value) > _MAX_DIGITS else float(int(value))
    if not value.isascii() or len(value) > 64:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
        if when.tzinfo is None:  # asctime has no zone: HTTP-dates are GMT
            when = when.replace(tzinfo=datetime.timezone.utc)
        return max(0.0, when.timestamp() - now)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def honoured(retry_after: float | None, floor: float, cap: float) -> float | None:
    """The wait ``Retry-After`` sets, or None when it sets none: absent, or shorter than
    ``floor`` (a site asking for 0 s, or a date in the past, is waited for as if it had said
    nothing, with the doubling backoff: a site cannot make the crawler come back faster than
    its own first delay). Capped by ``cap``."""
    if retry_after is None or retry_after < floor:
        return None
    return min(retry_after, cap)


def retry_delay(
    failures: int, status: int | None, retry_after: float | None, limits: Limits
) -> float:
    """Seconds until robots.txt is fetched again after ``failures`` failures in a row.

    ``Retry-After`` wins when present and at least the first delay (``honoured``); otherwise
    the delay doubles per failure, starting lower for 429 and 503 (the server says "come back
    soon"). Both are capped by ``retry_max_delay``.
    """
    base = limits.retry_fast_delay if fast_retry(status) else limits.retry_delay
    asked = honoured(retry_after, base, limits.retry_max_delay)
    if asked is not None:
        return asked
    exponent = min(max(failures - 1, 0), 32)
    return float(min(base * (2**exponent), limits.retry_max_delay))


@dataclass(frozen=True)
class Fetch:
    """The result of one robots.txt fetch, redirects already followed."""

    outcome: Outcome
    status: int | None = None
    redirects: tuple[str, ...] = ()
    truncated: bool = False
    error: str | None = None
    cache_control: str | None = None
    retry_after: float | None = None
    #: The compliance record's id for the answer (None: no record).
    record: str | None = None


@dataclass(frozen=True)
class Good:
    """The last good copy (2xx rules or 4xx "no robots.txt")."""

    outcome: Literal["ok", "no_robots"]
    fetched_at: float
    expires_at: float
    status: int | None
    redirects: tuple[str, ...] = ()
    truncated: bool = False
    #: The compliance record's id for the answer it was read from (None: not recorded).
    record: str | None = None


@dataclass(frozen=True)
class Entry:
    """One origin's robots.txt state: the last attempt and the last good copy."""

    fetched_at: float
    outcome: Outcome
    status: int | None = None
    error: str | None = None
    redirects: tuple[str, ...] = ()
    truncated: bool = False
    good: Good | None = None
    failures: int = 0
    unreachable_since: float | None = None
    retry_at: float | None = None
    #: The compliance record's id for the last attempt's answer (None: not recorded).
    record: str | None = None

    def to_meta(self) -> dict[str, Any]:
        """The JSON-able layout kept in ``StoredRobots.meta`` (version: ``FORMAT_VERSION``).

        Keys: ``fetched_at`` (epoch of the last attempt),
        ``outcome`` ("ok" | "no_robots" | "unreachable", of the last attempt),
        ``status`` (int | None), ``error`` (str | None), ``redirects`` (URLs
        followed), ``truncated`` (bool), ``failures`` (server errors in a row),
        ``unreachable_since`` / ``retry_at`` (epoch | None), ``record`` (the compliance
        record's id for the last attempt's answer, or None), and ``good``: None or
        {``outcome``, ``fetched_at``, ``expires_at``, ``status``, ``redirects``,
        ``truncated``, ``record``} describing the copy whose body is ``StoredRobots.body``.
        """
        good = None
        if self.good is not None:
            good = {
                "outcome": self.good.outcome,
                "fetched_at": self.good.fetched_at,
                "expires_at": self.good.expires_at,
                "status": self.good.status,
                "redirects": list(self.good.redirects),
                "truncated": self.good.truncated,
                "record": self.good.record,
            }
        return {
            "fetched_at": self.fetched_at,
            "outcome": self.outcome,
            "status": self.status,
            "error": self.error,
            "redirects": list(self.redirects),
            "truncated": self.truncated,
            "failures": self.failures,
            "unreachable_since": self.unreachable_since,
            "retry_at": self.retry_at,
            "record": self.record,
            "good": good,
        }

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> Entry | None:
        """The entry ``to_meta`` wrote, or None for anything else (never trusted)."""
        try:
            outcome = meta["outcome"]
            if outcome not in ("ok", "no_robots", "unreachable"):
                return None
            good = None
            raw = meta.get("good")
            if raw is not None:
                if raw["outcome"] not in ("ok", "no_robots"):
                    return None
                good = Good(
                    outcome=raw["outcome"],
                    fetched_at=float(raw["fetched_at"]),
                    expires_at=float(raw["expires_at"]),
                    status=_opt_int(raw.get("status")),
                    redirects=tuple(str(u) for u in raw.get("redirects", ())),
                    truncated=bool(raw.get("truncated", False)),
                    record=_opt_str(raw.get("record")),
                )
            return cls(
                fetched_at=float(meta["fetched_at"]),
                outcome=outcome,
                status=_opt_int(meta.get("status")),
                error=None if meta.get("error") is None else str(meta["error"]),
                redirects=tuple(str(u) for u in meta.get("redirects", ())),
                truncated=bool(meta.get("truncated", False)),
                good=good,
                failures=int(meta.get("failures", 0)),
                unreachable_since=_opt_float(meta.get("unreachable_since")),
                retry_at=_opt_float(meta.get("retry_at")),
                record=_opt_str(meta.get("record")),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def record(entry: Entry | None, fetch: Fetch, now: float, limits: Limits) -> Entry:
    """The origin's entry after ``fetch`` completed at ``now``."""
    if fetch.outcome != "unreachable":
        good = Good(
            outcome=fetch.outcome,
            fetched_at=now,
            expires_at=now + lifetime(fetch.cache_control, limits),
            status=fetch.status,
            redirects=fetch.redirects,
            truncated=fetch.truncated,
            record=fetch.record,
        )
        return Entry(
            fetched_at=now,
            outcome=fetch.outcome,
            status=fetch.status,
            error=fetch.error,
            redirects=fetch.redirects,
            truncated=fetch.truncated,
            good=good,
            record=fetch.record,
        )
    failures = (entry.failures if entry is not None else 0) + 1
    since = entry.unreachable_since if entry is not None else None
    delay = retry_delay(failures, fetch.status, fetch.retry_after, limits)
    return Entry(
        fetched_at=now,
        outcome="unreachable",
        status=fetch.status,
        error=fetch.error,
        redirects=fetch.redirects,
        truncated=fetch.truncated,
        good=entry.good if entry is not None else None,
        failures=failures,
        unreachable_since=now if since is None else since,
        retry_at=now + delay,
        record=fetch.record,
    )


@dataclass(frozen=True)
class Serving:
    """What an origin's requests get at some moment, and how long that holds.

    ``kind``: "rules" (match the good copy's body), "allow" (no robots.txt, or
    unreachable for longer than ``unreachable_allow_after``) or "hold" (the origin
    is disallowed for now: keep its requests until robots.txt can be fetched).
    ``outcome``: the report's word for it ("ok", "no_robots", "unreachable",
    "allow_all"). ``refresh_at``: from then on, a request triggers a fetch (the
    answer keeps serving meanwhile). ``valid_until``: after it, ask ``serving``
    again (the answer itself changes).
    """

    kind: ServingKind
    outcome: str
    refresh_at: float
    valid_until: float
    stale: bool = False


def serving(entry: Entry, now: float, limits: Limits) -> Serving:
    """SPEC B2/B3: what ``entry`` means for requests at ``now``."""
    good = entry.good
    if good is not None:
        usable_until = max(good.expires_at, good.fetched_at + limits.stale_max_age)
        if now < usable_until:
            failing = entry.outcome == "unreachable"
            refresh_at = (
                entry.retry_at if failing and entry.retry_at is not None else good.expires_at
            )
            return Serving(
                kind="rules" if good.outcome == "ok" else "allow",
                outcome=good.outcome,
                refresh_at=refresh_at,
                valid_until=usable_until,
                stale=failing or now >= good.expires_at,
            )
    if entry.outcome != "unreachable":
        # A good copy too old to use and no fetch since (a long-lived store):
        # nothing is known until robots.txt is fetched again.
        return Serving("hold", "expired", refresh_at=0.0, valid_until=math.inf)
    retry_at = entry.retry_at if entry.retry_at is not None else now
    since = entry.unreachable_since if entry.unreachable_since is not None else entry.fetched_at
    allow_from = since + limits.unreachable_allow_after
    if now >= allow_from:
        return Serving("allow", "allow_all", refresh_at=retry_at, valid_until=math.inf)
    return Serving("hold", "unreachable", refresh_at=retry_at, valid_until=allow_from)


def given_up(entry: Entry | None, now: float, limits: Limits) -> bool:
    """May a crawl stop waiting for this origin (drop, or keep for its next run, the requests
    waiting for it), whatever else it is doing?

    SPEC B2 keeps the origin disallowed while its robots.txt fails, and that stays true: its
    requests are never downloaded. What this adds is when a crawl stops *waiting*: after
    ``give_up_after`` server errors in a row with no good copy to serve, rather than at
    REP_HOLD_TIMEOUT. The stored entry is not changed, so a later crawl retries and the
    30-day clock runs on.
    """
    if limits.give_up_after <= 0 or entry is None or entry.outcome != "unreachable":
        return False
    return entry.failures >= limits.give_up_after and serving(entry, now, limits).kind == "hold"


def give_up_at(entry: Entry, limits: Limits) -> float | None:
    """When a crawl waiting for this origin stops waiting (``given_up``) if every attempt from
    now on fails as the last one did (same status, no Retry-After), attempts taking no time: the
    epoch of its ``give_up_after``-th failure in a row (the last attempt's when that many have
    failed already). None when it never does: ``give_up_after`` is 0, or robots.txt is not
    failing."""
    if limits.give_up_after <= 0 or entry.outcome != "unreachable":
        return None
    if entry.failures >= limits.give_up_after:
        return entry.fetched_at
    at = entry.retry_at if entry.retry_at is not None else entry.fetched_at
    for failures in range(entry.failures, limits.give_up_after - 1):
        at += retry_delay(failures + 1, entry.status, None, limits)
    return at

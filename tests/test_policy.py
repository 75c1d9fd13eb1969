"""SPEC B2/B3 decisions (pure): statuses, lifetimes, backoff, stale copies."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from scrapy_rep.core.policy import (
    Entry,
    Fetch,
    Good,
    Limits,
    classify,
    given_up,
    lifetime,
    parse_retry_after,
    record,
    retry_delay,
    serving,
)

LIMITS = Limits()
DAY = 86400.0


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (200, "ok"),
        (204, "ok"),
        (299, "ok"),
        (301, "redirect"),
        (308, "redirect"),
        (400, "no_robots"),
        (401, "no_robots"),
        (403, "no_robots"),
        (404, "no_robots"),
        (410, "no_robots"),
        (429, "unreachable"),
        (500, "unreachable"),
        (503, "unreachable"),
        (599, "unreachable"),
        (100, "unreachable"),
        (600, "unreachable"),
    ],
)
def test_classify(status: int, kind: str) -> None:
    assert classify(status) == kind


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (None, DAY),
        ("", DAY),
        ("max-age=3600", 3600),
        ("public, max-age=172800", 2 * DAY),
        ('max-age="7200"', 7200),
        ("MAX-AGE=120", 120),
        ("s-maxage=5", DAY),  # only max-age counts
        ("max-age=1", 60),  # raised to the minimum
        ("max-age=99999999", 7 * DAY),  # capped at the maximum
        ("no-cache", DAY),
    ],
)
def test_lifetime(header: str | None, seconds: float) -> None:
    assert lifetime(header, LIMITS) == seconds


def test_parse_retry_after() -> None:
    assert parse_retry_after(["120"], 0.0) == 120
    assert parse_retry_after([" 7\t"], 0.0) == 7
    assert parse_retry_after([], 0.0) is None
    assert parse_retry_after(["soon"], 0.0) is None
    now = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
    assert parse_retry_after(["Tue, 14 Nov 2023 22:14:20 GMT"], now) == pytest.approx(60)
    assert parse_retry_after(["Tue, 14 Nov 2023 22:00:00 GMT"], now) == 0.0
    # RFC 9110's obsolete forms are HTTP-dates too (asctime has no zone: GMT).
    assert parse_retry_after(["Tuesday, 14-Nov-23 22:14:20 GMT"], now) == pytest.approx(60)
    assert parse_retry_after(["Tue Nov 14 22:14:20 2023"], now) == pytest.approx(60)


@pytest.mark.parametrize(
    "value",
    ["\u00b2", "\u0663", "\uff11\uff12", "1.5", "-3", "+3", "3s", "0x10", "1e3", "", " ", "1 2"],
)
def test_retry_after_is_ascii_digits_or_a_date_anything_else_is_absent(value: str) -> None:
    # RFC 9110 10.2.3: delay-seconds = 1*DIGIT (ASCII); str.isdigit() also takes "²" and "٣".
    assert parse_retry_after([value], 0.0) is None


def test_two_retry_after_values_the_longest_wait_wins() -> None:
    assert parse_retry_after(["1", "600"], 0.0) == 600
    assert parse_retry_after(["600", "1"], 0.0) == 600
    assert parse_retry_after(["soon", "30"], 0.0) == 30


def test_huge_retry_after_values_are_long_waits_not_errors() -> None:
    assert parse_retry_after(["9" * 12_000], 0.0) == math.inf
    assert parse_retry_after(["99999999"], 0.0) == 99_999_999
    assert parse_retry_after(["Fri, 31 Dec 99999 23:59:59 GMT"], 0.0) is None  # no such date
    assert retry_delay(1, 503, math.inf, LIMITS) == LIMITS.retry_max_delay


def test_retry_delay_doubles_and_is_capped() -> None:
    delays = [retry_delay(n, 500, None, LIMITS) for n in range(1, 8)]
    assert delays == [30, 60, 120, 240, 480, 600, 600]


def test_429_and_503_retry_sooner() -> None:
    assert retry_delay(1, 503, None, LIMITS) == 5
    assert retry_delay(1, 429, None, LIMITS) == 5
    assert retry_delay(2, 429, None, LIMITS) == 10
    assert retry_delay(1, None, None, LIMITS) == 30  # network error


def test_retry_after_wins_from_the_first_delay_up_to_the_cap() -> None:
    assert retry_delay(1, 429, 7.0, LIMITS) == 7
    assert retry_delay(1, 503, 10_000.0, LIMITS) == 600


def test_retry_after_shorter_than_the_first_delay_backs_off_as_if_absent() -> None:
    # A site answering "Retry-After: 0" (or a date in the past) again and again must not make
    # the crawler hammer it: the doubling backoff applies, from the first delay.
    for failures in range(1, 8):
        expected = retry_delay(failures, 503, None, LIMITS)
        assert retry_delay(failures, 503, 0.0, LIMITS) == expected
        assert retry_delay(failures, 503, 4.9, LIMITS) == expected
    assert retry_delay(1, 500, 10.0, LIMITS) == 30  # below REP_RETRY_DELAY for a 500


def ok(now: float, redirects: tuple[str, ...] = (), truncated: bool = False) -> Entry:
    return record(None, Fetch("ok", 200, redirects, truncated), now, LIMITS)


def test_fresh_copy_serves_until_it_expires() -> None:
    entry = ok(1000.0)
    s = serving(entry, 1000.0 + DAY - 1, LIMITS)
    assert (s.kind, s.outcome, s.stale) == ("rules", "ok", False)
    assert s.refresh_at == 1000.0 + DAY


def test_expired_copy_keeps_serving_while_refreshed() -> None:
    entry = ok(0.0)
    s = serving(entry, DAY + 5, LIMITS)
    assert s.kind == "rules"
    assert s.stale
    assert s.refresh_at == DAY  # due: the next request starts a refresh


def test_no_robots_allows() -> None:
    entry = record(None, Fetch("no_robots", 404), 0.0, LIMITS)
    s = serving(entry, 1.0, LIMITS)
    assert (s.kind, s.outcome) == ("allow", "no_robots")
    assert entry.good is not None and entry.good.status == 404


def test_first_fetch_failing_holds_then_allows_after_30_days() -> None:
    entry = record(None, Fetch("unreachable", 500, error="HTTP 500"), 0.0, LIMITS)
    assert entry.failures == 1
    assert entry.unreachable_since == 0.0
    assert entry.retry_at == 30.0
    s = serving(entry, 10.0, LIMITS)
    assert (s.kind, s.outcome) == ("hold", "unreachable")
    assert s.refresh_at == 30.0
    assert s.valid_until == 30 * DAY
    later = record(entry, Fetch("unreachable", 500), 29 * DAY, LIMITS)
    assert later.unreachable_since == 0.0
    assert later.failures == 2
    assert serving(later, 30 * DAY, LIMITS).outcome == "allow_all"
    assert serving(later, 30 * DAY, LIMITS).kind == "allow"


def test_server_error_keeps_the_good_copy_up_to_30_days() -> None:
    good = ok(0.0)
    failing = record(good, Fetch("unreachable", 503), DAY + 1, LIMITS)
    assert failing.good == good.good
    s = serving(failing, DAY + 2, LIMITS)
    assert (s.kind, s.outcome, s.stale) == ("rules", "ok", True)
    assert s.refresh_at == failing.retry_at == DAY + 1 + 5
    assert s.valid_until == 30 * DAY
    # Past 30 days old, the copy is not used any more: the origin is disallowed.
    too_old = record(failing, Fetch("unreachable", 503), 30 * DAY + 10, LIMITS)
    assert serving(too_old, 30 * DAY + 11, LIMITS).kind == "hold"


def test_recovery_resets_failures() -> None:
    failing = record(None, Fetch("unreachable", 500), 0.0, LIMITS)
    recovered = record(failing, Fetch("ok", 200), 100.0, LIMITS)
    assert recovered.failures == 0
    assert recovered.unreachable_since is None
    assert serving(recovered, 101.0, LIMITS).kind == "rules"


def test_copy_older_than_stale_age_without_failure_needs_a_fetch() -> None:
    entry = ok(0.0)
    s = serving(entry, 31 * DAY, LIMITS)
    assert (s.kind, s.outcome) == ("hold", "expired")
    assert s.refresh_at == 0.0
    assert math.isinf(s.valid_until)


def test_long_max_age_beyond_stale_age() -> None:
    limits = Limits(cache_max_lifetime=60 * DAY)
    entry = record(None, Fetch("ok", 200, cache_control="max-age=5184000"), 0.0, limits)
    assert serving(entry, 45 * DAY, limits).kind == "rules"


def test_meta_round_trip() -> None:
    entry = record(
        ok(0.0, redirects=("http://b/robots.txt",), truncated=True),
        Fetch("unreachable", None, error="TimeoutError: x"),
        DAY + 1,
        LIMITS,
    )
    meta = entry.to_meta()
    assert Entry.from_meta(json.loads(json.dumps(meta))) == entry
    # Records written before carry a ``v`` key in their meta too: read alike.
    assert Entry.from_meta({**meta, "v": 1}) == entry


@pytest.mark.parametrize(
    "meta",
    [
        {},
        {"v": 1, "fetched_at": 0, "outcome": "maybe"},
        {"v": 1, "fetched_at": "x", "outcome": "ok"},
        {"v": 1, "fetched_at": 0, "outcome": "ok", "good": {"outcome": "bad"}},
        {"v": 1, "fetched_at": 0, "outcome": "ok", "good": {"outcome": "ok"}},
    ],
)
def test_unreadable_meta_is_ignored(meta: dict[str, object]) -> None:
    assert Entry.from_meta(meta) is None


def test_given_up_after_the_failures_only_while_holding() -> None:
    failing = Entry(fetched_at=100.0, outcome="unreachable", failures=3, unreachable_since=0.0)
    assert given_up(failing, 100.0, LIMITS)
    assert not given_up(replace(failing, failures=2), 100.0, LIMITS)
    assert not given_up(failing, 100.0, replace(LIMITS, give_up_after=0))
    # Unreachable past REP_UNREACHABLE_ALLOW_AFTER serves "allow": nothing is held.
    assert not given_up(failing, 31 * 86400.0, LIMITS)
    good = Good("ok", fetched_at=0.0, expires_at=86400.0, status=200)
    assert not given_up(replace(failing, good=good), 100.0, LIMITS)
    assert not given_up(None, 100.0, LIMITS)

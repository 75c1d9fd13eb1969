"""Retry-After is a site's to write: parsing it never raises, and what is obeyed of it is a wait
within [floor, cap] or nothing (then the doubling backoff applies)."""

from __future__ import annotations

import email.utils
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rep.core.pause import pause_seconds
from scrapy_rep.core.policy import Limits, honoured, parse_retry_after, retry_delay

NOW = 1_700_000_000.0
FLOOR, CAP = 2.0, 600.0

#: Every character Unicode calls a decimal digit, in any script (U+0663, U+FF13, ...), and the
#: Latin-1 superscripts str.isdigit() also takes ("²").
_DIGIT = st.characters(categories=["Nd"]) | st.sampled_from("\u00b2\u00b3\u00b9")


def _dates() -> st.SearchStrategy[str]:
    """HTTP-dates in every form RFC 9110 names (and a few it does not), any year."""
    seconds = st.floats(min_value=-6e10, max_value=2.5e11)  # years 1 to 9999
    imf = seconds.map(lambda t: email.utils.formatdate(t, usegmt=True))
    local = seconds.map(lambda t: email.utils.formatdate(t, localtime=False))
    raw = st.builds(
        "{} {:02d} {} {} {:02d}:{:02d}:{:02d} {}".format,
        st.sampled_from(["Mon,", "Sunday,", "", "Xyz,"]),
        st.integers(-5, 99),
        st.sampled_from(["Jan", "Nov", "Foo"]),
        st.integers(-1, 10**6),
        st.integers(0, 99),
        st.integers(0, 99),
        st.integers(0, 99),
        st.sampled_from(["GMT", "UTC", "+0000", "-2359", "EST", ""]),
    )
    return imf | local | raw


_VALUES = (
    st.binary(max_size=80).map(lambda raw: raw.decode("latin-1"))
    | st.text(_DIGIT, min_size=1, max_size=20)
    | st.integers(min_value=0, max_value=10**40).map(str)
    | st.integers(min_value=1, max_value=13_000).map(lambda n: "9" * n)
    | _dates()
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_VALUES, max_size=3), st.integers(min_value=1, max_value=40))
def test_any_retry_after_gives_nothing_or_a_wait_within_floor_and_cap(
    values: list[str], failures: int
) -> None:
    asked = parse_retry_after(values, NOW)
    assert asked is None or asked >= 0
    obeyed = honoured(asked, FLOOR, CAP)
    assert obeyed is None or FLOOR <= obeyed <= CAP
    assert FLOOR <= pause_seconds(failures, asked, FLOOR, CAP) <= CAP
    limits = Limits()
    for status in (429, 500, 503, None):
        delay = retry_delay(failures, status, asked, limits)
        assert limits.retry_fast_delay <= delay <= limits.retry_max_delay
        assert not math.isnan(delay)


@given(st.text(_DIGIT, min_size=1, max_size=5))
def test_digits_of_other_scripts_are_not_delay_seconds(value: str) -> None:
    if not value.isascii():
        assert parse_retry_after([value], NOW) is None

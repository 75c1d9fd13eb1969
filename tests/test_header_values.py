"""Every header value scrapy-rep reads from a site is the site's to write: reading it never
raises, whatever the bytes (each decoded as Latin-1, as the crawl decodes them)."""

from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rep.core.decode import split_codings
from scrapy_rep.core.pagerules import page_rules
from scrapy_rep.core.policy import Limits, lifetime, parse_retry_after
from scrapy_rep.core.proxy import proxy_failure
from scrapy_rep.core.usage import parse_content_signal, parse_content_usage

_RAW = st.binary(max_size=200)
_LINES = st.lists(_RAW, max_size=4)
_NOW = datetime(2026, 11, 26, tzinfo=timezone.utc)


def _text(raw: bytes) -> str:
    return raw.decode("latin-1")


@settings(max_examples=300, deadline=None)
@given(_LINES, st.integers(min_value=100, max_value=599))
def test_no_header_value_makes_a_reader_raise(lines: list[bytes], status: int) -> None:
    texts = [_text(line) for line in lines]
    limits = Limits()
    for text in texts:
        seconds = lifetime(text, limits)  # Cache-Control
        assert limits.cache_min_lifetime <= seconds <= limits.cache_max_lifetime
    assert parse_retry_after(texts, 0.0) is None or parse_retry_after(texts, 0.0) >= 0
    proxy_failure(status, texts)  # Proxy-Status
    split_codings(lines)  # Content-Encoding
    page_rules(lines, None, ("mybot",), _NOW)  # X-Robots-Tag
    parse_content_usage(lines)  # Content-Usage
    parse_content_signal(texts)


def test_max_age_is_ascii_digits() -> None:
    limits = Limits()
    assert lifetime("max-age=\u0663\u0660\u0660", limits) == limits.cache_lifetime
    assert lifetime("max-age=300", limits) == 300
    assert lifetime("max-age=" + "9" * 5000, limits) == limits.cache_max_lifetime

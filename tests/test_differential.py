"""Differential test: scrapy_rep answers every generated (robots.txt, token, URL) as Google's
own library does.

The oracle is jwm-robotstxt, a binding of google/robotstxt's unmodified robots.cc (checked
against every expected answer of tests/data/conformance: 545 suite cases and 165,807 corpus
checks, all equal). Its wheels stop at Python 3.12 and its source build downloads abseil, so on
Python 3.13 it is absent and conftest.py leaves this module out (see ``ORACLE``).

Bodies follow SPEC A1-A2 with every quirk the line reader has: Google's key typos, missing
colons, usage preference lines (SPEC E1), groups, comments, a BOM or part of one, CR/LF/CRLF
mixtures, control characters (\\v \\f among them), NUL, '*' and '$', %-escapes, non-ASCII and
invalid UTF-8, lines past the 16,663-byte cut. URLs have %-escapes in both cases, ';', '?', '#',
'//', NUL and no path.

Bounded: 2,000 examples by default (Hypothesis's CI profile makes them deterministic);
``REP_FUZZ_EXAMPLES=200000`` runs more. No example database is kept.

The one documented difference: only a body's first 512,000 bytes count for scrapy_rep (SPEC
A1), while Google's library reads the whole body; the oracle is given the same first 512,000
bytes.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jwm.robotstxt import googlebot

from scrapy_rep import RobotsTxt
from scrapy_rep.core.parser import MAX_BODY_BYTES

EXAMPLES = int(os.environ.get("REP_FUZZ_EXAMPLES", "2000"))


def google_allowed(body: bytes, token: str, url: str) -> bool:
    """Google's OneAgentAllowedByRobots, every string passed with its length."""
    return bool(
        googlebot.RobotsMatcher().OneAgentAllowedByRobots(body[:MAX_BODY_BYTES], token, url)
    )


_KEYS = [
    "User-agent", "user-agent", "USER-AGENT", "useragent", "User agent", "User-agents",
    "Allow", "allow", "ALLOW", "Allowed", "Disallow", "disallow", "DISALLOW", "Disallowed",
    "dissallow", "dissalow", "disalow", "Disalow", "diasllow", "disallaw", "Sitemap",
    "site-map", "Crawl-delay", "Host", "Noindex", "User", "Dis", "", "é",
    # Usage preference lines (SPEC E1): Google ignores them, and so must allowed().
    "Content-Usage", "content-usage", "Content-Signal", "CONTENT-SIGNAL",
]  # fmt: skip
_SEPARATORS = [":", ": ", " :", " : ", ":\t", " ", "\t", " \t", "", "::", "\f", "\v", " \f", "\t\v"]
_AGENTS = ["*", "* ", "*bot", "FooBot", "foobot", "FOOBOT/1.2", "foo bar", "BarBot", "googlebot"]
_AGENTS += ["foo-bot", "foo_bot", "a", "Foo*", "bot2", ""]
# Path text: characters the matcher treats specially, escapes of both cases, non-ASCII.
_PATH_ALPHABET = "/ab*$%?;=&#.~: 2fF\x00\x01\t\v\fé中"
_PATH_PIECES = ["/", "/a", "/a/", "/b", "*", "$", "%2f", "%2F", "%c3%a9", "%C3%A9", "é", "?", ";"]
_PATH_PIECES += ["/index.html", "/index.htm", "//", "#", "\x00", "\f", "\v", "%", "%%", "%zz"]

_path_text = st.one_of(
    st.lists(st.sampled_from(_PATH_PIECES), max_size=6).map("".join),
    st.text(alphabet=_PATH_ALPHABET, max_size=12),
)
_value = st.one_of(
    st.sampled_from(_AGENTS),
    _path_text,
    st.text(max_size=6),
    st.just("/" + "a" * 17_000),  # past the 16,663-byte line cut
    st.builds(lambda n: "/" + "*a" * n + "*b", st.integers(1, 60)),
    st.sampled_from(["train-ai=n", "/a train-ai=y, search=n", "search=yes, ai-train=no"]),
)
_EOLS = ["\n", "\r", "\r\n", "\n\r", "\r\r\n", "\n\n"]
_line = st.builds(
    lambda indent, key, sep, value, trail, comment, eol: (
        f"{indent}{key}{sep}{value}{trail}{comment}".encode() + eol
    ),
    st.sampled_from(["", "", "", " ", "\t", "\v", "\f", " \f"]),
    st.sampled_from(_KEYS),
    st.sampled_from(_SEPARATORS),
    _value,
    st.sampled_from(["", "", "", " ", "\t", "\f", "\v", " \v\f"]),
    st.sampled_from(["", "", "", "#", " # note", "#é", "#\x00"]),
    st.sampled_from([eol.encode() for eol in _EOLS]),
)
# Raw bytes in a line: invalid UTF-8, NUL, any control character.
_noise = st.binary(max_size=6).map(lambda b: b + b"\n")
_group_head = st.sampled_from(
    [b"", b"User-agent: *\n", b"User-agent: FooBot\n", b"user-agent: foobot\nUser-agent: *\n"]
)
bodies = st.builds(
    lambda bom, head, lines, last: bom + head + b"".join(lines) + last,
    st.sampled_from([b"", b"", b"", b"\xef\xbb\xbf", b"\xef\xbb", b"\xef", b"\xbb\xbf"]),
    _group_head,
    st.lists(st.one_of(_line, _line, _line, _noise), max_size=30),
    st.sampled_from([b"", b"Disallow: /", b"User-agent: *", b"\x00", b"\r"]),
)
_BASES = ["http://example.com", "https://A.example:8080", "//host", "http://a#b", "host", "", "://"]
urls = st.builds(
    lambda base, path: base + path,
    st.sampled_from(_BASES),
    st.one_of(_path_text, st.just(""), st.text(max_size=10)),
)
tokens = st.one_of(
    st.sampled_from(["FooBot", "foobot", "BarBot", "googlebot", "foo-bot", "foo_bot", "a", ""]),
    st.sampled_from(["*", "bot", "Foo Bot", "FOOBOT/1.2"]),
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(body=bodies, asked=st.lists(st.tuples(tokens, urls), min_size=1, max_size=6))
def test_answers_equal_googles_library(body: bytes, asked: list[tuple[str, str]]) -> None:
    rt = RobotsTxt.parse(body)
    for token, url in asked:
        expected = google_allowed(body, token, url)
        assert rt.allowed(url, token) is expected, (body, token, url)
        assert rt.decide(url, token).allowed is expected, (body, token, url)


def test_oracle_is_googles_matcher() -> None:
    # Minimal cases, as Google's library answers them: a sanity check that the
    # binding is the unmodified matcher (NUL ends the URL path; a "\f"-only value is no line).
    assert google_allowed(b"User-agent: *\nDisallow: *l", "a", "http://a/\x00l")
    assert google_allowed(b"USERAGENT \f\nDisalow:/", "", "")
    assert not google_allowed(b"User-agent: *\nDisallow: /%61", "a", "http://a/%61")
    assert google_allowed(b"User-agent: *\nDisallow: /%61", "a", "http://a/a")

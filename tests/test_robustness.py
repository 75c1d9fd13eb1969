"""Robustness of the pure parser and matcher: hostile input never raises, and answers are
consistent (bytes vs str, call order, the 512,000-byte cut, a BOM), on generated input and on
a sample of real robots.txt files (tests/data/corpus_sample, see its SOURCES.md)."""

from __future__ import annotations

import gc
import gzip
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_rep import Decision, RobotsTxt, UsagePrefs
from scrapy_rep.core.usage import LABELS

CUT = 512_000
HOST = "https://www.example.com"
SAMPLE_DIR = Path(__file__).resolve().parent / "data" / "corpus_sample"
SAMPLE = sorted(p for p in SAMPLE_DIR.rglob("*") if p.is_file() and p.name != "SOURCES.md")
# A token that no real file names, so the '*' group applies (SPEC A3).
STRANGER = "scrapyrepteststranger"

Tokens = str | Sequence[str]


def fingerprint(rt: RobotsTxt) -> tuple[list[tuple[Any, ...]], list[str]]:
    """Everything a parse produced, comparable with ==."""
    groups = [
        (g.line, tuple(g.agents), g.is_global, tuple(g.rules), g.crawl_delay) for g in rt.groups
    ]
    return groups, list(rt.sitemaps)


def line_count(body: bytes) -> int:
    """Lines in the part of ``body`` that counts; CR, LF and CRLF each end one (SPEC A1)."""
    kept = body[:CUT]
    return kept.count(b"\n") + kept.replace(b"\r\n", b"").count(b"\r") + 1


def check_answer(rt: RobotsTxt, body: bytes | None, url: str, tokens: Tokens) -> Decision:
    """allowed(), decide() and usage() answer without raising and agree with each other."""
    allowed = rt.allowed(url, tokens)
    decision = rt.decide(url, tokens)
    prefs = rt.usage(url, tokens)
    assert isinstance(prefs, UsagePrefs)
    assert list(prefs) == list(LABELS)
    assert all(prefs[label] in (True, False, None) for label in LABELS)
    # SPEC E2: a URL that may not be fetched has no preference.
    assert allowed or (all(v is None for v in prefs.values()) and not prefs.signals)
    for label in LABELS:
        assert bool(prefs.sources[label]) is (prefs[label] is not None)
    assert isinstance(allowed, bool)
    assert isinstance(decision, Decision)
    assert decision.allowed is allowed
    assert isinstance(decision.reason, str) and decision.reason
    names = [tokens] if isinstance(tokens, str) else list(tokens)
    assert decision.token is None or decision.token in names
    if decision.rule is not None:
        # The deciding rule is the one whose verdict is returned (ties go to allow, SPEC A6).
        assert decision.rule.allow is allowed
        # Patterns are normalised: bytes >= 0x80 percent-encoded (SPEC A5).
        assert decision.rule.pattern.isascii()
        if body is not None:
            assert 1 <= decision.rule.line <= line_count(body)
    else:
        assert allowed
    return decision


# ---------------------------------------------------------------------------------------------
# Generated input

_KEYS = [
    "User-agent", "user-agent", "USERAGENT", "user agent", "User-agents", "Allow", "allow",
    "Disallow", "disallow", "DISALLOWED", "Dissallow", "disalow", "diasllow", "disallaw",
    "Sitemap", "site-map", "Crawl-delay", "crawl-delay", "Host", "Noindex", "", "x", "é",
    "Content-Usage", "content-usage", "Content-Signal",
]  # fmt: skip
_SEPARATORS = [":", ": ", " : ", " ", "\t", ":\t", "", "::", " :: "]
_VALUES = [
    "*", "* ", "*bot", "/", "", "/a", "/a/", "/a*", "/a*b$", "/a$b", "/$", "*$", "$", "/*.pdf$",
    "/%aa", "/%2F", "/%", "/%zz", "/é", "/中文/", "/a b", "googlebot", "Googlebot/2.1",
    "mybot-news", "MyBot", "bot2", "/index.html", "/d/index.htm", "/d/index.html?x", "1.5",
    "-1", "inf", "nan", "https://example.com/sitemap.xml", "/" + "*a" * 40 + "*b",
    "/" + "x" * 17_000,  # past the 16,663-byte line cut
    "train-ai=n", "/a train-ai=y, search=n", "/a*\tai-use=n;p", "Train-ai=n", "train-ai=(y",
    "search=yes, ai-train=no, use=reference", "ai-input=NO,,", "/x search=no",
]  # fmt: skip
_EOLS = ["\n", "\r", "\r\n", "\n\n", "\r\r\n", "\x00\n", "\x00"]
_PATH_CHARS = "/ab*$%9Fé?=;&#.~"
_TOKEN_CHOICES = ["mybot", "MyBot", "googlebot", "mybot-news", "bot", "*", "", " ", "Googlebot/2.1"]

_robots_value = st.one_of(
    st.sampled_from(_VALUES),
    st.text(alphabet=_PATH_CHARS, max_size=12),
    st.text(max_size=8),
)
_weird_line = st.builds(
    lambda indent, key, sep, value, comment, eol: f"{indent}{key}{sep}{value}{comment}{eol}",
    st.sampled_from(["", " ", "\t", "\ufeff"]),
    st.sampled_from(_KEYS),
    st.sampled_from(_SEPARATORS),
    _robots_value,
    st.sampled_from(["", " # note", "#", "# é"]),
    st.sampled_from(_EOLS),
)
_plain_line = st.builds(
    lambda key, value, eol: f"{key}: {value}{eol}",
    st.sampled_from(["User-agent", "User-agent", "Allow", "Disallow", "Disallow", "Sitemap"]),
    st.one_of(st.sampled_from(_VALUES), st.text(alphabet=_PATH_CHARS, max_size=6)),
    st.sampled_from(["\n", "\r\n", "\r"]),
)
_robots_line = st.one_of(_plain_line, _weird_line)
# Robots-like text: the grammar of SPEC A1-A2 with its edge cases (no final newline, BOM or
# partial BOM first, CR alone, NUL, comments, typos), as str; bodies are its UTF-8 bytes.
robots_text = st.builds(
    lambda bom, head, lines, last: bom + head + "".join(lines) + last,
    st.sampled_from(["", "\ufeff"]),
    st.sampled_from(["", "User-agent: *\n", "User-agent: mybot\nUser-agent: googlebot\n"]),
    st.lists(_robots_line, max_size=25),
    st.sampled_from(["", "Disallow: /tail", "User-agent: *", "\x00"]),
)
robots_bytes = st.one_of(
    robots_text.map(str.encode),
    st.tuples(st.sampled_from([b"\xef", b"\xef\xbb", b"\xbb\xbf"]), robots_text).map(
        lambda pair: pair[0] + pair[1].encode()
    ),
)
urls = st.one_of(
    st.text(alphabet=_PATH_CHARS, max_size=20).map(lambda path: HOST + path),
    st.text(alphabet=_PATH_CHARS, max_size=20),
    st.sampled_from(["", "/", "//x", "http://", "https://h", "x://y/z#f", "?q", ";p", "#f"]),
    st.text(max_size=30),
)
tokens: st.SearchStrategy[Tokens] = st.one_of(
    st.sampled_from(_TOKEN_CHOICES),
    st.text(max_size=12),
    st.lists(st.one_of(st.sampled_from(_TOKEN_CHOICES), st.text(max_size=8)), max_size=3).map(
        tuple
    ),
)
queries = st.lists(st.tuples(urls, tokens), min_size=1, max_size=8)

_SETTINGS = settings(max_examples=300, deadline=None)


@_SETTINGS
@given(body=st.binary(max_size=3000))
def test_parse_never_raises_on_arbitrary_bytes(body: bytes) -> None:
    rt = RobotsTxt.parse(body)
    assert rt.rule_count >= 0
    assert all(isinstance(s, str) for s in rt.sitemaps)
    check_answer(rt, body, HOST + "/", "mybot")


@_SETTINGS
@given(body=robots_bytes, asked=queries)
def test_robots_like_bytes_parse_and_answer(body: bytes, asked: list[tuple[str, Tokens]]) -> None:
    rt = RobotsTxt.parse(body)
    for url, toks in asked:
        check_answer(rt, body, url, toks)
        delay = rt.crawl_delay(toks)
        assert delay is None or (isinstance(delay, float) and 0 <= delay < float("inf"))


@_SETTINGS
@given(text=st.one_of(robots_text, st.text(max_size=300)), asked=queries)
def test_bytes_and_equivalent_str_agree(text: str, asked: list[tuple[str, Tokens]]) -> None:
    from_str, from_bytes = RobotsTxt.parse(text), RobotsTxt.parse(text.encode())
    assert fingerprint(from_str) == fingerprint(from_bytes)
    for url, toks in asked:
        assert from_str.decide(url, toks) == from_bytes.decide(url, toks)
        assert from_str.crawl_delay(toks) == from_bytes.crawl_delay(toks)
        str_prefs, bytes_prefs = from_str.usage(url, toks), from_bytes.usage(url, toks)
        assert str_prefs == bytes_prefs
        assert str_prefs.sources == bytes_prefs.sources
        assert str_prefs.signals == bytes_prefs.signals


@_SETTINGS
@given(body=robots_bytes, asked=queries)
def test_answers_do_not_depend_on_earlier_questions(
    body: bytes, asked: list[tuple[str, Tokens]]
) -> None:
    # One object answering a sequence (caches warm, tokens switching) must answer each
    # question as a fresh parse does.
    shared = RobotsTxt.parse(body)
    for url, toks in asked:
        assert shared.allowed(url, toks) == RobotsTxt.parse(body).allowed(url, toks)
        assert shared.decide(url, toks) == RobotsTxt.parse(body).decide(url, toks)
        fresh = RobotsTxt.parse(body).usage(url, toks)
        assert shared.usage(url, toks) == fresh
        assert shared.usage(url, toks).sources == fresh.sources


_EXAMPLES = [
    b"",
    b"User-agent: *\nDisallow: /\nAllow: /$\n",
    b"User-agent: mybot\nUser-agent: googlebot\nDisallow: /a*b$\nAllow: /a/index.html\n"
    b"User-agent: *\nDisallow: /*.pdf$\nDisallow: /%E4%B8%AD\nCrawl-delay: 2\n",
    b"User-agent: mybot-news\n\nUser-agent: *\nDisallow: /" + b"*a" * 200 + b"*b\n",
]


@_SETTINGS
@given(which=st.sampled_from(range(len(_EXAMPLES))), url=st.text(), toks=tokens)
def test_allowed_and_decide_never_raise_on_arbitrary_urls_and_tokens(
    which: int, url: str, toks: Tokens
) -> None:
    body = _EXAMPLES[which]
    check_answer(RobotsTxt.parse(body), body, url, toks)


# ---------------------------------------------------------------------------------------------
# The 512,000-byte cut on big bodies


def _big_body(size: int) -> bytes:
    """Realistic robots.txt lines, repeated past ``size`` bytes, with a few groups and sitemaps."""
    rng = random.Random(size)
    lines: list[str] = []
    length = 0
    while length < size:
        if rng.random() < 0.01:
            line = f"User-agent: {rng.choice(['*', 'googlebot', 'mybot', 'bingbot'])}"
        elif rng.random() < 0.01:
            line = f"Sitemap: {HOST}/sitemap-{rng.randrange(10**4)}.xml"
        else:
            verb = rng.choice(["Allow", "Disallow", "Disallow"])
            end = rng.choice(["", "*", "$"])
            line = f"{verb}: /d{rng.randrange(500)}/p-{rng.randrange(10**4)}{end}"
        lines.append(line)
        length += len(line) + 1
    return ("\n".join(lines) + "\n").encode()


_BIG = _big_body(2 * 1024 * 1024)


def test_two_megabyte_body_equals_its_first_512000_bytes() -> None:
    after_cut = b"User-agent: *\nDisallow: /after-the-cut\nSitemap: https://late.example/s.xml\n"
    body = _BIG + after_cut
    rt, head = RobotsTxt.parse(body), RobotsTxt.parse(body[:CUT])
    assert fingerprint(rt) == fingerprint(head)
    assert rt.rule_count > 10_000  # the head is real content, not one skipped line
    assert rt.allowed(HOST + "/after-the-cut", STRANGER)
    assert "https://late.example/s.xml" not in rt.sitemaps
    rng = random.Random(1)
    for _ in range(200):
        url = f"{HOST}/d{rng.randrange(500)}/p-{rng.randrange(10**4)}"
        for toks in (STRANGER, "googlebot", ("mybot", "bingbot")):
            assert rt.decide(url, toks) == head.decide(url, toks)


# Ends 1..40 bytes before the cut, so generated tails straddle it.
_HEAD = _BIG[: _BIG.rindex(b"\n", 0, CUT - 40) + 1]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tail=st.one_of(robots_bytes, st.binary(max_size=200)))
def test_bytes_past_the_cut_never_count(tail: bytes) -> None:
    body = _HEAD + tail
    assert fingerprint(RobotsTxt.parse(body)) == fingerprint(RobotsTxt.parse(body[:CUT]))


# ---------------------------------------------------------------------------------------------
# Hostile lines: parsing stays linear


def _best_parse_seconds(body: bytes) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        RobotsTxt.parse(body)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize(
    "line",
    [
        b"a b" + b"\x0b" * 16_000 + b" c",  # two runs that could both take the \v run
        b"\x0c" * 16_000 + b" c d",
        b"a\tb" + b"\x0b\x0c" * 8_000 + b"\t",
        b"Disallow: " + b"\x0b " * 8_000 + b"x",
        b"a" + b"#" * 16_000,
        b":" * 16_000,
    ],
)
def test_hostile_lines_parse_about_as_fast_as_ordinary_ones(line: bytes) -> None:
    # A security property, not a speed target: a backtracking regex made the first line cost
    # a second per 16 KB line (30 s for a 480 KB body), so a hostile site could stall the
    # crawl's reactor. The same time as ordinary rules of the same size, within a wide margin.
    hostile = b"User-agent: *\n" + (line + b"\n") * 30
    ordinary = _BIG[: len(hostile)]
    assert _best_parse_seconds(hostile) < 5 * _best_parse_seconds(ordinary) + 0.01


def test_colon_less_lines_read_as_google_reads_them() -> None:
    # SPEC A2: exactly two runs of text separated by spaces/tabs; ASCII whitespace (\v, \f
    # included) trimmed from the line's ends first, and only spaces/tabs separate.
    body = (
        b"User-agent: *\n"
        b"Disallow \x0b/a\x0b\n"  # the value is trimmed: /a
        b"\x0cDisallow\t/b \x0c\n"  # -> Disallow /b
        b"Disallow /c /d\n"  # three runs: ignored
        b"Disallow\x0b/e\n"  # no space or tab: ignored
        b"Disallow \x0c\n"  # the value is whitespace: ignored, not an empty rule
        b"Disallow\x0b /f\n"  # the key "Disallow\x0b" is trimmed -> Disallow /f
    )
    patterns = [pattern for _allow, pattern, _line in RobotsTxt.parse(body).groups[0].rules]
    assert patterns == ["/a", "/b", "/f"]


# ---------------------------------------------------------------------------------------------
# Hostile usage preference lines: parse and usage() stay linear (SPEC E)


def _usage_body(line: str, count: int) -> bytes:
    return ("User-agent: *\n" + "".join(line.format(i=i) + "\n" for i in range(count))).encode()


def _best_usage_seconds(body: bytes, paths: Sequence[str]) -> float:
    """A fresh parse and a usage() question per path, best of 3, the cyclic GC off (its
    full collections land on one run or another and blur a ratio of two times)."""
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            start = time.process_time()
            rt = RobotsTxt.parse(body)
            for path in paths:
                rt.usage(HOST + path, "mybot")
            best = min(best, time.process_time() - start)
    finally:
        gc.enable()
    return best


_LONG_DICTIONARY = ", ".join(f"k{i}=n;p={i}" for i in range(2_000))[:16_000]


@pytest.mark.parametrize(
    ("line", "count"),
    [
        ("Content-Usage: " + _LONG_DICTIONARY, 15),  # long dictionaries
        ("Content-Usage: /{i} " + _LONG_DICTIONARY, 15),
        ("Content-Usage: train-ai=" + "(" * 16_000, 15),  # "deep nesting" (none in RFC 9651)
        ('Content-Usage: train-ai="' + '\\"' * 8_000, 15),  # an escape run never closed
        ("Content-Signal: " + "use=reference," * 1_100, 15),
        ("Content-Usage: /p{i} train-ai=n", 5_000),  # many lines
        ("Content-Usage: /a train-ai=n, search=y", 5_000),  # one path, many statements
        ("Content-Signal: use=reference, ai-train=no", 5_000),  # many signals
        ("Content-Usage: /*{i:05} train-ai=n", 5_000),  # many '*' patterns of one length
    ],
)
def test_hostile_usage_lines_stay_linear(line: str, count: int) -> None:
    # Four times the lines, at most about four times the time: parse, compile the group's
    # lines, answer 20 URLs (a quadratic step would take sixteen times as long; the margin to
    # eight absorbs a loaded machine's noise).
    # Paths the rules of either size match (the lines numbered below 5,000).
    paths = [f"/{i:05}" for i in range(0, 5_000, 500)] + [f"/p{i}" for i in range(0, 5_000, 500)]
    small = _best_usage_seconds(_usage_body(line, count), paths)
    big = _best_usage_seconds(_usage_body(line, 4 * count), paths)
    assert big < 8 * small + 0.01
    # And nothing is read wrong: every answer is a well-formed one.
    check_answer(RobotsTxt.parse(_usage_body(line, count)), None, HOST + "/p1", "mybot")


# ---------------------------------------------------------------------------------------------
# Real files


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def _plain_global_patterns(rt: RobotsTxt, limit: int) -> list[str]:
    found = []
    for group in rt.groups:
        if not group.is_global:
            continue
        for _allow, pattern, _line in group.rules:
            if pattern.startswith("/") and "*" not in pattern and "$" not in pattern:
                found.append(pattern)
    return found[:limit]


def test_sample_covers_the_hard_cases() -> None:
    bodies = {p.relative_to(SAMPLE_DIR).as_posix(): _read(p) for p in SAMPLE}
    assert len(bodies) >= 290
    assert {name.split("/")[0] for name in bodies} >= {
        "protego", "bharath06", "anubhavp28_usage_stats", "anubhavp28_benchmark", "egonkm",
        "texting_robots",
    }  # fmt: skip
    assert sum(len(b) > CUT for b in bodies.values()) == 5
    assert sum(b.startswith(b"\xef\xbb\xbf") for b in bodies.values()) >= 20
    assert sum(b"<html" in b[:2000].lower() for b in bodies.values()) >= 10

    def is_utf8(body: bytes) -> bool:
        try:
            body.decode()
        except UnicodeDecodeError:
            return False
        return True

    assert sum(not is_utf8(b) for b in bodies.values()) >= 10


@pytest.mark.parametrize("path", SAMPLE, ids=lambda p: p.relative_to(SAMPLE_DIR).as_posix())
def test_real_file_parses_and_answers(path: Path) -> None:
    body = _read(path)
    rt = RobotsTxt.parse(body)
    rng = random.Random(path.name)
    asked = ["/", "/robots.txt", "/search?q=x&page=2", "/a/b/c.html", "/%E4%B8%AD/x;p=1"]
    asked += [f"/{rng.choice('abcxyz')}{rng.randrange(100)}" for _ in range(3)]
    for url_path in asked:
        for toks in (STRANGER, "googlebot", ("mybot-news", "googlebot", "bingbot")):
            check_answer(rt, body, HOST + url_path, toks)
    for pattern in _plain_global_patterns(rt, 20):
        # The URL whose path is the pattern matches it, so the deciding rule is at least as long.
        decision = check_answer(rt, body, HOST + pattern, STRANGER)
        assert decision.rule is not None
        assert decision.rule.priority >= len(pattern)
    if len(body) > CUT:
        assert fingerprint(rt) == fingerprint(RobotsTxt.parse(body[:CUT]))
    if body.startswith(b"\xef\xbb\xbf"):
        assert fingerprint(rt) == fingerprint(RobotsTxt.parse(body[3:]))
    try:
        text = body.decode()
    except UnicodeDecodeError:
        return
    if len(body) <= CUT:
        assert fingerprint(RobotsTxt.parse(text)) == fingerprint(rt)

"""The compiled matcher against direct transcriptions of Google's algorithms.

``reference_allowed`` walks every rule over the path with Google's
position-set matching (O(pattern x path), no indexes); a RuleSet's scans (its
first checks) and its indexes (one sorted list of prefixes and '*' heads, gram
index; built once the scans are spent) must both give the same answers.
``google_path`` is Google's GetPathParamsQuery, against which the URL side (and
the base cache of ``RobotsTxt.allowed``) is checked.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rep import RobotsTxt
from scrapy_rep.core.matcher import (
    _SCANNED_CHECKS,
    _SCANNED_RULES,
    ALLOW_BIT,
    Rule,
    RuleSet,
    path_params_query,
    read_path,
)


def google_path(url: str) -> str:
    """robots.cc GetPathParamsQuery, line by line."""
    search_start = 2 if url[:2] == "//" else 0
    early_path = min((i for i in (url.find(c, search_start) for c in "/?;") if i >= 0), default=-1)
    protocol_end = url.find("://", search_start)
    if early_path >= 0 and (protocol_end < 0 or early_path < protocol_end):
        protocol_end = -1
    protocol_end = search_start if protocol_end < 0 else protocol_end + 3
    path_start = min((i for i in (url.find(c, protocol_end) for c in "/?;") if i >= 0), default=-1)
    if path_start < 0:
        return "/"
    hash_pos = url.find("#", search_start)
    if 0 <= hash_pos < path_start:
        return "/"
    path_end = len(url) if hash_pos < 0 else hash_pos
    path = url[path_start:path_end]
    if url[path_start] != "/":
        path = "/" + path
    # AllowedByRobots then hands the path over as a C string: it ends at a NUL.
    return path.split("\0")[0]


def google_matches(path: str, pattern: str) -> bool:
    positions = [0]
    for i, char in enumerate(pattern):
        if char == "$" and i == len(pattern) - 1:
            return positions[-1] == len(path)
        if char == "*":
            positions = list(range(positions[0], len(path) + 1))
        else:
            positions = [p + 1 for p in positions if p < len(path) and path[p] == char]
            if not positions:
                return False
    return True


def reference_allowed(rules: list[Rule], path: str) -> tuple[bool, int]:
    allow, disallow = -1, -1
    for rule in rules:
        pattern = rule.pattern
        if rule.allow:
            if google_matches(path, pattern):
                allow = max(allow, len(pattern))
            else:
                slash = pattern.rfind("/")
                if slash >= 0 and pattern.startswith("/index.htm", slash):
                    derived = pattern[: slash + 1] + "$"
                    if google_matches(path, derived):
                        allow = max(allow, len(derived))
        elif google_matches(path, pattern):
            disallow = max(disallow, len(pattern))
    if allow <= 0 and disallow <= 0:
        return True, 0
    return disallow <= allow, max(allow, disallow)


# Regex metacharacters and a newline too: nothing may treat a pattern as a regex.
ALPHABET = "/ab.$*?(\\\n"
patterns = st.text(alphabet=ALPHABET, max_size=8).map(lambda s: "/" + s)
paths = st.text(alphabet=ALPHABET.replace("*", ""), max_size=12).map(lambda s: "/" + s)
rule_lists = st.lists(
    st.tuples(st.booleans(), patterns).map(lambda t: Rule(t[0], t[1], 1)), max_size=60
)


@settings(max_examples=1000, deadline=None)
@given(rule_lists, st.lists(paths, min_size=1, max_size=8))
def test_ruleset_equals_google_algorithm(rules: list[Rule], checks: list[str]) -> None:
    ruleset = RuleSet(rules)
    for path in checks:
        expected_allowed, expected_priority = reference_allowed(rules, path)
        best = ruleset.best(path)
        got_allowed = best is None or best.allow
        assert got_allowed == expected_allowed, (rules, path, best)
        rank = ruleset.rank(path)  # what RobotsTxt.allowed reads
        assert (rank < 0 or rank & ALLOW_BIT != 0) == expected_allowed, (rules, path, rank)
        if expected_priority > 0:
            assert best is not None and best.priority == expected_priority


def test_a_wildcard_prefix_outranks_a_longer_key_once_indexed() -> None:
    # Found by the property above: "/**" is filed under the key "/" with its whole length (3),
    # above the key "/(" of "/(" (2); the exact "/($" (3, disallow) ties with it and the allow
    # wins (SPEC A6), on the scanned first check and on the indexed later ones alike.
    rules = [Rule(False, "/(", 1), Rule(False, "/($", 1), Rule(True, "/**", 1)]
    ruleset = RuleSet(rules)
    answers = [ruleset.rank("/(") & ALLOW_BIT != 0 for _ in range(_SCANNED_CHECKS + 2)]
    assert ruleset._nodes is not None and answers == [True] * len(answers)
    assert ruleset.best("/(") == Rule(True, "/**", 1)


def indexed(rules: list[Rule]) -> RuleSet:
    """A RuleSet asked until its scans are spent and it answers from its indexes."""
    ruleset = RuleSet(rules)
    checks = 0
    while ruleset._nodes is None:
        ruleset.rank("/")
        checks += 1
    # Only a group of up to _SCANNED_RULES rules scans, and only its first checks.
    assert checks <= _SCANNED_CHECKS + 1
    return ruleset


# Groups of plain prefixes with index.html rules.
plain_rule_lists = st.lists(
    st.tuples(
        st.booleans(),
        st.text(alphabet="/ab.?", max_size=8).map(lambda s: "/" + s),
        st.sampled_from(["", "/index.html", "/index.htm"]),
        st.integers(1, 9),
    ).map(lambda t: Rule(t[0], t[1] + t[2], t[3])),
    max_size=30,
)


@settings(max_examples=1000, deadline=None)
@given(st.one_of(rule_lists, plain_rule_lists), st.lists(paths, min_size=1, max_size=8))
def test_scan_and_indexes_give_the_same_answers(rules: list[Rule], checks: list[str]) -> None:
    answers_from_indexes = indexed(rules)
    for path in checks:
        # A fresh rule set of up to _SCANNED_RULES rules, '*' and '$' patterns
        # included, answers its first check by a scan.
        fresh = RuleSet(rules)
        assert fresh.rank(path) == answers_from_indexes.rank(path), (rules, path)
        assert fresh._nodes is None
        assert RuleSet(rules).best(path) == answers_from_indexes.best(path), (rules, path)


def test_index_html_rules_by_scan_and_by_indexes() -> None:
    rules = [
        Rule(True, "/d/index.html", 1),
        Rule(False, "/d/", 2),
        Rule(True, "/e/index.htm", 3),
        Rule(False, "/e", 4),
        Rule(False, "/f/index.html", 5),  # a disallow derives nothing
        Rule(True, "/g/*/index.html", 6),  # derives "/g/*/$"
        Rule(False, "/g/", 7),
    ]
    answers_from_indexes = indexed(rules)
    paths = ["/d/", "/d/x", "/d/index.html", "/e/", "/e/index.htmx", "/e/x", "/f/", "/"]
    for path in [*paths, "/g/x/", "/g/x/y", "/g/x/index.html", "/g/"]:
        expected = reference_allowed(rules, path)[0]
        scanning = RuleSet(rules)
        assert scanning._scans == _SCANNED_CHECKS
        for ruleset in (scanning, answers_from_indexes):
            best = ruleset.best(path)
            assert (best is None or best.allow) == expected, (path, best)
    assert RuleSet(rules).best("/d/") == Rule(True, "/d/$", 1)
    assert RuleSet(rules).best("/g/a/b/") == Rule(True, "/g/*/$", 6)


def test_group_of_empty_values_matches_nothing_and_is_known_empty() -> None:
    # SPEC A5: "Disallow:" matches nothing; once indexed, no path is read at all.
    ruleset = RuleSet([Rule(False, "", 1), Rule(True, "", 2)])
    assert not ruleset.empty
    assert ruleset.rank("/x") == -1  # a scan
    assert ruleset.rank("/y") == -1  # the indexes
    assert ruleset.empty


SAMPLE_DIR = Path(__file__).resolve().parent / "data" / "corpus_sample"


def test_real_files_by_scan_and_by_indexes() -> None:
    # Every group of every sample file that scans (bigger ones build their
    # indexes on the first check), asked for paths made from its own patterns:
    # fresh rule sets (scans) and spent ones (indexes) agree.
    compared = scanned = 0
    for file in sorted(p for p in SAMPLE_DIR.rglob("*") if p.is_file() and p.suffix != ".md"):
        body = file.read_bytes()
        robots = RobotsTxt.parse(gzip.decompress(body) if file.suffix == ".gz" else body)
        for group in robots.groups:
            rules = [Rule(*rule) for rule in group.rules]
            if len(rules) > _SCANNED_RULES:
                continue
            answers_from_indexes = indexed(rules)
            for _allow, pattern, _line in rules:
                base = pattern.replace("*", "x").rstrip("$") or "/"
                for path in (base, base + "/y", base[:-1] or "/", "/zz" + base):
                    fresh = RuleSet(rules)
                    scanned += fresh._scans > 0
                    assert fresh.rank(path) == answers_from_indexes.rank(path), (file, path)
                    compared += 1
    assert compared > 5_000
    assert scanned > 1_000


def test_big_plain_group_is_indexed_at_once_and_agrees() -> None:
    rules = [Rule(i % 3 == 0, f"/a/{i}", i + 1) for i in range(100)]
    rules += [Rule(False, "/a/", 200), Rule(True, "/a/1", 201), Rule(False, "/a/1", 202)]
    ruleset = RuleSet(rules)
    for path in ["/a/1", "/a/10", "/a/99x", "/a/3/", "/a/", "/b", "/a/1000", "/"]:
        best = ruleset.best(path)
        assert (best is None or best.allow) == reference_allowed(rules, path)[0], path
        assert ruleset._nodes is not None  # no scan: indexed on the first check


def test_large_wildcard_bucket_uses_index_and_agrees() -> None:
    # Many '*' patterns under the same head "/" exercise the gram index.
    rules = [Rule(False, f"/*item{i}*.pdf$", i) for i in range(200)]
    rules += [Rule(True, "/*item1*", 500), Rule(False, "/*x", 501)]
    ruleset = RuleSet(rules)
    for path in ["/a/item17/b.pdf", "/item199.pdf", "/item1.pdf", "/x", "/none.pdf", "/a/item2x"]:
        best = ruleset.best(path)
        assert (best is None or best.allow) == reference_allowed(rules, path)[0], path


def test_long_star_pattern_against_long_path() -> None:
    # The benchmark's worst case (timed there, not here): answers stay exact.
    ruleset = RuleSet([Rule(False, "/" + "*a" * 4000 + "*b", 1)])
    path = "/" + "a" * 16_000
    assert ruleset.best(path) is None
    assert ruleset.best(path + "b") is not None


url_texts = st.text(alphabet="/?;#:ab\0", max_size=14)


@settings(max_examples=2000, deadline=None)
@given(url_texts)
def test_path_params_query_equals_google(url: str) -> None:
    assert path_params_query(url) == google_path(url)


@settings(max_examples=1000, deadline=None)
@given(url_texts, url_texts)
def test_a_base_gives_the_path_of_every_url_that_starts_with_it(url: str, rest: str) -> None:
    path, base = read_path(url)
    if base is not None:
        # The path ends at a '#' or at a NUL (see path_params_query).
        assert url == base + path or url.startswith((base + path + "#", base + path + "\0"))
        other = base + "/" + rest
        if "#" not in other and "\0" not in other:
            assert google_path(other) == other[len(base) :]


def test_hash_before_the_path_means_root() -> None:
    # Google answers "/" when a '#' comes before the path, even inside the "scheme".
    for url in ("a#b://h/x", "#://h/x", "http://h#x/y"):
        assert path_params_query(url) == "/" == google_path(url)


_BASES = ["http://h", "https://h:8", "//h", "h", "", "a#b://h", "://"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_BASES), url_texts), max_size=8))
def test_allowed_with_a_cached_base_equals_a_fresh_check(urls: list[tuple[str, str]]) -> None:
    body = b"User-agent: *\nDisallow: /a\nDisallow: /*;b$\nAllow: /a?\nDisallow: /$\nDisallow: /:\n"
    shared = RobotsTxt.parse(body)
    for base, rest in urls:
        url = base + rest
        assert shared.allowed(url, "bot") == RobotsTxt.parse(body).decide(url, "bot").allowed, url

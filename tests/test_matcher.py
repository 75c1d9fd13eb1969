"""The compiled matcher against a direct transcription of Google's algorithm.

``reference_allowed`` walks every rule over the path with Google's
position-set matching (O(pattern x path), no indexes); the RuleSet indexes
(sorted prefixes, head buckets, gram index) must give the same answers.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rep.matcher import Rule, RuleSet


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


ALPHABET = "/ab.$*"
patterns = st.text(alphabet=ALPHABET, max_size=8).map(lambda s: "/" + s)
paths = st.text(alphabet="/ab.$", max_size=12).map(lambda s: "/" + s)
rule_lists = st.lists(
    st.tuples(st.booleans(), patterns).map(lambda t: Rule(t[0], t[1], 1)), max_size=60
)


@settings(max_examples=400, deadline=None)
@given(rule_lists, st.lists(paths, min_size=1, max_size=8))
def test_ruleset_equals_google_algorithm(rules: list[Rule], checks: list[str]) -> None:
    ruleset = RuleSet(rules)
    for path in checks:
        expected_allowed, expected_priority = reference_allowed(rules, path)
        best = ruleset.best(path)
        got_allowed = best is None or best.allow
        assert got_allowed == expected_allowed, (rules, path, best)
        if expected_priority > 0:
            assert best is not None and best.priority == expected_priority


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

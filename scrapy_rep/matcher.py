"""Matching: the URL side (SPEC A4), the pattern side (A5) and precedence (A6).

Google's matcher walks every pattern over every path (O(pattern x path) each,
re-run per rule). Here a group's rules are compiled once into indexes so that
a check costs about the same whatever the number of plain prefix rules, and
wildcard patterns are matched segment by segment with ``str.find`` (linear,
no backtracking regex: a hostile pattern cannot go super-linear).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from typing import NamedTuple

# Google's GetPathParamsQuery, as one match: an optional leading "//", then a
# scheme only when "://" comes before any '/', '?' or ';' (otherwise "://" is
# part of the path), then the authority up to the first '/', '?' or ';'.
_BEFORE_PATH = re.compile(r"(?://)?(?:[^/?;]*://)?[^/?;]*")


def path_params_query(url: str) -> str:
    """Path + ;params + ?query of ``url``, as Google's GetPathParamsQuery (SPEC A4).

    Scheme and authority are dropped, so is the #fragment; the result always
    starts with '/'. Nothing is decoded or case-folded.
    """
    start = -1
    if url.startswith(("http://", "https://")):
        # Fast path for the usual URL: the path starts at the first '/' after
        # the authority, unless a '?' or ';' comes first.
        start = url.find("/", 8 if url[4] == "s" else 7)
        if start >= 0 and (url.find("?", 0, start) >= 0 or url.find(";", 0, start) >= 0):
            start = -1
    if start < 0:
        start = _BEFORE_PATH.match(url).end()  # type: ignore[union-attr]  # always matches
    if start == len(url):
        return "/"
    hash_pos = url.find("#")
    if hash_pos < 0:
        path = url[start:]
    elif hash_pos < start:
        return "/"
    else:
        path = url[start:hash_pos]
    return path if path[0] == "/" else "/" + path


_ESCAPABLE = re.compile(rb"%[0-9A-Fa-f]{2}|[\x80-\xff]")


def _escape(match: re.Match[bytes]) -> bytes:
    text = match.group()
    if len(text) == 3:
        return text.upper()
    return b"%%%02X" % text[0]


def normalise_pattern(value: bytes) -> str:
    """An allow/disallow value as matched (SPEC A5, Google's MaybeEscapePattern).

    ``%xx`` gets upper-case hex, bytes >= 0x80 are percent-encoded; nothing is
    decoded. The result is pure ASCII.
    """
    if value.isascii() and b"%" not in value:
        return value.decode("ascii")
    return _ESCAPABLE.sub(_escape, value).decode("ascii")


class Rule(NamedTuple):
    """One allow/disallow line of the selected group, as it takes part in matching."""

    allow: bool
    pattern: str  # normalised (SPEC A5); for index.html rules, the derived "/dir/$"
    line: int

    @property
    def priority(self) -> int:
        # SPEC A6: the normalised pattern's length, '*' and '$' included.
        return len(self.pattern)


# A candidate's rank: higher priority wins; on a tie allow wins (SPEC A6); then
# the earlier line, which is the rule Google reports.
def _rank(rule: Rule) -> tuple[int, bool, int]:
    return (len(rule.pattern), rule.allow, -rule.line)


class _Wildcard(NamedTuple):
    rank: tuple[int, bool, int]
    rule: Rule
    segments: tuple[str, ...]  # the literal runs after the anchored first one
    anchored: bool  # pattern ends with '$'


def _by_rank(item: _Wildcard) -> tuple[int, bool, int]:
    return item.rank


def _index_html_pattern(pattern: str) -> str | None:
    # SPEC A6 (Google's index.html normalisation): "Allow: /d/index.htm…" also
    # allows "/d/" exactly, as the pattern "/d/$".
    slash = pattern.rfind("/")
    if slash >= 0 and pattern.startswith("/index.htm", slash):
        return pattern[: slash + 1] + "$"
    return None


_HEADS_FILTER_MAX = 64


class RuleSet:
    """The compiled rules of one selected group (or of the merged * groups)."""

    __slots__ = (
        "_exact",
        "_first_len",
        "_lengths",
        "_prefix",
        "_wild_by_head",
        "empty",
        "heads",
        "rules",
    )

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        # Plain patterns ("/a/b"): prefix match, indexed by the pattern itself.
        prefix: dict[str, Rule] = {}
        # "/a/b$" with no '*': equality with the path.
        exact: dict[str, Rule] = {}
        # Patterns with '*': bucketed by the literal text before the first '*'.
        wild: dict[str, list[_Wildcard]] = {}
        expanded = list(self.rules)
        for rule in self.rules:
            derived = _index_html_pattern(rule.pattern) if rule.allow else None
            if derived is not None:
                expanded.append(Rule(True, derived, rule.line))
        for rule in expanded:
            pattern = rule.pattern
            # SPEC A5: an empty value matches nothing (Google gives it priority
            # 0, which never decides).
            if not pattern:
                continue
            anchored = pattern.endswith("$")
            body = pattern[:-1] if anchored else pattern
            if anchored and body.endswith("*"):
                anchored = False  # "…*$": the '*' runs to the end anyway
            if "*" not in body:
                table = exact if anchored else prefix
                key = body
                if key not in table or _rank(rule) > _rank(table[key]):
                    table[key] = rule
                continue
            head, *segments = body.split("*")
            wild.setdefault(head, []).append(
                _Wildcard(_rank(rule), rule, tuple(s for s in segments if s), anchored)
            )
        self._prefix = prefix
        self._exact = exact
        self._lengths = sorted({len(p) for p in prefix})
        # Every pattern needs the path to start with its literal head. With few
        # rules, one C-level startswith over all heads rules out the usual case
        # (nothing matches) at once; with many, that scan would grow with the
        # rule count, so then only the per-length lookups run.
        heads = {*prefix, *exact, *wild}
        self.heads: tuple[str, ...] | None = (
            tuple(heads) if len(heads) <= _HEADS_FILTER_MAX else None
        )
        # Wildcard candidates are visited best-rank first, so the first match decides.
        self._wild_by_head = {
            head: sorted(items, key=_by_rank, reverse=True) for head, items in wild.items()
        }
        self._first_len = sorted({len(h) for h in wild})
        self.empty = not (prefix or exact or wild)

    def best(self, path: str) -> Rule | None:
        """The deciding rule for ``path`` (SPEC A6), or None when no rule matches."""
        if self.empty:
            return None
        best: Rule | None = self._exact.get(path)
        best_rank = _rank(best) if best is not None else (-1, False, 0)
        # Only the longest matching plain prefix can decide among plain prefixes:
        # priority is the length, and same-length prefixes of a path are equal.
        lengths = self._lengths
        prefix = self._prefix
        for i in range(bisect.bisect_right(lengths, len(path)) - 1, -1, -1):
            rule = prefix.get(path[: lengths[i]])
            if rule is not None:
                rank = _rank(rule)
                if rank > best_rank:
                    best, best_rank = rule, rank
                break
        if self._first_len:
            found = self._best_wildcard(path, best_rank)
            if found is not None:
                best = found
        return best

    def _best_wildcard(self, path: str, floor: tuple[int, bool, int]) -> Rule | None:
        winner: _Wildcard | None = None
        for length in self._first_len:
            if length > len(path):
                break
            for item in self._wild_by_head.get(path[:length], ()):
                if item.rank <= floor or (winner is not None and item.rank <= winner.rank):
                    break
                if _match_segments(path, length, item.segments, item.anchored):
                    winner = item
                    break
        return winner.rule if winner is not None else None


def _match_segments(path: str, pos: int, segments: tuple[str, ...], anchored: bool) -> bool:
    """Match the part of a '*' pattern after its head, from ``pos`` on.

    Each '*' may swallow any run, so taking every literal segment at its
    leftmost place is optimal (it leaves the most room for the rest): linear in
    the path for each segment, never backtracking. With a final '$' the last
    segment must instead end the path, after everything before it.
    """
    if anchored:
        *middle, last = segments
    else:
        middle, last = list(segments), ""
    for segment in middle:
        found = path.find(segment, pos)
        if found < 0:
            return False
        pos = found + len(segment)
    if anchored:
        return len(path) - len(last) >= pos and path.endswith(last)
    return True

"""Matching: the URL side (SPEC A4), the pattern side (A5) and precedence (A6).

Google's matcher walks every pattern over every path (O(pattern x path) each,
re-run per rule). Here a group's rules are compiled once into indexes so that
a check costs about the same whatever the number of plain prefix rules, and
wildcard patterns are matched segment by segment with ``str.find`` (linear,
no backtracking regex: a hostile pattern cannot go super-linear). A group of
up to 64 rules answers its first check by trying every rule and builds its
indexes on the next one: see ``RuleSet``.
"""

from __future__ import annotations

import re
from bisect import bisect_right as _bisect_right
from collections.abc import Iterable, Sequence
from typing import NamedTuple

# Google's GetPathParamsQuery, as one match: an optional leading "//", then a
# scheme only when "://" comes before any '/', '?' or ';' (otherwise "://" is
# part of the path), then the authority up to the first '/', '?' or ';'.
_BEFORE_PATH = re.compile(r"(?://)?(?:[^/?;]*://)?[^/?;]*")


# The usual URL, "scheme://authority/path...", with no '#' before the path
# (Google answers "/" for a '#' there): group 1 is the URL's base, group 2 the
# path up to the '#' or the first NUL (see read_path). Anything else takes the
# general route.
_USUAL_URL = re.compile(r"([^/?;#]*://[^/?;#]*)(/[^#\0]*)")

#: The base of a usual URL with an empty scheme and authority: a valid start
#: value for ``read_path``'s cache that hardly ever matches.
EMPTY_BASE = "://"


def path_params_query(url: str) -> str:
    """Path + ;params + ?query of ``url``, as Google's GetPathParamsQuery (SPEC A4).

    Scheme and authority are dropped, so is the #fragment; the result always
    starts with '/'. Nothing is decoded or case-folded. The path ends at its
    first NUL: Google's matcher receives it as a C string (a NUL in the
    authority is just a byte of the authority).
    """
    return read_path(url)[0]


def read_path(url: str) -> tuple[str, str | None]:
    """``url``'s path as ``path_params_query``, and its base (scheme://authority)
    when it is a usual URL.

    Every URL that starts with that base followed by '/' and has no '#' has
    the rest as its path: callers that see many URLs of one origin cache the
    base and skip the parse (``RobotsTxt.allowed``).
    """
    usual = _USUAL_URL.match(url)
    if usual is not None:
        return usual.group(2), usual.group(1)
    start = _BEFORE_PATH.match(url).end()  # type: ignore[union-attr]  # always matches
    if start == len(url):
        return "/", None
    hash_pos = url.find("#")
    if hash_pos < 0:
        path = url[start:]
    elif hash_pos < start:
        return "/", None
    else:
        path = url[start:hash_pos]
    if "\0" in path:
        path = path[: path.find("\0")]
    return (path if path[:1] == "/" else "/" + path), None


_ESCAPABLE = re.compile(rb"%[0-9A-Fa-f]{2}|[\x80-\xff]")


def _escape(match: re.Match[bytes]) -> bytes:
    text = match.group()
    if len(text) == 3:
        return text.upper()
    return b"%%%02X" % text[0]


def normalise_pattern(value: str) -> str:
    """An allow/disallow value as matched (SPEC A5, Google's MaybeEscapePattern).

    ``value`` is the value's bytes as Latin-1 text (one character per byte, as
    the parser gives it). ``%xx`` gets upper-case hex, bytes >= 0x80 are
    percent-encoded; nothing is decoded. The result is pure ASCII.
    """
    if value.isascii() and "%" not in value:
        return value
    return _ESCAPABLE.sub(_escape, value.encode("latin-1")).decode("ascii")


class Rule(NamedTuple):
    """One allow/disallow line of the selected group, as it takes part in matching."""

    allow: bool
    pattern: str  # normalised (SPEC A5); for index.html rules, the derived "/dir/$"
    line: int

    @property
    def priority(self) -> int:
        # SPEC A6: the normalised pattern's length, '*' and '$' included.
        return len(self.pattern)


# A candidate's rank as one int (compared in the hot path without building
# tuples): higher priority wins; on a tie allow wins (SPEC A6); then the
# earlier line, which is the rule Google reports. Lines stay below 2**20: a
# body counts 512,000 bytes at most.
_LINE_BITS = 20
#: Set in the rank of every allow rule.
ALLOW_BIT = 1 << _LINE_BITS


def _rank(allow: bool, pattern: str, line: int) -> int:
    line_order = ALLOW_BIT - 1 - (line if line < ALLOW_BIT else ALLOW_BIT - 1)
    return (len(pattern) << (_LINE_BITS + 1)) | (allow << _LINE_BITS) | line_order


def rank_line(rank: int) -> int:
    """The line of the rule that has ``rank`` (one of ``RuleSet.rank``'s answers)."""
    return ALLOW_BIT - 1 - (rank & (ALLOW_BIT - 1))


# How a '*' pattern's segments after its head are matched (see _Wildcard.kind).
_FIND, _ENDS, _SEGMENTS = 0, 1, 2


# One '*' pattern past its head, as a plain tuple (cheaper to build than a
# NamedTuple; ranks are unique, so a list of them sorts by rank):
# - its rank;
# - its kind: _FIND, one segment anywhere ("/*?"); _ENDS, one segment ending
#   the path ("/*.pdf$"); _SEGMENTS, anything else, by _match_segments;
# - the first literal run after the head;
# - all literal runs after the head;
# - whether the pattern ends with '$'.
_Wildcard = tuple[int, int, str, tuple[str, ...], bool]


def _index_html_pattern(pattern: str) -> str | None:
    # SPEC A6 (Google's index.html normalisation): "Allow: /d/index.htm…" also
    # allows "/d/" exactly, as the pattern "/d/$".
    slash = pattern.rfind("/")
    if slash >= 0 and pattern.startswith("/index.htm", slash):
        return pattern[: slash + 1] + "$"
    return None


def _first(items: Sequence[_Wildcard], path: str, start: int, floor: int) -> int:
    """The rank of the first item of ``items`` (best rank first) above ``floor``
    that matches ``path`` after its head (which ends at ``start``), else ``floor``."""
    for rank, kind, segment, segments, anchored in items:
        if rank <= floor:
            break
        if kind == _FIND:
            if path.find(segment, start) >= 0:
                return rank
        elif kind == _ENDS:
            if path.endswith(segment) and len(path) - len(segment) >= start:
                return rank
        elif _match_segments(path, start, segments, anchored):
            return rank
    return floor


_GRAM = 3
#: A head's '*' patterns are tried one by one up to this many; more get a gram
#: index so a check does not grow with them.
_SCAN_MAX = 16


class _GramIndex:
    """Candidate '*' patterns for a path, found by 3-grams of their literal text.

    A pattern can only match a path that contains each of its literal
    segments, so each pattern is filed under one 3-gram of its segments (the
    one fewest patterns share) and only patterns whose gram occurs in the path
    are tried. Patterns with no segment of 3 bytes are always tried.
    """

    __slots__ = ("_always", "_by_gram")

    def __init__(self, items: list[_Wildcard]) -> None:
        grams_of = [
            {seg[i : i + _GRAM] for seg in item[3] for i in range(len(seg) - _GRAM + 1)}
            for item in items
        ]
        counts: dict[str, int] = {}
        for grams in grams_of:
            for gram in grams:
                counts[gram] = counts.get(gram, 0) + 1
        always: list[_Wildcard] = []
        by_gram: dict[str, list[_Wildcard]] = {}
        for item, grams in zip(items, grams_of, strict=True):
            if grams:
                by_gram.setdefault(min(grams, key=counts.__getitem__), []).append(item)
            else:
                always.append(item)
        # Tuples, as the nodes (see _Node).
        self._always = tuple(always)
        self._by_gram = {gram: tuple(filed) for gram, filed in by_gram.items()}

    def first(self, path: str, start: int, floor: int) -> int:
        by_gram = self._by_gram
        found = list(self._always)
        for gram in {path[i : i + _GRAM] for i in range(start, len(path) - _GRAM + 1)}:
            items = by_gram.get(gram)
            if items is not None:
                found.extend(items)
        found.sort(reverse=True)
        return _first(found, path, start, floor)


#: The nodes of a small group of plain prefixes (``rank`` needs no others).
_PREFIXES_ONLY: Sequence[_Node] = []  # a sentinel: compared by identity
_NO_ITEMS: tuple[_Wildcard, ...] = ()  # every key without few '*' patterns


# What one key (a plain prefix, a '*' pattern's head, or both) contributes, as
# a plain tuple (one per key). The indexes are tuples of strings and numbers, never
# lists: the cyclic GC stops tracking such tuples, and a broad crawl keeps one parsed
# robots.txt per site, which every full collection would otherwise walk again.
# - the rank of the best plain prefix rule equal to the key, or -1;
# - the key's '*' patterns, best rank first, when few ...
# - ... or their gram index, when many;
# - the longest other key that is a prefix of this one, or -1;
# - the best rank this key and its parents can give: the walk stops below it.
_Node = tuple[int, tuple[_Wildcard, ...], "_GramIndex | None", int, int]


#: A group of up to _SCANNED_RULES rules answers this many checks by trying
#: every rule on the path: a site asked once never pays for the indexes (a
#: scan costs less than building them, '*' patterns included). Measured on the
#: corpus, more scans made a site's first 16 checks slower: an indexed check is
#: cheaper than a scan of even a few rules.
_SCANNED_CHECKS = 1
#: Measured on the corpus: 16 made the median first check slower, 256 the
#: median 16 checks.
_SCANNED_RULES = 64
#: Up to this many keys, a group of plain prefixes is indexed as one sorted
#: list walked back from the path (see ``RuleSet.rank``).
_FEW_KEYS = 64


def _parts(pattern: str) -> tuple[str, tuple[str, ...] | None, bool]:
    """A non-empty pattern as matched (SPEC A5): the text before its first '*', the literal
    runs after it (None without a '*'; empty runs dropped, as each '*' may swallow any run),
    and whether it must end the path (a final '$'; "...*$" need not: the '*' runs on)."""
    anchored = pattern[-1] == "$"
    body = pattern[:-1] if anchored else pattern
    if "*" not in body:
        return body, None, anchored
    head, *rest = body.split("*")
    return head, tuple(filter(None, rest)), anchored and body[-1] != "*"


def matches(pattern: str, path: str) -> bool:
    """Does the normalised, non-empty ``pattern`` match ``path`` (SPEC A5)? One pattern,
    split as it comes rather than indexed."""
    head, segments, anchored = _parts(pattern)
    if segments is None:
        return path == head if anchored else path.startswith(head)
    return path.startswith(head) and _match_segments(path, len(head), segments, anchored)


def _scan(rules: Sequence[tuple[bool, str, int]], path: str) -> int:
    """``RuleSet.rank`` without indexes: every rule tried on ``path``."""
    found = -1
    for allow, pattern, line in rules:
        if "*" in pattern or pattern[-1:] == "$":
            if not matches(pattern, path):
                if allow and "/index.htm" in pattern:
                    found = _derived(found, pattern, line, path)
                continue
        # SPEC A5: an empty value matches nothing.
        elif not pattern or not path.startswith(pattern):
            if allow and "/index.htm" in pattern:
                found = _derived(found, pattern, line, path)
            continue
        rank = _rank(allow, pattern, line)
        if rank > found:
            found = rank
    return found


def _derived(found: int, pattern: str, line: int, path: str) -> int:
    # SPEC A6: the "/dir/$" derived from an index.html allow rule, for _scan.
    derived = _index_html_pattern(pattern)
    if derived is not None and matches(derived, path):
        return max(found, _rank(True, derived, line))
    return found


class RuleSet:
    """The compiled rules of one selected group (or of the merged * groups).

    All plain prefixes and all '*' pattern heads are one sorted list of keys:
    a check is one bisect, then a walk up the chain of keys that are prefixes
    of the path, which stops as soon as nothing left on it can beat the best
    rank found. A group of plain prefixes with few keys (43 % of the groups
    asked on the corpus) is indexed as the sorted keys alone, behind one
    ``str.startswith`` over all of them. A group of up to 64 rules (87 %)
    answers its first check by trying every rule instead. All give the same
    answers.
    """

    __slots__ = (
        "_exact",
        "_keys",
        "_nodes",
        "_parents",
        "_prefixes",
        "_ranks",
        "_rules",
        "_scans",
        "empty",
    )

    def __init__(self, rules: Iterable[tuple[bool, str, int]]) -> None:
        """``rules``: (allow, normalised pattern, line) of the group(s), as ``Rule`` or tuples.

        Built on the first question about the group (a group the crawler never
        asks about costs nothing more).
        """
        self._rules = rules if isinstance(rules, (list, tuple)) else tuple(rules)
        # True once known to match nothing (SPEC A5: an empty value matches
        # nothing): then no path needs reading. The indexes find it out.
        self.empty = not self._rules
        # Checks left to answer by a scan before the indexes are built.
        self._scans = _SCANNED_CHECKS if len(self._rules) <= _SCANNED_RULES else 0
        self._nodes: Sequence[_Node] | None = None

    def _index(self) -> Sequence[_Node]:
        """Build the indexes ``rank`` walks once the scans are spent."""
        given = self._rules
        # All patterns at once, to test for what few groups have.
        text = "\n".join([rule[1] for rule in given])
        # Plain patterns ("/a/b", or "/a/b*"): prefix match; best rank per prefix.
        prefix: dict[str, int] = {}
        # "/a/b$" with no '*': equality with the path.
        exact: dict[str, int] = {}
        # Other patterns with '*': by the literal text before the first '*'.
        wild: dict[str, list[_Wildcard]] = {}
        if "*" not in text and "$" not in text and "/index.htm" not in text:
            # The usual group: plain prefixes only (no index.html rule, which
            # derives a '$' pattern). Sorted, the best rank per key comes last.
            # (_rank, inlined: this runs once per rule of every group asked.)
            ranked = sorted(
                [
                    (
                        (len(pattern) << (_LINE_BITS + 1))
                        | (allow << _LINE_BITS)
                        | (ALLOW_BIT - 1 - line if line < ALLOW_BIT else 0),
                        pattern,
                    )
                    for allow, pattern, line in given
                    if pattern  # SPEC A5: an empty value matches nothing.
                ]
            )
            prefix = dict([(pattern, rank) for rank, pattern in ranked])
            self.empty = not prefix
            if len(prefix) <= _FEW_KEYS:
                self._keys = self._prefixes = tuple(sorted(prefix))
                self._ranks = tuple([prefix[key] for key in self._keys])
                self._nodes = _PREFIXES_ONLY
                return _PREFIXES_ONLY
            given = []  # all filed in prefix
        elif "/index.htm" in text:
            given = list(given)
            for allow, pattern, line in self._rules:
                derived = _index_html_pattern(pattern) if allow else None
                if derived is not None:
                    given.append((True, derived, line))
        for allow, pattern, line in given:
            # SPEC A5: an empty value matches nothing.
            if not pattern:
                continue
            # _rank, inlined: this loop runs once per rule of every group asked.
            line_order = ALLOW_BIT - 1 - line if line < ALLOW_BIT else 0
            rank = (len(pattern) << (_LINE_BITS + 1)) | (allow << _LINE_BITS) | line_order
            if "*" not in pattern and pattern[-1] != "$":
                # The usual rule, a plain prefix.
                if prefix.get(pattern, -1) < rank:
                    prefix[pattern] = rank
                continue
            head, segments, anchored = _parts(pattern)
            if segments is None:
                table = exact if anchored else prefix
                if table.get(head, -1) < rank:
                    table[head] = rank
                continue
            if segments:
                kind = _SEGMENTS if len(segments) > 1 else _ENDS if anchored else _FIND
                item = (rank, kind, segments[0], segments, anchored)
                items = wild.get(head)
                if items is None:
                    wild[head] = [item]
                else:
                    items.append(item)
            elif prefix.get(head, -1) < rank:
                # No literal after any '*' ("/a*", "/a**$"): a prefix match of the
                # head, with the whole pattern's priority.
                prefix[head] = rank
        self._exact = exact
        keys = self._keys = tuple(sorted(prefix.keys() | wild.keys() if wild else prefix))
        self.empty = not keys and not exact
        # Each key's parent: the longest other key that is a prefix of it, or
        # -1. This makes "which keys are prefixes of a path" O(log n) plus their
        # count: every key that is a prefix of ``path`` sorts at or before it,
        # and the greatest key <= ``path`` starts with each of them (anything
        # between a prefix of ``path`` and ``path`` starts with that prefix). So
        # they are that key's chain of parents, and the walk stops at the first
        # that fits: no scan over the whole set, however many rules a file has.
        parents: list[int] = []
        chain: list[int] = []  # the keys before this one that are prefixes of each other
        nodes: list[_Node] = []
        for i, key in enumerate(keys):
            while chain and not key.startswith(keys[chain[-1]]):
                chain.pop()
            parent = chain[-1] if chain else -1
            parents.append(parent)
            chain.append(i)
            prefix_rank = prefix.get(key, -1)
            if not wild:
                # A parent key is shorter, but may rank higher: "/**" files the key "/" with
                # its whole length, 3, above the key "/(" of a rule "/(".
                chain_max = prefix_rank if parent < 0 else max(prefix_rank, nodes[parent][4])
                nodes.append((prefix_rank, _NO_ITEMS, None, parent, chain_max))
                continue
            filed = wild.get(key)
            few = _NO_ITEMS
            grams = None
            best_here = prefix_rank
            if filed:
                filed.sort(reverse=True)
                best_here = max(prefix_rank, filed[0][0])
                if len(filed) > _SCAN_MAX:
                    grams = _GramIndex(filed)
                else:
                    few = tuple(filed)
            chain_max = best_here if parent < 0 else max(best_here, nodes[parent][4])
            nodes.append((prefix_rank, few, grams, parent, chain_max))
        self._parents = tuple(parents)
        self._nodes = tuple(nodes)
        return self._nodes

    def rank(self, path: str) -> int:
        """The deciding rule's rank for ``path`` (SPEC A6), or -1 when no rule matches.

        The rule allows when ``rank & ALLOW_BIT``; ``best`` gives the rule itself.
        """
        nodes = self._nodes
        if nodes is None:
            if self._scans:
                self._scans -= 1
                return _scan(self._rules, path)
            nodes = self._index()
        if nodes is _PREFIXES_ONLY:
            # The longest prefix decides: it is the greatest key <= path that
            # is a prefix of it (the keys between it and the path all extend
            # it; few, with so few keys).
            if not path.startswith(self._prefixes):
                return -1
            keys = self._keys
            i = _bisect_right(keys, path) - 1
            while not path.startswith(keys[i]):
                i -= 1
            return self._ranks[i]
        exact = self._exact
        floor = exact.get(path, -1) if exact else -1
        keys = self._keys
        parents = self._parents
        i = _bisect_right(keys, path) - 1
        while i >= 0 and not path.startswith(keys[i]):
            i = parents[i]
        # Every key up the chain from here is a prefix of the path too.
        while i >= 0:
            prefix_rank, items, grams, parent, chain_max = nodes[i]
            if chain_max <= floor:
                break
            if prefix_rank > floor:
                floor = prefix_rank
            if items:
                floor = _first(items, path, len(keys[i]), floor)
            elif grams is not None:
                floor = grams.first(path, len(keys[i]), floor)
            i = parent
        return floor

    def best(self, path: str) -> Rule | None:
        """The deciding rule for ``path`` (SPEC A6), or None when no rule matches."""
        rank = self.rank(path)
        if rank < 0:
            return None
        # Explanations only: find the rule (or the index.html pattern derived
        # from it) that has this rank.
        for allow, pattern, line in self._rules:
            if pattern and _rank(allow, pattern, line) == rank:
                return Rule(allow, pattern, line)
            derived = _index_html_pattern(pattern) if allow else None
            if derived is not None and _rank(True, derived, line) == rank:
                return Rule(True, derived, line)
        raise AssertionError(f"no rule has rank {rank}")


def _match_segments(path: str, pos: int, segments: Sequence[str], anchored: bool) -> bool:
    """Match the part of a '*' pattern after its head, from ``pos`` on.

    Each '*' may swallow any run, so taking every literal segment at its
    leftmost place is optimal (it leaves the most room for the rest): linear in
    the path for each segment, never backtracking. With a final '$' the last
    segment must instead end the path, after everything before it.
    """
    middle: Sequence[str] = segments
    last = ""
    if anchored:
        middle, last = segments[:-1], segments[-1]
    for segment in middle:
        found = path.find(segment, pos)
        if found < 0:
            return False
        pos = found + len(segment)
    if anchored:
        return len(path) - len(last) >= pos and path.endswith(last)
    return True

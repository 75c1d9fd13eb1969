"""The usage preferences of one selected group (SPEC E2): its Content-Usage rules, matched to
a path by the Allow/Disallow matcher (``RuleSet``), and its Content-Signal lines; and the
file-wide statements of the lines before the first group (SPEC E1), read the same way."""

from __future__ import annotations

import re

from scrapy_rep.core.matcher import RuleSet, matches, normalise_pattern, rank_line
from scrapy_rep.core.parser import Key
from scrapy_rep.core.usage import (
    NO_PREFERENCE,
    UsagePrefs,
    UsageSource,
    combine,
    parse_content_signal,
    parse_content_usage,
)

#: A Content-Usage or Content-Signal line of a group: (line, key, value as Latin-1 text, one
#: character per byte, as the parser gives it).
UsageLine = tuple[int, Key, str]

# attach-05 §3.2: a value that starts with '/' has a path, which ends just before the first
# SP or HTAB; the rest, after that separator (the ABNF's 1*WS), is the statement.
_PATH = re.compile(r"(/[^ \t]*)[ \t]*")


def _statement(line: int, key: Key, value: str, where: str | None) -> tuple[str | None, UsagePrefs]:
    """A line's path (normalised, SPEC A5) or None, and what its statement says."""
    shown = value.encode("latin-1").decode("utf-8", "replace")
    if key is Key.CONTENT_SIGNAL:
        # SPEC E4: Content-Signal has no path: it speaks for the whole group (or file).
        source = UsageSource("Content-Signal", shown, line, where)
        return None, parse_content_signal(value.encode("latin-1"), source)
    source = UsageSource("Content-Usage", shown, line, where)
    path = _PATH.match(value)
    if path is None:
        return None, parse_content_usage(value.encode("latin-1"), source)
    statement = value[path.end() :].encode("latin-1")
    return normalise_pattern(path.group(1)), parse_content_usage(statement, source)


class GroupUsage:
    """The usage lines of the selected group(s), compiled once; ``prefs`` answers per path.

    Also the file-wide lines (SPEC E1), with ``where`` = ``FILE_WIDE``: their paths select
    exactly as a group's do. ``everywhere``: a statement that applies on every path besides
    the lines' own (a file-wide one that has no path).
    """

    __slots__ = (
        "_fallback",
        "_pattern_at",
        "_ruleset",
        "_signals",
        "_statements",
        "_ties",
    )

    def __init__(
        self,
        lines: list[UsageLine],
        where: str | None = None,
        everywhere: UsagePrefs = NO_PREFERENCE,
    ) -> None:
        path_less: list[UsagePrefs] = []
        signals: list[UsagePrefs] = []
        by_pattern: dict[str, list[UsagePrefs]] = {}
        first_line: dict[str, int] = {}
        for line, key, value in lines:
            pattern, prefs = _statement(line, key, value, where)
            if key is Key.CONTENT_SIGNAL:
                signals.append(prefs)
            elif pattern is None:
                path_less.append(prefs)
            else:
                by_pattern.setdefault(pattern, []).append(prefs)
                first_line.setdefault(pattern, line)
        # SPEC E5: Content-Signal lines are statements of their own, combined with whatever
        # Content-Usage statement the path selects; so is ``everywhere`` (SPEC E1).
        self._signals = combine(everywhere, *signals)
        # SPEC E2 (attach-05 §3.1): rules with identical paths all apply, combined.
        self._statements = {pattern: combine(*found) for pattern, found in by_pattern.items()}
        # SPEC E2: a path-less rule is a zero-length path, below every path rule.
        self._fallback = combine(*path_less, self._signals)
        # The longest match, by the Allow/Disallow matcher (attach-05 §3.1): one rule per
        # distinct pattern, at its first line, so the chosen rank names the pattern.
        self._ruleset = RuleSet([(False, pattern, line) for pattern, line in first_line.items()])
        self._pattern_at = {line: pattern for pattern, line in first_line.items()}
        # SPEC E2: the patterns of each length at which two different patterns can both
        # match a path: only where one has a '*' (two plain prefixes of one length that match
        # are the same text; "/x$" matches only a path shorter than itself).
        lengths: dict[int, list[str]] = {}
        for pattern in first_line:
            lengths.setdefault(len(pattern), []).append(pattern)
        self._ties = {
            length: found
            for length, found in lengths.items()
            if len(found) > 1 and any("*" in pattern for pattern in found)
        }

    @property
    def constant(self) -> UsagePrefs | None:
        """The preferences for every path when no line has a path; None when paths differ."""
        return self._fallback if self._ruleset.empty else None

    def prefs(self, path: str) -> UsagePrefs:
        """The preferences for ``path`` (SPEC A4), a path the group lets be crawled."""
        if self._ruleset.empty:
            return self._fallback
        rank = self._ruleset.rank(path)
        if rank < 0:
            return self._fallback
        best = self._pattern_at[rank_line(rank)]
        # SPEC E2: every matching pattern of the greatest length applies, combined. (Made per
        # question, not kept per pattern: a file of many patterns and many signals would
        # make that table quadratic.)
        chosen = [self._statements[best]]
        for pattern in self._ties.get(len(best), ()):
            if pattern != best and matches(pattern, path):
                chosen.append(self._statements[pattern])
        return combine(*chosen, self._signals)


class FileWideUsage:
    """A group's usage combined with file-wide statements that have paths (SPEC E1)."""

    __slots__ = ("_file", "_group")

    def __init__(self, file: GroupUsage, group: GroupUsage) -> None:
        self._file = file
        self._group = group

    def prefs(self, path: str) -> UsagePrefs:
        """The preferences for ``path``, a path the file lets this crawler fetch."""
        # SPEC E1, E5: most restrictive, so a group's yes never undoes a file-wide no; the
        # file-wide lines first, as raw signals are kept in file order (SPEC E4).
        return combine(self._file.prefs(path), self._group.prefs(path))


def selected_usage(
    lines: list[UsageLine], file_wide: GroupUsage | None
) -> GroupUsage | FileWideUsage:
    """The selected group's usage ``lines`` compiled, with the file's file-wide lines, if any,
    compiled (SPEC E1)."""
    if file_wide is None:
        return GroupUsage(lines)
    everywhere = file_wide.constant
    if everywhere is not None:
        # The same on every path (Content-Signal, path-less Content-Usage): folded into the
        # group's statements once, so answering costs what it costs without it.
        return GroupUsage(lines, everywhere=everywhere)
    return FileWideUsage(file_wide, GroupUsage(lines))

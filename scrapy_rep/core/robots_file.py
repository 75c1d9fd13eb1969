"""``RobotsTxt``: a parsed robots.txt, its groups (SPEC A3) and its answers.

The parser (``parser.py``) hands over records; this module groups them and
selects, per crawler token, which compiled ``RuleSet`` (``matcher.py``) applies.
"""

from __future__ import annotations

from bisect import bisect_left as _bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter

from scrapy_rep.core._usage_rules import (
    FileWideUsage,
    GroupUsage,
    UsageLine,
    selected_usage,
)
from scrapy_rep.core.matcher import (
    ALLOW_BIT,
    EMPTY_BASE,
    Rule,
    RuleSet,
    normalise_pattern,
    path_params_query,
    read_path,
)
from scrapy_rep.core.parser import WHITESPACE, Key, Lines, parse_lines
from scrapy_rep.core.tokens import extract_token, fold
from scrapy_rep.core.usage import FILE_WIDE, NO_PREFERENCE, UsagePrefs

__all__ = ["Decision", "Group", "RobotsTxt", "Rule"]

_EMPTY = RuleSet(())
_NOTHING_ASKED = object()
# What the questions take: one token, a preference list, or None (no token).
_Tokens = str | Sequence[str] | None
_USER_AGENT, _SITEMAP = Key.USER_AGENT, Key.SITEMAP
_CONTENT_USAGE, _CONTENT_SIGNAL = Key.CONTENT_USAGE, Key.CONTENT_SIGNAL
_line_of = itemgetter(2)  # of a rule record
_usage_line_of = itemgetter(0)  # of a UsageLine
_NO_USAGE_LINES: list[UsageLine] = []  # shared, never changed


class Group:
    """One run of user-agent lines and the rules that follow them."""

    __slots__ = (
        "_end",
        "_file_rules",
        "_plain",
        "_rules",
        "agents",
        "crawl_delay",
        "is_global",
        "line",
    )

    def __init__(self, line: int, lines: Lines) -> None:
        self.line = line  # the first user-agent line
        # Tokens as cut by SPEC A3, ASCII-folded. Tuples here and in ``rules``: the cyclic GC
        # stops tracking a tuple of strings, and a broad crawl keeps a parsed file per site.
        self.agents: tuple[str, ...] = ()
        self.is_global = False  # '*' named
        self.crawl_delay: float | None = None
        # The file's rules: the group's are taken from them when first asked
        # for (most groups of a file are other crawlers' and never are).
        self._file_rules = lines.rules
        self._plain = lines.plain
        self._end: int | None = None  # the next group's first line
        self._rules: tuple[tuple[bool, str, int], ...] | None = None

    @property
    def rules(self) -> tuple[tuple[bool, str, int], ...]:
        """(allow, normalised pattern, line): Rule's fields, as plain tuples
        (building a NamedTuple per line is slow); only explanations make Rules."""
        if self._rules is None:
            # The file's rules from this group's first line to the next group's.
            every = self._file_rules
            start = _bisect_left(every, self.line, key=_line_of)
            end = len(every) if self._end is None else _bisect_left(every, self._end, key=_line_of)
            if self._plain:
                self._rules = tuple(every[start:end])
            else:
                self._rules = tuple(
                    [(allow, normalise_pattern(v), line) for allow, v, line in every[start:end]]
                )
        return self._rules

    def __repr__(self) -> str:
        return f"Group(line={self.line}, agents={self.agents}, is_global={self.is_global})"


@dataclass(frozen=True)
class Decision:
    """Why a URL is allowed or not, for one crawler."""

    allowed: bool
    rule: Rule | None  # the deciding rule; None when nothing matched
    token: str | None  # the crawler token whose own group applied; None for '*'/none
    reason: str


class RobotsTxt:
    """A parsed robots.txt with Google's semantics. Build it with ``parse``."""

    def __init__(
        self, groups: list[Group], sitemaps: list[str], usage_lines: list[UsageLine] | None = None
    ) -> None:
        self.groups = groups
        self.sitemaps = sitemaps
        # SPEC E1: the Content-Usage and Content-Signal lines, in file order (those before
        # the first group first: file-wide); compiled per selected group on the first usage()
        # question about it (nothing is allocated for a file without them: most files).
        self._usage_lines = usage_lines or _NO_USAGE_LINES
        self._usage: dict[str | None, GroupUsage | FileWideUsage] | None = None
        # The file-wide lines compiled, on the first usage() question; None: there are none.
        self._file_wide: GroupUsage | None = None
        # Folded token -> the groups naming it, for the tokens asked about (a crawler asks
        # with a few): parsing stays cheap for files never asked, and nothing is kept for
        # the other crawlers' groups, which most of a file's are.
        self._by_agent: dict[str, tuple[Group, ...]] = {}
        self._global: RuleSet | None = None
        self._specific: dict[str, RuleSet] = {}
        # The last tokens asked about, the token whose group applied and its
        # rules: a crawler asks with the same token object again and again.
        self._last_tokens: object = _NOTHING_ASKED
        self._last_token: str | None = None
        self._last_rules = _EMPTY
        # The base ("scheme://authority") of the last usual URL asked about, with
        # the '/' after it: the URLs checked against one robots.txt nearly all
        # share it (see read_path).
        self._base = EMPTY_BASE + "/"
        self._base_len = len(EMPTY_BASE)

    @property
    def rule_count(self) -> int:
        """The allow/disallow lines inside groups."""
        return sum(len(g.rules) for g in self.groups)

    def _naming(self, folded: str) -> tuple[Group, ...]:
        """The groups that name the folded token ``folded``, in file order."""
        groups = self._by_agent.get(folded)
        if groups is None:
            groups = tuple([g for g in self.groups if folded in g.agents])
            self._by_agent[folded] = groups
        return groups

    @classmethod
    def parse(cls, body: bytes | bytearray | memoryview | str) -> RobotsTxt:
        """Parse a robots.txt body. Never raises; only the first 512,000 bytes count."""
        groups: list[Group] = []
        sitemaps: list[str] = []
        usage_lines: list[UsageLine] = []
        current: Group | None = None
        agents: list[str] = []  # the current group's
        lines = parse_lines(body)
        rules = lines.rules
        # Rule lines before the last user-agent line seen (SPEC A3: rules before
        # the first one belong to no group).
        rules_before = 0
        for line, key, name, value in lines.others:
            if key is _USER_AGENT:
                # SPEC A3: only an allow/disallow line closes a run of
                # user-agent lines: one here starts a group if a rule line
                # came since the last user-agent line.
                now_before = _bisect_left(rules, line, rules_before, key=_line_of)
                if current is None or now_before > rules_before:
                    if current is not None:
                        current._end = line
                        current.agents = tuple(agents)
                        agents = []
                    current = Group(line, lines)
                    groups.append(current)
                rules_before = now_before
                # SPEC A3: "*" alone or followed by whitespace is the global agent.
                if value[:1] == "*" and (len(value) == 1 or value[1] in WHITESPACE):
                    current.is_global = True
                else:
                    # A token is ASCII letters, '_' and '-': lower() folds ASCII.
                    agents.append(extract_token(value).lower())
            elif key is _SITEMAP:
                # SPEC A7: sitemaps are global, in file order.
                if value:
                    sitemaps.append(value.encode("latin-1").decode("utf-8", "replace"))
            elif key is _CONTENT_USAGE or key is _CONTENT_SIGNAL:
                # SPEC E1: a rule of the group it sits in; before the first user-agent line
                # (unlike Allow/Disallow, SPEC A3) a file-wide statement. usage() tells them
                # apart by line number.
                usage_lines.append((line, key, value))
            elif current is not None and current.crawl_delay is None:
                if name.lower() == "crawl-delay":
                    current.crawl_delay = _parse_delay(value.encode("latin-1"))
        if current is not None:
            current.agents = tuple(agents)
        return cls(groups, sitemaps, usage_lines or None)

    def _select(self, tokens: _Tokens) -> tuple[str | None, Sequence[Group]]:
        # SPEC C2: the first token with a group of its own wins, else '*'.
        # None (no User-Agent) names no token: only the '*' groups apply.
        for token in (tokens,) if isinstance(tokens, str) else tokens or ():
            groups = self._naming(fold(token))
            if groups:
                return token, groups
        return None, [g for g in self.groups if g.is_global]

    def _rules(self, tokens: _Tokens) -> tuple[str | None, RuleSet]:
        if tokens is self._last_tokens:
            return self._last_token, self._last_rules
        token, ruleset = self._lookup(tokens)
        if tokens is None or isinstance(tokens, (str, tuple)):  # immutable: identity is equality
            self._last_tokens, self._last_token, self._last_rules = tokens, token, ruleset
        return token, ruleset

    def _lookup(self, tokens: _Tokens) -> tuple[str | None, RuleSet]:
        token, groups = self._select(tokens)
        if token is None:
            return None, self._global_rules()
        folded = fold(token)
        ruleset = self._specific.get(folded)
        if ruleset is None:
            # SPEC A3: all groups naming the agent are merged, in file order;
            # an empty one still hides '*'.
            ruleset = RuleSet(_merged_rules(groups))
            self._specific[folded] = ruleset
        return token, ruleset

    def _global_rules(self) -> RuleSet:
        if self._global is None:
            rules = _merged_rules([g for g in self.groups if g.is_global])
            self._global = RuleSet(rules) if rules else _EMPTY
        return self._global

    def allowed(self, url: str, tokens: _Tokens) -> bool:
        """May a crawler called ``tokens`` fetch ``url``? (SPEC A3-A6)

        ``tokens`` is one token, a preference list, or None (or an empty list)
        for a crawler with no token: only the ``*`` groups apply.
        """
        ruleset = self._last_rules if tokens is self._last_tokens else self._rules(tokens)[1]
        if ruleset.empty:
            return True
        # A '#' or a NUL needs read_path (the fragment, and the path's end at
        # a NUL: see path_params_query).
        if url.startswith(self._base) and "#" not in url and "\0" not in url:
            path = url[self._base_len :]
        else:
            path, usual_base = read_path(url)
            if usual_base is not None:
                self._base, self._base_len = usual_base + "/", len(usual_base)
        rank = ruleset.rank(path)
        return rank < 0 or (rank & ALLOW_BIT) != 0

    def decide(self, url: str, tokens: _Tokens) -> Decision:
        """``allowed`` with the deciding rule and the group used, for explanations."""
        token, ruleset = self._rules(tokens)
        rule = ruleset.best(path_params_query(url))
        names = [tokens] if isinstance(tokens, str) else list(tokens or ())
        asked = f"no group for {', '.join(names)}" if names else "no token given"
        if token is not None:
            reason = f"group for {token}"
        elif any(g.is_global for g in self.groups):
            reason = f"{asked}; used *"
        else:
            reason = f"{asked} and no * group; everything allowed"
        return Decision(rule is None or rule.allow, rule, token, reason)

    def usage(self, url: str, tokens: _Tokens, *, allowed: bool | None = None) -> UsagePrefs:
        """What the selected group, and the file-wide lines before the first group, say
        ``url``'s content may be used for (SPEC E1, E2).

        The group is the one ``allowed`` uses (SPEC A3, C2). A URL it disallows has no
        preference: every label is None. ``tokens`` as for ``allowed``; ``allowed``: what
        ``allowed(url, tokens)`` answered, when the caller asked it already (not matched again).
        """
        if not self._usage_lines:
            return NO_PREFERENCE
        if not (self.allowed(url, tokens) if allowed is None else allowed):
            return NO_PREFERENCE
        token = self._rules(tokens)[0]
        key = None if token is None else fold(token)
        if self._usage is None:
            self._usage = {}
            # SPEC E1: the lines before the first user-agent line (every line in a file
            # without one) speak for every URL the file lets be fetched.
            stray = self._usage_lines
            if self.groups:
                stray = stray[: _bisect_left(stray, self.groups[0].line, key=_usage_line_of)]
            if stray:
                self._file_wide = GroupUsage(stray, FILE_WIDE)
        compiled = self._usage.get(key)
        if compiled is None:
            groups = [g for g in self.groups if g.is_global] if key is None else self._naming(key)
            # SPEC E1, E5: the file-wide statements combine with the group's, most
            # restrictive first.
            lines = _group_usage_lines(self._usage_lines, groups)
            compiled = selected_usage(lines, self._file_wide)
            self._usage[key] = compiled
        return compiled.prefs(path_params_query(url))

    def crawl_delay(self, tokens: _Tokens) -> float | None:
        """The selected group's Crawl-delay in seconds (SPEC A7: Google ignores it)."""
        for group in self._select(tokens)[1]:
            if group.crawl_delay is not None:
                return group.crawl_delay
        return None


def _merged_rules(groups: Sequence[Group]) -> tuple[tuple[bool, str, int], ...]:
    """The rules of ``groups`` in file order."""
    return groups[0].rules if len(groups) == 1 else tuple([r for g in groups for r in g.rules])


def _group_usage_lines(lines: list[UsageLine], groups: Sequence[Group]) -> list[UsageLine]:
    """The lines of ``lines`` inside ``groups`` (SPEC A3: merged, in file order)."""
    found: list[UsageLine] = []
    for group in groups:
        start = _bisect_left(lines, group.line, key=_usage_line_of)
        end = (
            len(lines)
            if group._end is None
            else _bisect_left(lines, group._end, key=_usage_line_of)
        )
        found.extend(lines[start:end])
    return found


def _parse_delay(value: bytes) -> float | None:
    try:
        delay = float(value.split()[0]) if value.split() else None
    except ValueError:
        return None
    if delay is None or not (0 <= delay < float("inf")):
        return None
    return delay

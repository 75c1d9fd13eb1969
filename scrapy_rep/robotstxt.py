"""``RobotsTxt``: a parsed robots.txt, its groups (SPEC A3) and its answers.

The parser (``parser.py``) hands over records; this module groups them and
selects, per crawler token, which compiled ``RuleSet`` (``matcher.py``) applies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scrapy_rep.matcher import (
    ALLOW_BIT,
    EMPTY_BASE,
    Rule,
    RuleSet,
    normalise_pattern,
    path_params_query,
    read_path,
)
from scrapy_rep.parser import Key, parse_lines
from scrapy_rep.tokens import extract_token, fold

__all__ = ["Decision", "Group", "RobotsTxt", "Rule"]

_EMPTY = RuleSet(())
_NOTHING_ASKED = object()
# What the questions take: one token, a preference list, or None (no token).
_Tokens = str | Sequence[str] | None
_ALLOW, _DISALLOW, _USER_AGENT, _SITEMAP = Key.ALLOW, Key.DISALLOW, Key.USER_AGENT, Key.SITEMAP


class Group:
    """One run of user-agent lines and the rules that follow them."""

    __slots__ = ("agents", "crawl_delay", "is_global", "line", "rules")

    def __init__(self, line: int) -> None:
        self.line = line  # the first user-agent line
        self.agents: list[str] = []  # tokens as cut by SPEC A3, ASCII-folded
        self.is_global = False  # '*' named
        # (allow, normalised pattern, line): Rule's fields, as plain tuples
        # (building a NamedTuple per line is slow); only explanations make Rules.
        self.rules: list[tuple[bool, str, int]] = []
        self.crawl_delay: float | None = None

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

    def __init__(self, groups: list[Group], sitemaps: list[str]) -> None:
        self.groups = groups
        self.sitemaps = sitemaps
        # Built on the first question: parsing stays cheap for files never asked.
        self._by_agent: dict[str, list[Group]] | None = None
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

    def _agents(self) -> dict[str, list[Group]]:
        if self._by_agent is None:
            self._by_agent = {}
            for group in self.groups:
                for agent in group.agents:
                    members = self._by_agent.setdefault(agent, [])
                    if not members or members[-1] is not group:
                        members.append(group)
        return self._by_agent

    @classmethod
    def parse(cls, body: bytes | bytearray | memoryview | str) -> RobotsTxt:
        """Parse a robots.txt body. Never raises; only the first 512,000 bytes count."""
        groups: list[Group] = []
        sitemaps: list[str] = []
        current: Group | None = None
        # SPEC A3: only an allow/disallow line closes a run of user-agent lines.
        in_rules = False
        for line, key, name, value in parse_lines(body):
            if key is _ALLOW or key is _DISALLOW:
                # SPEC A3: rules before the first user-agent line are ignored.
                if current is None:
                    continue
                in_rules = True
                pattern = (
                    value.decode("ascii")
                    if value.isascii() and b"%" not in value
                    else normalise_pattern(value)
                )
                current.rules.append((key is _ALLOW, pattern, line))
            elif key is _USER_AGENT:
                if current is None or in_rules:
                    current = Group(line)
                    groups.append(current)
                    in_rules = False
                # SPEC A3: "*" alone or followed by whitespace is the global agent.
                if value[:1] == b"*" and (len(value) == 1 or value[1:2].isspace()):
                    current.is_global = True
                else:
                    # bytes.lower() folds ASCII only, as token comparison does.
                    current.agents.append(extract_token(value).lower().decode("ascii"))
            elif key is _SITEMAP:
                # SPEC A7: sitemaps are global, in file order.
                if value:
                    sitemaps.append(value.decode("utf-8", "replace"))
            elif current is not None and current.crawl_delay is None:
                if name.lower() == b"crawl-delay":
                    current.crawl_delay = _parse_delay(value)
        return cls(groups, sitemaps)

    def _select(self, tokens: _Tokens) -> tuple[str | None, list[Group]]:
        # SPEC C2: the first token with a group of its own wins, else '*'.
        # None (no User-Agent) names no token: only the '*' groups apply.
        for token in (tokens,) if isinstance(tokens, str) else tokens or ():
            groups = self._agents().get(fold(token))
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
            ruleset = RuleSet(rule for g in groups for rule in g.rules)
            self._specific[folded] = ruleset
        return token, ruleset

    def _global_rules(self) -> RuleSet:
        if self._global is None:
            rules = [rule for g in self.groups if g.is_global for rule in g.rules]
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
        shown = ", ".join(names) or "(no token)"
        if token is not None:
            reason = f"group for {token}"
        elif any(g.is_global for g in self.groups):
            reason = f"no group for {shown}; used *"
        else:
            reason = f"no group for {shown} and no * group; everything allowed"
        return Decision(rule is None or rule.allow, rule, token, reason)

    def crawl_delay(self, tokens: _Tokens) -> float | None:
        """The selected group's Crawl-delay in seconds (SPEC A7: Google ignores it)."""
        for group in self._select(tokens)[1]:
            if group.crawl_delay is not None:
                return group.crawl_delay
        return None


def _parse_delay(value: bytes) -> float | None:
    try:
        delay = float(value.split()[0]) if value.split() else None
    except ValueError:
        return None
    if delay is None or not (0 <= delay < float("inf")):
        return None
    return delay

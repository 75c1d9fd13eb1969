"""The W3C TDM Reservation Protocol (TDMRep): a site's text-and-data-mining reservation (SPEC F).

Pure: no Scrapy, no I/O. Three sources, each read here:

- ``/.well-known/tdmrep.json``: ``TdmFile.parse(body)``, then ``reservation(url)``, the first
  rule whose ``location`` matches (TDMRep "Processing priority": first match in array order,
  not the longest as in robots.txt);
- the ``tdm-reservation`` / ``tdm-policy`` HTTP response headers and HTML ``<meta>`` tags:
  ``reservation_value(text)``;
- TDMRep's own combination, where each later source *supersedes* the earlier and an absent
  one changes nothing (unlike the AIPREF vocabulary's most-restrictive rule, used between
  TDMRep and the other statements): each of the three is a ``sources.Statement`` of the
  family ``FAMILY``, ranked ``FILE`` < ``HEADER`` < ``META``, and ``sources.usage_of`` applies
  the rule.

``tdm_statement`` states a reservation as usage preferences: ``1`` disallows ``train-ai``,
``0`` allows it, anything else says nothing (SPEC F4: why ``train-ai`` only). ``TDMREP`` is
tdmrep.json as a ``sources.UsageDocument``: what a crawl needs to fetch and use it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from scrapy_rep.core.matcher import matches, path_params_query
from scrapy_rep.core.sources import Statement
from scrapy_rep.core.usage import UsagePrefs, UsageSource

__all__ = [
    "FAMILY",
    "FILE",
    "HEADER",
    "META",
    "TDMREP",
    "TDMREP_NAME",
    "TDMREP_PATH",
    "TDM_LABELS",
    "TdmFile",
    "TdmRepDocument",
    "TdmRule",
    "reservation_value",
    "rule_source",
    "tdm_statement",
]

#: The usage labels a TDM reservation speaks for (SPEC F4).
TDM_LABELS: tuple[str, ...] = ("train-ai",)
TDMREP_NAME = "tdmrep.json"
TDMREP_PATH = "/.well-known/tdmrep.json"
#: SPEC F3: TDMRep's sources supersede each other in this order (the family of their
#: statements, and each one's rank in it).
FAMILY = "tdmrep"
FILE, HEADER, META = 0, 1, 2
#: Rules read from one file at most: a hostile file cannot make every check long.
MAX_RULES = 10_000

# RFC 3986 §2.3 unreserved characters: TDMRep compares paths with these percent-decoded.
_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _decode_unreserved(text: str) -> str:
    if "%" not in text:
        return text

    def decode(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else match.group(0)

    return _PERCENT.sub(decode, text)


def reservation_value(value: object) -> int | None:
    """``tdm-reservation``'s value: 1 (reserved) or 0 (not reserved); anything else is a
    protocol error, treated as unset (TDMRep §"tdm-reservation")."""
    if isinstance(value, bool):  # JSON true/false are not 1/0
        return None
    if isinstance(value, int) and value in (0, 1):
        return value
    if isinstance(value, str) and value.strip() in ("0", "1"):
        return int(value.strip())
    return None


@dataclass(frozen=True)
class TdmRule:
    """One entry of tdmrep.json, as written, with its position (1-based)."""

    index: int
    location: str
    reservation: int | None
    policy: str | None


@dataclass(frozen=True)
class TdmFile:
    """A parsed ``/.well-known/tdmrep.json``; ``error`` says why it holds no rules, if so."""

    rules: tuple[TdmRule, ...]
    error: str | None = None

    @classmethod
    def parse(cls, body: bytes | str) -> TdmFile:
        """Never raises: a body that is not a JSON array of rules gives no rules."""
        try:
            data = json.loads(body)
        except (ValueError, RecursionError) as exc:  # RecursionError: "[[[[…" nesting bombs
            return cls((), f"not JSON: {type(exc).__name__}")
        if not isinstance(data, list):
            return cls((), "not a JSON array")
        rules = []
        for index, entry in enumerate(data[:MAX_RULES], 1):
            if not isinstance(entry, dict):
                continue
            location = entry.get("location")
            if not isinstance(location, str) or not location:
                continue
            policy = entry.get("tdm-policy")
            rules.append(
                TdmRule(
                    index,
                    location,
                    reservation_value(entry.get("tdm-reservation")),
                    policy if isinstance(policy, str) else None,
                )
            )
        return cls(tuple(rules))

    def reservation(self, url: str) -> TdmRule | None:
        """The rule that applies to ``url``: the first whose ``location`` matches its path
        (robots-style ``*`` and ``$``, case-sensitive, unreserved characters
        percent-decoded on both sides); None when none does."""
        if not self.rules:
            return None
        path = _decode_unreserved(path_params_query(url))
        for rule in self.rules:
            location = _decode_unreserved(rule.location)
            if not location.startswith(("/", "*")):
                location = "/" + location
            if matches(location, path):
                return rule
        return None


def tdm_statement(reservation: int | None, source: UsageSource, rank: int) -> Statement | None:
    """A TDM reservation as a statement of TDMRep's family (SPEC F3, F4): 1 disallows
    ``train-ai``, 0 allows it, None states nothing."""
    if reservation is None:
        return None
    allowed = reservation == 0
    prefs = UsagePrefs(
        {label: allowed for label in TDM_LABELS}, {label: (source,) for label in TDM_LABELS}
    )
    return Statement(prefs, FAMILY, rank)


def rule_source(rule: TdmRule) -> UsageSource:
    """A tdmrep.json rule as the source of a statement (explanations, log lines)."""
    value = f"location {rule.location}, tdm-reservation {rule.reservation}"
    return UsageSource(TDMREP_NAME, value, rule.index, where=TDMREP_NAME)


class TdmRepDocument:
    """``/.well-known/tdmrep.json`` as a per-origin usage document (``sources.UsageDocument``):
    fetched only for a crawl declaring ``train-ai``; its first matching rule is a statement
    that tdm-reservation headers and meta tags supersede (SPEC F2, F3)."""

    name = TDMREP_NAME
    path = TDMREP_PATH
    stats_prefix = "tdmrep"
    labels = TDM_LABELS

    def parse(self, body: bytes) -> TdmFile:
        return TdmFile.parse(body)

    def statement(self, document: TdmFile, url: str) -> Statement | None:
        rule = document.reservation(url)
        if rule is None:
            return None
        return tdm_statement(rule.reservation, rule_source(rule), FILE)

    def summary(self, document: TdmFile) -> str:
        return f"{len(document.rules)} rule(s)" if document.rules else document.error or "no rules"


#: The tdmrep.json document a crawl resolves (REP_USAGE_SOURCES' default).
TDMREP = TdmRepDocument()

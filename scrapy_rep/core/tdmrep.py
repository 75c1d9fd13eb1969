"""The W3C TDM Reservation Protocol (TDMRep): a site's text-and-data-mining reservation (SPEC F).

Pure: no Scrapy, no I/O. Three sources, each read here:

- ``/.well-known/tdmrep.json``: ``TdmFile.parse(body)``, then ``reservation(url)``, the first
  rule whose ``location`` matches (TDMRep "Processing priority": first match in array order,
  not the longest as in robots.txt);
- the ``tdm-reservation`` / ``tdm-policy`` HTTP response headers and HTML ``<meta>`` tags:
  ``reservation_value(text)``;
- ``supersede(file, header, meta)``: TDMRep's own combination, where each later source
  *supersedes* the earlier and an absent one changes nothing (unlike the AIPREF vocabulary's
  most-restrictive rule, used between TDMRep and the other statements).

``tdm_prefs`` states the outcome as usage preferences: a reservation (``1``) disallows
``train-ai``, ``0`` allows it, anything else says nothing (SPEC F4: why ``train-ai`` only).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from scrapy_rep.core.matcher import matches, path_params_query
from scrapy_rep.core.usage import NO_PREFERENCE, UsagePrefs, UsageSource

__all__ = [
    "TDM_LABELS",
    "TdmFile",
    "TdmRule",
    "reservation_value",
    "rule_prefs",
    "rule_source",
    "supersede",
    "tdm_prefs",
]

#: The usage labels a TDM reservation speaks for (SPEC F4).
TDM_LABELS: tuple[str, ...] = ("train-ai",)
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


def supersede(*values: int | None) -> int | None:
    """TDMRep's processing priority: the last source that states a value wins; pass them
    from the least to the most specific (file, header, HTML meta)."""
    result = None
    for value in values:
        if value is not None:
            result = value
    return result


def tdm_prefs(reservation: int | None, source: UsageSource) -> UsagePrefs:
    """A TDM reservation as usage preferences (SPEC F4): 1 disallows ``train-ai``, 0 allows
    it, None states nothing."""
    if reservation is None:
        return NO_PREFERENCE
    allowed = reservation == 0
    return UsagePrefs(
        {label: allowed for label in TDM_LABELS}, {label: (source,) for label in TDM_LABELS}
    )


def rule_source(rule: TdmRule) -> UsageSource:
    """A tdmrep.json rule as the source of a statement (explanations, log lines)."""
    value = f"location {rule.location}, tdm-reservation {rule.reservation}"
    return UsageSource("tdmrep.json", value, rule.index)


def rule_prefs(rule: TdmRule) -> UsagePrefs:
    """What a tdmrep.json rule states, with the rule as its source."""
    return tdm_prefs(rule.reservation, rule_source(rule))

"""Public explanations: ``explain``, ``format_explanation``, ``format_rule``, ``describe_origin``.

Pure (no Scrapy import): an explanation is the dict ``scrapy robots --json``
prints for one URL (keys in ``scrapy_rep.core._explain``'s docstring).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scrapy_rep.core import _explain
from scrapy_rep.core.purpose import Purpose
from scrapy_rep.core.robots_file import RobotsTxt

__all__ = ["describe_origin", "explain", "format_explanation", "format_rule"]

#: ``source`` of an explanation made from a body or a RobotsTxt the caller passed.
_GIVEN: dict[str, Any] = {"given": True}


def explain(
    robots: Any,
    url: str,
    tokens: str | Sequence[str] = (),
    purpose: Sequence[str] | Purpose = (),
) -> dict[str, Any]:
    """Why ``url`` is allowed or not for ``tokens``, as ``scrapy robots --json`` says it.

    ``robots`` is a robots.txt body (bytes or str), a parsed ``RobotsTxt``, or the
    ``OriginReport`` that ``RobotsTxtMiddleware.resolve`` gave for the URL's origin
    (then an unreachable origin or a missing robots.txt explain the answer too).
    ``tokens``: the crawler's token, or tokens best first; none means only ``*``
    groups apply (SPEC A3, C2).

    ``purpose``: the labels a crawl declares (``["train-ai"]``, or a ``Purpose``); the
    explanation then says whether such a crawl would use the URL's content.

    The result is a JSON-able dict: ``url``, ``allowed``, ``decided_by`` ("rules"
    or "outcome"), ``rule`` (``allow``, ``pattern``, ``line``, ``text``; or None),
    ``group``, ``reason``, ``tokens``, ``source`` (where the rules came from),
    ``usage`` (per label: ``value`` and the ``sources`` that set it) and, with a purpose,
    ``purpose``.
    """
    wanted = [tokens] if isinstance(tokens, str) else list(tokens)
    declared = purpose if isinstance(purpose, Purpose) else Purpose(tuple(purpose))
    if isinstance(robots, (bytes, str)):
        parsed = RobotsTxt.parse(robots)
        lines = _explain.line_texts(robots)
        return _explain.explain(parsed, url, wanted, _GIVEN, lines, purpose=declared)
    if isinstance(robots, RobotsTxt):
        return _explain.explain(robots, url, wanted, _GIVEN, purpose=declared)
    if hasattr(robots, "outcome"):
        return _explain.explain_report(robots, url, wanted, declared)
    raise TypeError(
        "explain() takes a robots.txt body (bytes or str), a RobotsTxt or an OriginReport, "
        f"not {type(robots).__name__}"
    )


def format_explanation(entries: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> str:
    """The text ``scrapy robots`` prints for one explanation or a list of them."""
    if isinstance(entries, Mapping):
        entries = [entries]
    return _explain.format_text(entries)


def format_rule(rule: Mapping[str, Any] | None) -> str:
    """An explanation's ``rule`` as text: ``line 7: Disallow: /private/`` (or "no rule matched")."""
    return _explain.format_rule(rule)


def describe_origin(report: Any) -> str:
    """One line on an origin's robots.txt from its ``OriginReport``: outcome, status, lifetime."""
    return _explain.format_source(_explain.origin_source(report))

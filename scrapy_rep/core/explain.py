"""Why a URL is allowed or not, and what it may be used for: explanations as JSON-able dicts
for tools (``scrapy robots --json``). Pure (no Scrapy). ``explain_text`` formats them for
people.

Public: ``scrapy_rep.explain``. The rest is shared by ``scrapy robots``,
``python -m scrapy_rep`` and the demo spider's report. An explanation's usage preferences are
computed by the crawl's own functions from the same documents: its statements assembled by
``sources.known_statements``, combined by ``sources.usage_of``, so it always says what the
crawl does.

An explanation is a JSON-able dict, what ``scrapy robots --json`` prints for one URL. Keys:
``url``, ``allowed``, ``decided_by`` (``"rules"``, or ``"outcome"``
when no rules took part: no robots.txt, an unreachable origin), ``rule``
(``{"allow", "pattern", "line", "text"}`` or None; ``pattern`` is the normalised
pattern that matched, ``text`` the line as written), ``group`` (the token whose
group applied, ``"*"``, or None), ``reason`` (e.g. "no group for MyBot; used *"),
``tokens`` and ``source``: for a local file ``{"file": path}`` (``"-"`` for
stdin); for a body or ``RobotsTxt`` passed to ``scrapy_rep.explain``
``{"given": True}``; for a fetched
robots.txt the middleware's ``OriginReport`` fields ``origin``, ``outcome``,
``status``, ``redirects`` (URLs followed), ``truncated``, ``fetched_at``,
``expires_at`` (epoch seconds; while robots.txt fails, its next attempt), ``error``,
``stale``, ``crawl_delay`` and ``failures`` (attempts failed in a row, 0 when answered).
With ``scrapy robots --page`` an entry also has ``page``: ``{"url"`` (after
redirects), ``"status"``, ``"noindex"``, ``"nofollow"``, ``"unavailable_after"``
(ISO 8601 or None), ``"directives"`` (per agent, ``"*"`` for all crawlers)``}``
or ``{"url", "error"}`` when the page could not be fetched (SPEC D).
``usage``: per label of the vocabulary, ``{"value": true | false | null, "sources": [...]}``
(the robots.txt lines, headers or document rules that set it, as text; SPEC E to G): what the
sources known before fetching say, the crawl's gate's answer. A page fetched with ``--page``
has its own ``usage`` too: those with the page's own statements, the crawl's page level's
answer. ``purpose`` (when one is declared): ``{"labels", "strict", "used", "reason"}`` —
whether a crawl declaring it would use the URL's content, and why not. ``documents`` (when a
purpose needs usage documents such as tdmrep.json): per document ``{"name", "outcome",
"status", "error", "summary"}``. ``pause`` (when the store keeps one for the origin, SPEC H):
``{"remaining", "failures", "reason"}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from scrapy_rep.core.pagerules import PageRules
from scrapy_rep.core.parser import prepare_body
from scrapy_rep.core.purpose import Purpose, describe_source
from scrapy_rep.core.robots_file import Decision, RobotsTxt
from scrapy_rep.core.sources import Statement, UsageDocument, known_statements, usage_of
from scrapy_rep.core.usage import UsagePrefs

__all__ = [
    "describe",
    "describe_error",
    "document_entry",
    "explain",
    "explain_report",
    "explain_rules",
    "fleet_entry",
    "line_texts",
    "origin_source",
    "page_entry",
    "pause_entry",
    "usage_entry",
    "with_usage",
]

#: Usage documents known for a URL's origin, each with what its ``parse`` gave (or None).
Documents = Sequence[tuple[UsageDocument, Any]]

#: ``source`` of an explanation made from a body or a RobotsTxt the caller passed.
_GIVEN: dict[str, Any] = {"given": True}


def explain(
    robots: Any,
    url: str,
    tokens: str | Sequence[str] = (),
    purpose: Sequence[str] | Purpose = (),
    statements: Sequence[Statement] = (),
) -> dict[str, Any]:
    """Why ``url`` is allowed or not for ``tokens``, as ``scrapy robots --json`` says it.

    ``robots`` is a robots.txt body (bytes or str), a parsed ``RobotsTxt``, or the
    ``OriginReport`` that ``RobotsTxtMiddleware.resolve`` gave for the URL's origin
    (then an unreachable origin or a missing robots.txt explain the answer too).
    ``tokens``: the crawler's token, or tokens best first; none means only ``*``
    groups apply (SPEC A3, C2).

    ``purpose``: the labels a crawl declares (``["train-ai"]``, or a ``Purpose``); the
    explanation then says whether such a crawl would use the URL's content.
    ``statements``: what other sources state of the URL (``sources.Statement``: a usage
    document's, a page's), combined with robots.txt's as the crawl combines them.

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
        lines = line_texts(robots)
        return explain_rules(parsed, url, wanted, _GIVEN, lines, declared, statements)
    if isinstance(robots, RobotsTxt):
        return explain_rules(robots, url, wanted, _GIVEN, (), declared, statements)
    if hasattr(robots, "outcome"):
        return explain_report(robots, url, wanted, declared, statements)
    raise TypeError(
        "explain() takes a robots.txt body (bytes or str), a RobotsTxt or an OriginReport, "
        f"not {type(robots).__name__}"
    )


# -- the parts ---------------------------------------------------------------

# What ``RobotsTxtMiddleware.resolve`` reports about an origin (its OriginReport).
_REPORT_FIELDS = (
    "origin",
    "outcome",
    "status",
    "redirects",
    "truncated",
    "fetched_at",
    "expires_at",
    "error",
    "stale",
    "crawl_delay",
    "failures",
)


def line_texts(body: bytes | str) -> list[str]:
    """The lines of a robots.txt as the parser numbers them (line N is item N-1)."""
    return [line.decode("utf-8", "replace").strip() for line in prepare_body(body).splitlines()]


def explain_rules(
    robots: RobotsTxt,
    url: str,
    tokens: Sequence[str],
    source: Mapping[str, Any],
    lines: Sequence[str] = (),
    purpose: Purpose | None = None,
    statements: Sequence[Statement] = (),
    documents: Documents = (),
) -> dict[str, Any]:
    """Decide ``url`` for ``tokens`` with ``robots`` and describe the decision, with the
    URL's usage preferences (robots.txt's, the usage ``documents``' and ``statements``) and
    what a crawl declaring ``purpose`` would do."""
    decision = robots.decide(url, list(tokens))
    group = decision.token
    if group is None and any(g.is_global for g in robots.groups):
        group = "*"
    if not lines and decision.rule is not None:
        lines = _rule_lines(robots)
    entry = describe(url, decision, tokens, source, group, lines)
    found = known_statements(robots, url, tokens, documents, given=statements)
    return with_usage(entry, found, purpose)


def usage_entry(prefs: UsagePrefs) -> dict[str, Any]:
    """The JSON-able ``usage`` of an explanation."""
    return {
        label: {
            "value": value,
            "sources": [describe_source(source) for source in prefs.sources[label]],
        }
        for label, value in prefs.items()
    }


def with_usage(
    entry: dict[str, Any], statements: Sequence[Statement], purpose: Purpose | None
) -> dict[str, Any]:
    """``entry`` with its ``usage`` (``statements``, from ``sources.known_statements``,
    combined by ``sources.usage_of``, as the crawl combines them) and, for a declared
    ``purpose``, its ``purpose``."""
    prefs = usage_of(statements)
    entry["usage"] = usage_entry(prefs)
    if purpose is not None and purpose.declared:
        refusal = purpose.refusal(prefs) if entry["allowed"] else None
        entry["purpose"] = {
            "labels": list(purpose.labels),
            "strict": purpose.strict,
            "used": bool(entry["allowed"]) and refusal is None,
            "reason": str(refusal) if refusal is not None else None,
        }
    return entry


def _rule_lines(robots: RobotsTxt) -> list[str]:
    """Rule lines rebuilt from the parsed groups, for when the file's text is not at hand.

    The deciding rule of an index.html allow is the derived ``/dir/$``; its line
    shows the rule as written (``Allow: /dir/index.html``).
    """
    written = {line: (allow, pattern) for g in robots.groups for allow, pattern, line in g.rules}
    lines = [""] * max(written, default=0)
    for number, (allow, pattern) in written.items():
        lines[number - 1] = f"{'Allow' if allow else 'Disallow'}: {pattern}"
    return lines


def describe(
    url: str,
    decision: Decision,
    tokens: Sequence[str],
    source: Mapping[str, Any],
    group: str | None,
    lines: Sequence[str] = (),
    *,
    by_rules: bool = True,
) -> dict[str, Any]:
    """A JSON-able explanation of ``decision`` (made for ``url`` and ``tokens``).

    ``by_rules`` is False when no robots.txt rules took part (no robots.txt, an
    unreachable origin): the reason alone explains the decision.
    """
    rule = decision.rule
    rule_info: dict[str, Any] | None = None
    if rule is not None:
        rule_info = {
            "allow": rule.allow,
            "pattern": rule.pattern,
            "line": rule.line,
            "text": (lines[rule.line - 1] or None) if 0 < rule.line <= len(lines) else None,
        }
    return {
        "url": url,
        "allowed": decision.allowed,
        "decided_by": "rules" if by_rules else "outcome",
        "rule": rule_info,
        "group": group,
        "reason": decision.reason,
        "tokens": list(tokens),
        "source": dict(source),
    }


def page_entry(url: str, status: int, rules: PageRules) -> dict[str, Any]:
    """The JSON-able ``page`` of an explanation: what a fetched page asks (SPEC D)."""
    return {"url": url, "status": status, **rules.to_dict()}


def origin_source(report: Any) -> dict[str, Any]:
    """The JSON-able ``source`` of an explanation from the middleware's ``OriginReport``."""
    source = {name: getattr(report, name, None) for name in _REPORT_FIELDS}
    source["origin"] = str(source["origin"]) if source["origin"] is not None else None
    for name in ("fetched_at", "expires_at"):
        value = source[name]
        if isinstance(value, datetime):
            source[name] = value.timestamp()
    if source["error"] is not None:
        source["error"] = str(source["error"])
    source["redirects"] = list(source["redirects"] or [])
    return source


def explain_report(
    report: Any,
    url: str,
    tokens: Sequence[str],
    purpose: Purpose | None = None,
    statements: Sequence[Statement] = (),
    documents: Documents = (),
) -> dict[str, Any]:
    """Explain ``url`` with the robots.txt outcome the middleware resolved for its origin
    (``documents``: the usage documents known for it, each with what was read;
    ``statements``: what other sources state of it)."""
    source = origin_source(report)
    robots = getattr(report, "robots", None)
    outcome = source["outcome"]
    if outcome == "unreachable":
        decision = Decision(
            False,
            None,
            None,
            "robots.txt unreachable: the whole origin is disallowed for now "
            "(a crawl holds its requests until robots.txt can be fetched)",
        )
    elif robots is not None:
        return explain_rules(robots, url, tokens, source, (), purpose, statements, documents)
    elif outcome == "allow_all":
        decision = Decision(
            True,
            None,
            None,
            "robots.txt unreachable for longer than REP_UNREACHABLE_ALLOW_AFTER: "
            "everything allowed",
        )
    else:
        decision = Decision(True, None, None, "no robots.txt: everything allowed")
    entry = describe(url, decision, tokens, source, None, by_rules=False)
    found = known_statements(
        None, url, tokens, documents, given=statements, fetchable=decision.allowed
    )
    return with_usage(entry, found, purpose)


def document_entry(name: str, report: Any, summary: str | None) -> dict[str, Any]:
    """The JSON-able entry of a usage document an explanation used (``documents``): its
    ``OriginReport``'s outcome, and ``summary`` of what was read (None when nothing was)."""
    return {
        "name": name,
        "outcome": report.outcome,
        "status": report.status,
        "error": None if report.error is None else str(report.error),
        "summary": summary,
    }


def pause_entry(pause: Any) -> dict[str, Any]:
    """The JSON-able ``pause`` of an explanation: the origin's pages said "slow down" (SPEC H),
    from the store's ``StoredPause``."""
    return {"remaining": pause.remaining, "failures": pause.failures, "reason": pause.reason}


def fleet_entry(state: Any) -> dict[str, Any]:
    """The JSON-able ``fleet`` of an explanation: the URL's download slot as a fleet on a Redis
    store holds it (REP_FLEET_LIMITS), from ``storage.fleet.FleetState``."""
    return {
        "slot": state.slot,
        "taken": state.taken,
        "limit": state.limit,
        "delay": state.delay,
        "next_start": state.next_start,
        "processes": state.members,
        "waiting": state.waiting,
    }


def describe_error(url: str, tokens: Sequence[str], error: str) -> dict[str, Any]:
    """An explanation for a URL whose robots.txt could not be resolved at all."""
    decision = Decision(False, None, None, f"robots.txt not resolved: {error}")
    source = {"origin": None, "outcome": "error", "error": error}
    return describe(url, decision, tokens, source, None, by_rules=False)

"""Why a URL is allowed or not, as text for people and JSON for tools. Pure (no Scrapy).

Public (``scrapy_rep.explain`` and friends): ``explain``, ``format_explanation``,
``format_rule``, ``describe_origin``. The rest is shared by ``scrapy robots``,
``python -m scrapy_rep``, the demo spider's report and the crawl's log lines (``duration``).

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
``expires_at`` (epoch seconds), ``error``, ``stale`` and ``crawl_delay``.
With ``scrapy robots --page`` an entry also has ``page``: ``{"url"`` (after
redirects), ``"status"``, ``"noindex"``, ``"nofollow"``, ``"unavailable_after"``
(ISO 8601 or None), ``"directives"`` (per agent, ``"*"`` for all crawlers)``}``
or ``{"url", "error"}`` when the page could not be fetched (SPEC D).
``usage``: per label of the vocabulary, ``{"value": true | false | null, "sources": [...]}``
(the robots.txt lines, headers or tdmrep.json rule that set it, as text; SPEC E to G); a page
fetched with ``--page`` has its own ``usage`` too, from its headers combined with robots.txt's.
``purpose`` (when one is declared): ``{"labels", "strict", "used", "reason"}`` — whether a
crawl declaring it would use the URL's content, and why not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from scrapy_rep.core.pagerules import PageRules
from scrapy_rep.core.parser import prepare_body
from scrapy_rep.core.purpose import Purpose, describe_source
from scrapy_rep.core.robots_file import Decision, RobotsTxt
from scrapy_rep.core.usage import NO_PREFERENCE, UsagePrefs, combine

__all__ = [
    "describe",
    "describe_error",
    "describe_origin",
    "duration",
    "explain",
    "explain_report",
    "explain_rules",
    "format_explanation",
    "format_page",
    "format_rule",
    "format_source",
    "line_texts",
    "origin_source",
    "page_entry",
    "usage_entry",
    "with_usage",
]

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
        lines = line_texts(robots)
        return explain_rules(parsed, url, wanted, _GIVEN, lines, purpose=declared)
    if isinstance(robots, RobotsTxt):
        return explain_rules(robots, url, wanted, _GIVEN, purpose=declared)
    if hasattr(robots, "outcome"):
        return explain_report(robots, url, wanted, declared)
    raise TypeError(
        "explain() takes a robots.txt body (bytes or str), a RobotsTxt or an OriginReport, "
        f"not {type(robots).__name__}"
    )


def format_explanation(entries: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> str:
    """The text ``scrapy robots`` prints for one explanation or a list of them, one block per
    URL."""
    if isinstance(entries, Mapping):
        entries = [entries]
    blocks = []
    for entry in entries:
        verdict = "ALLOWED" if entry["allowed"] else "DISALLOWED"
        lines = [f"{verdict}  {entry['url']}"]
        if entry.get("decided_by", "rules") == "rules":
            lines.append(f"  rule:   {format_rule(entry.get('rule'))}")
            lines.append(f"  group:  {entry['reason']}")
        else:
            lines.append(f"  why:    {entry['reason']}")
        lines.append(f"  tokens: {', '.join(entry['tokens']) or '(none: only * applies)'}")
        lines.append(f"  source: {format_source(entry['source'])}")
        if _stated(entry):
            lines.append(f"  usage:  {format_usage(entry['usage'])}")
        if entry.get("purpose") is not None:
            lines.append(f"  purpose: {format_purpose(entry['purpose'])}")
        page = entry.get("page")
        if page is not None:
            lines.append(f"  page:   {format_page(page, entry['url'])}")
            if _stated(page):
                lines.append(f"    usage:   {format_usage(page['usage'])}")
            if page.get("purpose") is not None:
                lines.append(f"    purpose: {format_purpose(page['purpose'])}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def format_rule(rule: Mapping[str, Any] | None) -> str:
    """``line 7: Disallow: /private/`` (the line as written when known).

    An index.html allow that decided through the ``/dir/$`` rule Google derives
    from it says so: ``line 4: Allow: /d/index.html, which Google also reads as
    Allow: /d/$``.
    """
    if rule is None:
        return "no rule matched"
    kind = "Allow" if rule["allow"] else "Disallow"
    text = rule.get("text")
    if not text:
        return f"line {rule['line']}: {kind}: {rule['pattern']}"
    pattern = str(rule.get("pattern") or "")
    if pattern.endswith("/$") and "/index.htm" in text:
        # SPEC A6: the rule that decided is the one Google derives from it.
        return f"line {rule['line']}: {text}, which Google also reads as {kind}: {pattern}"
    return f"line {rule['line']}: {text}"


def describe_origin(report: Any) -> str:
    """One line on an origin's robots.txt from its ``OriginReport``: outcome, status, lifetime."""
    return format_source(origin_source(report))


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
)
# How each OriginReport outcome reads (SPEC B2).
_OUTCOMES = {
    "ok": "fetched",
    "no_robots": "no robots.txt, everything allowed",
    "unreachable": "unreachable, the whole origin is disallowed for now",
    "allow_all": "unreachable for too long, everything allowed",
}


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
) -> dict[str, Any]:
    """Decide ``url`` for ``tokens`` with ``robots`` and describe the decision, with the
    URL's usage preferences and what a crawl declaring ``purpose`` would do."""
    decision = robots.decide(url, list(tokens))
    group = decision.token
    if group is None and any(g.is_global for g in robots.groups):
        group = "*"
    if not lines and decision.rule is not None:
        lines = _rule_lines(robots)
    entry = describe(url, decision, tokens, source, group, lines)
    return with_usage(entry, robots.usage(url, list(tokens)), purpose)


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
    entry: dict[str, Any],
    prefs: UsagePrefs,
    purpose: Purpose | None,
    extra: UsagePrefs = NO_PREFERENCE,
) -> dict[str, Any]:
    """``entry`` with its ``usage`` (``prefs`` combined with ``extra``: tdmrep.json, a
    page's own statements) and, for a declared ``purpose``, its ``purpose``. A URL robots.txt
    disallows carries no preference (SPEC E2)."""
    prefs = combine(prefs, extra) if entry["allowed"] else NO_PREFERENCE
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


def format_source(source: Mapping[str, Any]) -> str:
    """One line on where the robots.txt came from and what fetching it gave."""
    if "file" in source:
        return "stdin" if source["file"] == "-" else f"local file {source['file']}"
    if source.get("given"):
        return "given by the caller"
    outcome = source.get("outcome")
    parts = [f"{source.get('origin')}/robots.txt: {_OUTCOMES.get(str(outcome), outcome)}"]
    if source.get("status") is not None:
        parts.append(f"HTTP {source['status']}")
    redirects = source.get("redirects") or []
    if isinstance(redirects, list) and redirects:
        many = len(redirects) != 1
        parts.append(f"{len(redirects)} redirect{'s' if many else ''} (to {redirects[-1]})")
    if source.get("truncated"):
        parts.append("truncated at 500 KiB")
    if source.get("stale"):
        parts.append("stale copy in use (refresh failing)")
    fetched, expires = source.get("fetched_at"), source.get("expires_at")
    if isinstance(fetched, (int, float)) and isinstance(expires, (int, float)):
        parts.append(f"lifetime {duration(expires - fetched)} (until {_timestamp(expires)})")
    if source.get("crawl_delay") is not None:
        parts.append(f"Crawl-delay {source['crawl_delay']:g}s")
    if source.get("error"):
        parts.append(f"error: {source['error']}")
    return ", ".join(parts)


def _stated(entry: Mapping[str, Any]) -> bool:
    """Show an entry's usage line: something is stated, or a purpose asks about it."""
    usage = entry.get("usage")
    if usage is None:
        return False
    return entry.get("purpose") is not None or any(
        found["value"] is not None for found in usage.values()
    )


def format_usage(usage: Mapping[str, Any]) -> str:
    """``train-ai: disallowed (robots.txt line 4: …); ai-use: not stated; …``."""
    words = {True: "allowed", False: "disallowed", None: "not stated"}
    parts = []
    for label, found in usage.items():
        text = f"{label}: {words[found['value']]}"
        if found["sources"]:
            text += f" ({'; '.join(found['sources'])})"
        parts.append(text)
    return "; ".join(parts)


def format_purpose(purpose: Mapping[str, Any]) -> str:
    """``train-ai: used`` or ``train-ai: not used (train-ai disallowed by …)``."""
    labels = ", ".join(purpose["labels"]) + (" (strict)" if purpose.get("strict") else "")
    if purpose["used"]:
        return f"{labels}: its content would be used"
    return f"{labels}: not used ({purpose['reason'] or 'not fetched: robots.txt disallows it'})"


def page_entry(url: str, status: int, rules: PageRules) -> dict[str, Any]:
    """The JSON-able ``page`` of an explanation: what a fetched page asks (SPEC D)."""
    return {"url": url, "status": status, **rules.to_dict()}


def format_page(page: Mapping[str, Any], requested: str | None = None) -> str:
    """``HTTP 200, nofollow (*: nofollow; otherbot: noindex)`` for a fetched page.

    The page's URL is shown when it is not ``requested`` (a redirect was followed).
    """
    if page.get("error"):
        return f"not fetched: {page['error']}"
    verdicts = [name for name in ("noindex", "nofollow") if page.get(name)]
    parts = [f"HTTP {page.get('status')}", " + ".join(verdicts) or "index, follow"]
    if page.get("unavailable_after"):
        parts.append(f"unavailable_after {page['unavailable_after']}")
    directives = page.get("directives") or {}
    found = "; ".join(f"{agent}: {', '.join(d)}" for agent, d in directives.items())
    text = ", ".join(parts) + f" ({found or 'no robots meta tags or X-Robots-Tag'})"
    return text if page.get("url") in (None, requested) else f"{text}, at {page['url']}"


def duration(seconds: float) -> str:
    """``20s``, ``1.5m``, ``23h``, ``1d`` (whole days only), ``never`` (infinite)."""
    if math.isinf(seconds):
        return "never"
    seconds = max(0.0, seconds)
    if seconds >= 86400 and seconds % 86400 == 0:
        return f"{seconds / 86400:g}d"
    if seconds >= 3600:
        return f"{seconds / 3600:.3g}h"
    if seconds >= 60:
        return f"{seconds / 60:.3g}m"
    return f"{seconds:.3g}s"


def _timestamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


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
    extra: UsagePrefs = NO_PREFERENCE,
) -> dict[str, Any]:
    """Explain ``url`` with the robots.txt outcome the middleware resolved for its origin
    (``extra``: other usage statements for it, as ``with_usage`` takes them)."""
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
        entry = explain_rules(robots, url, tokens, source)
        return with_usage(entry, robots.usage(url, list(tokens)), purpose, extra)
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
    return with_usage(entry, NO_PREFERENCE, purpose, extra)


def describe_error(url: str, tokens: Sequence[str], error: str) -> dict[str, Any]:
    """An explanation for a URL whose robots.txt could not be resolved at all."""
    decision = Decision(False, None, None, f"robots.txt not resolved: {error}")
    source = {"origin": None, "outcome": "error", "error": error}
    return describe(url, decision, tokens, source, None, by_rules=False)

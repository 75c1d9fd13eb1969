"""Explanations as text for people: what ``scrapy robots`` and ``python -m scrapy_rep`` print,
the demo's report and the crawl's log lines (``duration``). Pure (no Scrapy).

``scrapy_rep.core.explain`` builds the JSON-able explanations; this module only formats them
(``format_explanation`` for a whole entry, and each part on its own).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from scrapy_rep.core.explain import origin_source

__all__ = [
    "describe_origin",
    "duration",
    "format_document",
    "format_explanation",
    "format_fleet",
    "format_page",
    "format_pause",
    "format_purpose",
    "format_rule",
    "format_source",
    "format_usage",
    "headline",
]


def format_explanation(entries: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> str:
    """The text ``scrapy robots`` prints for one explanation or a list of them, one block per
    URL."""
    if isinstance(entries, Mapping):
        entries = [entries]
    blocks = []
    for entry in entries:
        lines = [f"{headline(entry)[0]}  {entry['url']}"]
        if entry.get("decided_by", "rules") == "rules":
            lines.append(f"  rule:   {format_rule(entry.get('rule'))}")
            lines.append(f"  group:  {entry['reason']}")
        else:
            lines.append(f"  why:    {entry['reason']}")
        lines.append(f"  tokens: {', '.join(entry['tokens']) or '(none: only * applies)'}")
        lines.append(f"  source: {format_source(entry['source'])}")
        for document in entry.get("documents", ()):
            lines.append(f"  {document['name']}: {format_document(document)}")
        if entry.get("pause") is not None:
            lines.append(f"  pause:  {format_pause(entry['pause'])}")
        if entry.get("fleet") is not None:
            lines.append(f"  fleet:  {format_fleet(entry['fleet'])}")
        if _stated(entry):
            # What the sources known before fetching say: the crawl's gate decides on it.
            lines.append(f"  usage:  {format_usage(entry['usage'])}")
        if entry.get("purpose") is not None:
            lines.append(f"  purpose: {format_purpose(entry['purpose'])}")
        page = entry.get("page")
        if page is not None:
            lines.append(f"  page:   {format_page(page, entry['url'])}")
            if _stated(page):
                # With the page's own statements: the crawl's page level decides on it.
                lines.append(f"    usage:   {format_usage(page['usage'])}")
            if page.get("purpose") is not None:
                lines.append(f"    purpose: {format_purpose(page['purpose'])}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def headline(entry: Mapping[str, Any]) -> tuple[str, bool]:
    """The verdict that heads an explanation, and whether a crawl would download the URL and
    use its content: ``scrapy robots`` exits 0 only when that holds for every URL.

    ``DISALLOWED`` (robots.txt, or its outcome, refuses it), ``ALLOWED`` (no purpose declared)
    or, with a declared purpose, ``ALLOWED to crawl;`` and each label's answer: ``train-ai:
    NOT allowed`` (the crawl drops the request before scheduling; ``(not stated;
    REP_USAGE_STRICT)`` when nothing states it), ``NOT allowed by the page`` (``--page``: the
    page's own statements refuse it, and the crawl drops its items), ``allowed`` or ``allowed
    (not stated)``.
    """
    if not entry["allowed"]:
        return "DISALLOWED", False
    purpose = entry.get("purpose")
    if purpose is None:
        return "ALLOWED", True
    page = entry.get("page") or {}
    # The page level decides only on what the gate let through (and the page was fetched).
    at_page = page.get("purpose") if purpose["used"] else None
    strict = bool(purpose.get("strict"))
    answers = []
    for label in purpose["labels"]:
        answer = _label_answer(entry.get("usage", {}).get(label, {}).get("value"), strict)
        if at_page is not None and not answer.startswith("NOT"):
            by_page = _label_answer((page.get("usage") or {}).get(label, {}).get("value"), strict)
            if by_page.startswith("NOT"):
                answer = by_page.replace("NOT allowed", "NOT allowed by the page")
        answers.append(f"{label}: {answer}")
    used = bool(purpose["used"]) and (at_page is None or bool(at_page["used"]))
    text = f"ALLOWED to crawl; {'; '.join(answers)}"
    if not used and "NOT" not in text:
        # The verdicts decide and the words follow them: never a refusal the line hides.
        text += f"; {', '.join(purpose['labels'])}: NOT used"
    return text, used


def _label_answer(value: bool | None, strict: bool) -> str:
    """One label's answer from its combined preference (``Purpose.refusal``'s rule)."""
    if value is False:
        return "NOT allowed"
    if value is None:
        return "NOT allowed (not stated; REP_USAGE_STRICT)" if strict else "allowed (not stated)"
    return "allowed"


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


def format_fleet(fleet: Mapping[str, Any]) -> str:
    """``slot example.com: 2 of 2 places taken, next start in 0.4s, 3 processes, 1 waiting``
    (a fleet's download slot on a Redis store; no process declared it: none crawls it now)."""
    if fleet["processes"] == 0:
        return f"slot {fleet['slot']}: no process of the fleet crawls it now"
    left = fleet["next_start"]
    start = f"next start in {duration(left)}" if left > 0 else "may start now"
    spaced = f", {duration(fleet['delay'])} apart" if fleet["delay"] > 0 else ""
    return (
        f"slot {fleet['slot']}: {fleet['taken']} of {fleet['limit']} places taken{spaced}, "
        f"{start}, {fleet['processes']} process(es), {fleet['waiting']} waiting"
    )


def format_pause(pause: Mapping[str, Any]) -> str:
    """``paused, 40s left (HTTP 503 with Retry-After 60s at /x; 2 in a row)`` (SPEC H)."""
    left = pause["remaining"]
    when = f"paused, {duration(left)} left" if left > 0 else "pause over, a probe is due"
    return f"{when} ({pause['reason']}; {pause['failures']} in a row)"


def format_document(document: Mapping[str, Any]) -> str:
    """``2 rule(s) (HTTP 200)``, or why a usage document states nothing."""
    status = f"HTTP {document['status']}" if document.get("status") is not None else None
    outcome = document.get("outcome")
    if outcome == "ok":
        return f"{document.get('summary')} ({status or 'fetched'})"
    if outcome == "no_robots":
        return f"none ({status or document.get('error') or 'not found'}): states nothing"
    failure = document.get("error") or status or "not fetched"
    return f"could not be fetched ({failure}): states nothing for now"


# How each OriginReport outcome reads (SPEC B2).
_OUTCOMES = {
    "ok": "fetched",
    "no_robots": "no robots.txt, everything allowed",
    "unreachable": "unreachable, the whole origin is disallowed for now",
    "allow_all": "unreachable for too long, everything allowed",
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
    failures = source.get("failures")
    if isinstance(failures, int) and failures > 0:
        # Failing: what is known is when it is tried again, not how long a copy lives.
        row = f"{failures} failed attempt{'s' if failures != 1 else ''} in a row"
        if isinstance(expires, (int, float)):
            row += f", next attempt at {_timestamp(expires)}"
        parts.append(row)
    elif isinstance(fetched, (int, float)) and isinstance(expires, (int, float)):
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

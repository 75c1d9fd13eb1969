"""Page-level robots rules: ``<meta name="robots">`` tags and ``X-Robots-Tag`` headers.

Pure (no Scrapy): ``page_rules(headers, body, tokens, now)`` answers what a page
asks of a crawler answering to ``tokens`` (the same tokens it obeys robots.txt
as). The rules are Google's "Robots meta tag, data-nosnippet, and X-Robots-Tag
specifications" (SPEC D, ``docs/spec.md``). Any bytes in, never an exception
out, linear work: only the first ``HEAD_LIMIT`` bytes of a body are read, and
only up to the end of its ``<head>``.
"""

from __future__ import annotations

import codecs
import html
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from scrapy_rep.core.tokens import fold, product_token

__all__ = ["HEAD_LIMIT", "PageRules", "meta_tags", "page_rules", "parse_date"]

#: Bytes of a body read for meta tags (SPEC D3): a head longer than this is cut.
HEAD_LIMIT = 64 * 1024
#: The agent of rules meant for every crawler (``name="robots"``, an unscoped header).
ALL_AGENTS = "*"
# Kept per page, so a hostile page cannot make the result object big; the
# booleans are still computed from everything read.
_MAX_AGENTS = 32
_MAX_DIRECTIVES = 64
_MAX_DIRECTIVE_LENGTH = 256
# The scope of a header item whose agent is no product token: no crawler.
_NOBODY = ""

# Directives with a value after a colon (SPEC D2): "name: value" in a header
# is one of these, anything else before a colon is a user agent.
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})

# One tokenizer step over the head (SPEC D3): the next comment, meta tag,
# raw-text element (whose content is not markup) or end of the head.
_NEXT = re.compile(
    rb"<(?:(!--)|(meta)(?=[\s/>])|(script|style|title|textarea)(?=[\s/>])|(/head|body)(?=[\s/>]))",
    re.I,
)
# A tag's attributes up to its '>': quoted values may hold '>'. Every
# alternative starts with a different byte, so matching never backtracks.
_TAG_REST = re.compile(rb"""[^>"']*(?:(?:"[^"]*"|'[^']*')[^>"']*)*>""")
_ATTRIBUTE = re.compile(rb"""([^\s"'>/=]+)\s*(?:=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?""")
_CLOSERS = {
    name: re.compile(rb"</" + name + rb"[\s/>]", re.I)
    for name in (b"script", b"style", b"title", b"textarea")
}
# "agent: rest" in a header item; the agent is checked as a token later.
_SCOPED = re.compile(r"\s*([^\s:,]+)\s*:(.*)", re.S)
_WEEKDAY = re.compile(r"(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?", re.I)


@dataclass(frozen=True)
class PageRules:
    """What a page asks of this crawler (SPEC D).

    ``noindex``: don't keep the page (``noindex``, ``none``, or an
    ``unavailable_after`` moment that has passed); ``nofollow``: don't follow
    its links (``nofollow``, ``none``); ``unavailable_after``: the earliest
    valid such moment (UTC) that applies, passed or not; ``directives``: every
    directive read, normalised, per agent (``"*"`` for all crawlers, otherwise
    the folded product token). X-Robots-Tag lines scoped to other crawlers are
    kept too; meta tags are read for ``robots`` and this crawler's tokens only.
    """

    noindex: bool = False
    nofollow: bool = False
    unavailable_after: datetime | None = None
    directives: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def for_agent(self, agent: str) -> tuple[str, ...]:
        """The directives scoped to ``agent`` (``"*"``: every crawler)."""
        wanted = ALL_AGENTS if agent == ALL_AGENTS else fold(product_token(agent))
        for name, directives in self.directives:
            if name == wanted:
                return directives
        return ()

    def to_dict(self) -> dict[str, object]:
        """A JSON-able form (the explain command, logs)."""
        return {
            "noindex": self.noindex,
            "nofollow": self.nofollow,
            "unavailable_after": (
                self.unavailable_after.isoformat() if self.unavailable_after else None
            ),
            "directives": {agent: list(found) for agent, found in self.directives},
        }


NO_RULES = PageRules()


def page_rules(
    headers: Iterable[bytes | str],
    body: bytes | None,
    tokens: Sequence[str],
    now: datetime,
    encoding: str | None = None,
) -> PageRules:
    """The page rules for a crawler answering to ``tokens``.

    ``headers``: the values of every ``X-Robots-Tag`` header line; ``body``:
    an HTML body (None for other responses: headers only, SPEC D1);
    ``encoding``: the body's encoding when known; ``now``: the moment
    ``unavailable_after`` is compared with (naive = UTC).
    """
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    # SPEC D4: "robots" and every one of the crawler's tokens apply.
    mine = {ALL_AGENTS, *(fold(product_token(t)) for t in tokens)} - {""}
    found = _Found()
    for line in headers:
        _read_header_line(found, line)
    if body:
        # Meta tags share their names with every other use of <meta>
        # (description, viewport…): only the ones meant for this crawler are read.
        needles = (b"robots", *(a.encode("ascii") for a in mine if a != ALL_AGENTS))
        for name, content in meta_tags(body, encoding, needles):
            agent = _agent(name)
            if agent in mine:
                _read_directives(found, agent, content.split(","))
    return found.rules(mine, now)


class _Found:
    """Directives gathered per agent, in reading order, deduplicated."""

    def __init__(self) -> None:
        self.by_agent: dict[str, dict[str, None]] = {}

    def add(self, agent: str, directive: str) -> None:
        directives = self.by_agent.get(agent)
        if directives is None:
            if len(self.by_agent) >= _MAX_AGENTS and agent != ALL_AGENTS:
                return
            directives = self.by_agent[agent] = {}
        directives[directive] = None

    def rules(self, mine: set[str], now: datetime) -> PageRules:
        """The rules for the agents in ``mine``: the most restrictive directive wins (SPEC D4)."""
        if not self.by_agent:
            return NO_RULES
        noindex = nofollow = False
        earliest: datetime | None = None
        for agent, directives in self.by_agent.items():
            if agent not in mine:
                continue
            for directive in directives:
                # SPEC D2: none = noindex, nofollow.
                if directive in ("noindex", "none"):
                    noindex = True
                if directive in ("nofollow", "none"):
                    nofollow = True
                if directive.startswith("unavailable_after:"):
                    moment = parse_date(directive[len("unavailable_after:") :])
                    if moment is not None and (earliest is None or moment < earliest):
                        earliest = moment
        # SPEC D5: unavailable_after is noindex from that moment on.
        if earliest is not None and now >= earliest:
            noindex = True
        kept = tuple(
            (agent, tuple(list(directives)[:_MAX_DIRECTIVES]))
            for agent, directives in self.by_agent.items()
        )
        return PageRules(noindex, nofollow, earliest, kept)


def _read_header_line(found: _Found, line: bytes | str) -> None:
    """One X-Robots-Tag line (SPEC D2): directives, an optional leading ``agent:``."""
    text = line.decode("latin-1") if isinstance(line, bytes) else line
    agent = ALL_AGENTS
    items = text.split(",")
    rest: list[str] = []
    for item in items:
        scoped = _SCOPED.match(item)
        if scoped is not None and fold(scoped.group(1)) not in _VALUED:
            # "otherbot: noindex": the rest of the line is for that agent
            # (MDN also documents a switch after other directives).
            _read_directives(found, agent, rest)
            rest = [scoped.group(2)]
            named = _agent(scoped.group(1))
            # A name that is no token scopes to no crawler we could be.
            agent = named if named is not None else _NOBODY
        else:
            rest.append(item)
    _read_directives(found, agent, rest)


def _read_directives(found: _Found, agent: str, items: list[str]) -> None:
    """Comma-separated directives; ``unavailable_after: Monday, 15-Aug-05 …`` spans a comma."""
    if agent == _NOBODY:
        return
    pending = ""
    for item in items:
        if pending:
            item = f"{pending}, {item}"
            pending = ""
        directive = _normalise(item)
        if not directive:
            continue
        value = directive.partition(":")[2].strip()
        if directive.startswith("unavailable_after:") and _WEEKDAY.fullmatch(value):
            # RFC 822/850 dates start with "Mon," / "Monday,": the comma is the
            # date's, not a directive separator.
            pending = item
            continue
        found.add(agent, directive)
    if pending:
        found.add(agent, _normalise(pending))


def _normalise(item: str) -> str:
    """``" NoIndex "`` → ``"noindex"``; ``"Max-Snippet : 20"`` → ``"max-snippet: 20"``."""
    item = item.strip()[:_MAX_DIRECTIVE_LENGTH]
    name, colon, value = item.partition(":")
    name = fold(" ".join(name.split()))
    if not colon:
        return name
    return f"{name}: {' '.join(value.split())}"


def _agent(name: str) -> str | None:
    """The agent a meta name or header scope names (SPEC D4), None if none."""
    name = name.strip()
    if fold(name) == "robots":
        return ALL_AGENTS
    token = product_token(name)
    return fold(token) if token else None


def meta_tags(body: bytes, encoding: str | None, needles: Sequence[bytes]) -> list[tuple[str, str]]:
    """``(name, content)`` of the head's meta tags that have both (SPEC D3).

    Only tags containing one of ``needles`` (lower-case) anywhere are parsed: a
    page that names no robot at all is not scanned.
    """
    window = _ascii_compatible(body[:HEAD_LIMIT], encoding)
    lowered = window.lower()
    if not any(needle in lowered for needle in needles):
        return []
    found: list[tuple[str, str]] = []
    pos = 0
    while True:
        step = _NEXT.search(window, pos)
        if step is None:
            return found
        if step.group(1):  # <!-- … -->: nothing inside counts
            end = window.find(b"-->", step.end())
            if end < 0:
                return found
            pos = end + 3
        elif step.group(2):  # <meta …>
            rest = _TAG_REST.match(window, step.end())
            if rest is None:  # an unclosed tag runs to the end of the input
                return found
            pos = rest.end()
            if not any(needle in lowered[step.end() : pos] for needle in needles):
                continue
            attributes = _attributes(window[step.end() : pos - 1])
            name, content = attributes.get("name"), attributes.get("content")
            if name is not None and content is not None:
                found.append((name, content))
        elif step.group(3):  # <script>, <style>…: their text is not markup
            closer = _CLOSERS[step.group(3).lower()].search(window, step.end())
            if closer is None:
                return found
            pos = closer.end()
        else:  # </head> or <body>: the head is over
            return found


def _attributes(raw: bytes) -> dict[str, str]:
    """A tag's attributes, names lower-cased, the first of a name kept (as HTML does)."""
    attributes: dict[str, str] = {}
    for match in _ATTRIBUTE.finditer(raw):
        name = match.group(1).decode("latin-1").lower()
        if name in attributes:
            continue
        value = match.group(2) if match.group(2) is not None else match.group(3)
        if value is None:
            value = match.group(4) or b""
        attributes[name] = html.unescape(value.decode("utf-8", "replace"))
    return attributes


def _ascii_compatible(window: bytes, encoding: str | None) -> bytes:
    """The window re-encoded as UTF-8 when its encoding is not ASCII-compatible (UTF-16/32)."""
    if window.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        encoding = "utf-32"
    elif window.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    if not encoding:
        return window
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return window
    if not name.startswith(("utf-16", "utf-32")):
        return window
    return window.decode(name, "replace").encode("utf-8")


# --- unavailable_after dates (SPEC D5) ---------------------------------------

_MONTHS = {
    m: i
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}
_ZONES: Mapping[str, int] = {
    "z": 0, "ut": 0, "utc": 0, "gmt": 0,
    "est": -5, "edt": -4, "cst": -6, "cdt": -5, "mst": -7, "mdt": -6, "pst": -8, "pdt": -7,
}  # fmt: skip
_ISO = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)(?:[Tt ](\d\d):(\d\d)(?::(\d\d)(?:[.,]\d+)?)?)?"
    r"\s*([Zz]|[+-]\d\d(?::?\d\d)?)?"
)
# RFC 822 / 1123 ("Mon, 15 Aug 2005 15:52:01 +0000"), RFC 850 ("Monday,
# 15-Aug-05 15:52:01 UTC") and Google's own examples ("25-Jun-2010 15:00:00 PST").
_RFC = re.compile(
    r"(?:[A-Za-z]+\.?,?\s*)?(\d{1,2})[\s-]+([A-Za-z]{3})[A-Za-z]*\.?[\s-]+(\d{2}|\d{4})"
    r"(?:\s+(\d{1,2}):(\d\d)(?::(\d\d))?)?\s*([A-Za-z]{1,5}|[+-]\d{4})?"
)
# asctime: "Mon Aug 15 15:52:01 2005".
_ASCTIME = re.compile(
    r"[A-Za-z]+\s+([A-Za-z]{3})[A-Za-z]*\s+(\d{1,2})\s+(\d{1,2}):(\d\d):(\d\d)\s+(\d{4})"
)


def parse_date(text: str) -> datetime | None:
    """An ``unavailable_after`` date as an aware UTC datetime, None when not valid.

    Google accepts "widely adopted formats including, but not limited to RFC
    822, RFC 850, and ISO 8601" and ignores the rule without a valid date.
    Read here: ISO 8601 / RFC 3339 (date, date and time, ``Z`` or offset),
    RFC 822/1123/850 and asctime, Google's ``25-Jun-2010 15:00:00 PST``.
    A date without a zone is taken as UTC; a date alone is its midnight.
    """
    text = text.strip()[:64]
    try:
        iso = _ISO.fullmatch(text)
        if iso is not None:
            year, month, day, hour, minute, second, zone = iso.groups()
            return _moment(int(year), int(month), int(day), hour, minute, second, _offset(zone))
        rfc = _RFC.fullmatch(text)
        if rfc is not None:
            day, month, year, hour, minute, second, zone = rfc.groups()
            return _moment(
                _full_year(year), _MONTHS.get(month.lower(), 0), int(day),
                hour, minute, second, _offset(zone),
            )  # fmt: skip
        asc = _ASCTIME.fullmatch(text)
        if asc is not None:
            month, day, hour, minute, second, year = asc.groups()
            month_number = _MONTHS.get(month.lower(), 0)
            return _moment(int(year), month_number, int(day), hour, minute, second, 0)
    except (ValueError, OverflowError):
        return None
    return None


def _full_year(year: str) -> int:
    # RFC 850's two-digit years: RFC 9110's 50-year window, fixed at 2000-2049/1950-1999.
    number = int(year)
    if len(year) == 2:
        number += 2000 if number < 50 else 1900
    return number


def _offset(zone: str | None) -> int | None:
    """Minutes east of UTC; None for an unknown zone name (the date is then invalid)."""
    if zone is None or zone == "":
        return 0
    if zone[0] in "+-":
        digits = zone[1:].replace(":", "")
        minutes = int(digits[:2]) * 60 + (int(digits[2:4]) if len(digits) >= 4 else 0)
        return -minutes if zone[0] == "-" else minutes
    hours = _ZONES.get(zone.lower())
    return None if hours is None else hours * 60


def _moment(
    year: int,
    month: int,
    day: int,
    hour: str | None,
    minute: str | None,
    second: str | None,
    offset: int | None,
) -> datetime | None:
    if offset is None or month == 0:
        return None
    local = datetime(year, month, day, int(hour or 0), int(minute or 0), int(second or 0))
    return (local - timedelta(minutes=offset)).replace(tzinfo=timezone.utc)

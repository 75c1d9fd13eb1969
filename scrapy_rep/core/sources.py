"""What a site says about a URL's use: every source's statement, combined in one place (SPEC G1).

Pure: no Scrapy, no I/O. A ``Statement`` is what one source states for one URL — robots.txt's
usage lines, a per-origin document such as tdmrep.json, a response's headers, its robots meta
directives, TDMRep's header and meta tag — with its precedence:

- most restrictive (``family`` None): any disallow wins, else any allow (vocab-08 §5.1);
- or, within a ``family`` (TDMRep), a later source *supersedes* an earlier one: per label,
  the statement of the highest ``rank`` that states a value wins (TDMRep "Processing
  priority": tdmrep.json < the ``tdm-reservation`` header < the HTML meta tag), and that
  winner is then combined most restrictively with the rest.

``known_statements`` is the one assembling function: what robots.txt and the known usage
documents state of a URL (none for a URL robots.txt does not let be fetched, SPEC E2), and
``usage_of`` the one combining function. The crawl's gate (the sources known before fetching),
its page level (those and the page's own), ``scrapy robots`` and ``explain`` all call both, so
the same documents always give the same statements and the same answer.

A ``UsageDocument`` is a per-origin document that states preferences (tdmrep.json is one, and
so is any source registered with REP_USAGE_SOURCES): its name and path, the labels it speaks
for (it is fetched only for a crawl declaring one of them), how its body is read and what it
states for a URL. The crawl resolves it as it resolves robots.txt (one fetch per origin and
fleet, store, lifetimes, backoff); unlike robots.txt, a document that cannot be fetched states
nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from scrapy_rep.core.usage import LABELS, UsagePrefs, UsageSource, combine

if TYPE_CHECKING:
    from scrapy_rep.core.robots_file import RobotsTxt

__all__ = ["Statement", "UsageDocument", "known_statements", "needed_documents", "usage_of"]


@dataclass(frozen=True)
class Statement:
    """What one source states for one URL, and how it combines with the others."""

    prefs: UsagePrefs
    #: None: combined most restrictively. A name: superseded within that family by rank.
    family: str | None = None
    #: Within a family, a higher rank supersedes a lower one, label by label.
    rank: int = 0


def known_statements(
    robots: RobotsTxt | None,
    url: str,
    tokens: Sequence[str],
    documents: Iterable[tuple[UsageDocument, Any]] = (),
    *,
    given: Iterable[Statement] = (),
    fetchable: bool = True,
    allowed: bool | None = None,
) -> list[Statement]:
    """What the sources known of ``url`` state for a crawler answering to ``tokens`` (SPEC
    G1): ``robots``' usage lines (the rules of its origin; None when it has none: no
    robots.txt, allowed after being unreachable), each usage document's statement
    (``documents``: a ``UsageDocument`` with what its ``parse`` gave, or None when nothing was
    read), then ``given`` (statements made elsewhere: a page's own).

    A URL robots.txt does not let be fetched has no usage preference (SPEC E2), decided here
    only: no statements when ``robots`` disallows ``url`` or ``fetchable`` is False (rules
    aside, the origin lets nothing be fetched: robots.txt unreachable). ``allowed``: what
    ``robots.allowed(url, tokens)`` answered, when the caller matched ``url`` already (the
    crawl's gate, and the page level for a page the gate let go): not matched again.
    """
    wanted = list(tokens)
    if robots is not None and allowed is None:
        allowed = robots.allowed(url, wanted)
    if not fetchable or allowed is False:
        return []
    found = [] if robots is None else [Statement(robots.usage(url, wanted, allowed=True))]
    for document, parsed in documents:
        if parsed is not None:
            statement = document.statement(parsed, url)
            if statement is not None:
                found.append(statement)
    found.extend(given)
    return found


def usage_of(statements: Iterable[Statement]) -> UsagePrefs:
    """The URL's usage preferences from every statement about it (SPEC G1); the statements of
    a URL robots.txt disallows are none (``known_statements``), so it has none (SPEC E2)."""
    free: list[UsagePrefs] = []
    families: dict[str, list[Statement]] = {}
    for statement in statements:
        if statement.family is None:
            free.append(statement.prefs)
        else:
            families.setdefault(statement.family, []).append(statement)
    for members in families.values():
        free.append(_superseded(members))
    return combine(*free)


def _superseded(members: list[Statement]) -> UsagePrefs:
    """A family's statements as one: per label, the highest-ranked value stated."""
    if len(members) == 1:
        return members[0].prefs
    ordered = sorted(members, key=lambda statement: statement.rank)
    values: dict[str, bool | None] = {}
    sources: dict[str, tuple[UsageSource, ...]] = {}
    for label in LABELS:
        for statement in reversed(ordered):
            value = statement.prefs[label]
            if value is not None:
                values[label] = value
                sources[label] = statement.prefs.sources[label]
                break
    signals: dict[str, list[str]] = {}
    for statement in ordered:
        for key, raw in statement.prefs.signals.items():
            signals.setdefault(key, []).extend(raw)
    return UsagePrefs(values, sources, signals)


class UsageDocument(Protocol):
    """A per-origin document stating usage preferences (SPEC G1): what a crawl needs to know to
    fetch it, read it and use it. Register one with REP_USAGE_SOURCES."""

    #: Its name in log lines, ``scrapy robots`` and the sources of its statements.
    name: str
    #: Where it lives on an origin (``/.well-known/tdmrep.json``).
    path: str
    #: Prefix of its stats (``tdmrep`` gives ``tdmrep/request_count``…) and of its key in the
    #: crawl's store.
    stats_prefix: str
    #: The labels it speaks for: a crawl fetches it only when it declares one of them.
    labels: tuple[str, ...]

    def parse(self, body: bytes) -> Any:
        """The document read from a (2xx) body; never raises (a bad body states nothing)."""

    def statement(self, document: Any, url: str) -> Statement | None:
        """What ``document`` (``parse``'s result) states for ``url``, or None."""

    def summary(self, document: Any) -> str:
        """A few words on what was read, for the crawl's log line (``3 rule(s)``)."""


def needed_documents(
    documents: Sequence[UsageDocument], labels: Sequence[str]
) -> tuple[UsageDocument, ...]:
    """The documents a crawl declaring ``labels`` must know before using content."""
    return tuple(doc for doc in documents if any(label in doc.labels for label in labels))

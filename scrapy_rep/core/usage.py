"""Usage preferences: what a site says its content may be used for (SPEC E).

Pure: no Scrapy, no I/O. A statement — an IETF ``Content-Usage`` Dictionary or a Cloudflare
``Content-Signal`` line, from robots.txt or from an HTTP response header — becomes a
``UsagePrefs``: for each category label of the vocabulary, allowed (True), disallowed (False)
or unknown (None). ``combine`` merges statements, most restrictive first.
``RobotsTxt.usage`` finds the statements that apply to a URL in robots.txt (SPEC E2).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import NamedTuple

from scrapy_rep.core._sfv import Token, parse_dictionary

__all__ = [
    "FILE_WIDE",
    "LABELS",
    "NO_PREFERENCE",
    "SIGNAL_LABELS",
    "VOCAB",
    "UsagePrefs",
    "UsageSource",
    "combine",
    "parse_content_signal",
    "parse_content_usage",
]

#: The vocabulary revision the labels and the Content-Signal table follow (SPEC E3): a new
#: revision changes both, and this string with them.
VOCAB = "draft-ietf-aipref-vocab-08"
#: The category labels of VOCAB (vocab-08 §6.1, Table 1): AI Training, AI Use, Search.
LABELS: tuple[str, ...] = ("train-ai", "ai-use", "search")
#: Content-Signal key -> the VOCAB label it is read as (SPEC E4). ``use`` and any other key
#: map to nothing: their values are kept raw only (``UsagePrefs.signals``).
SIGNAL_LABELS: Mapping[str, str] = MappingProxyType(
    {"ai-train": "train-ai", "ai-input": "ai-use", "search": "search"}
)
# SPEC E4: Content-Signal's values; anything else is unknown.
_SIGNAL_VALUES = {"yes": True, "no": False}
# SPEC E3 (vocab-08 §6.2): the single-byte Tokens y and n; any other value is unknown.
_TOKEN_VALUES = {"y": True, "n": False}
_OWS = " \t"

_Value = bool | None


#: ``UsageSource.where`` of a robots.txt line before the first group (SPEC E1).
FILE_WIDE = "file-wide"


class UsageSource(NamedTuple):
    """Where a statement comes from: a robots.txt line, an HTTP response header, a usage
    document's rule."""

    field: str  # "Content-Usage" or "Content-Signal"
    value: str  # as written (a robots.txt rule's path included)
    line: int | None = None  # the robots.txt line (a document's rule); None for a header
    #: Where it was read when not a group's line or a header: ``FILE_WIDE`` for a robots.txt
    #: line before the first group (SPEC E1), or the name of the usage document
    #: (``tdmrep.json``) whose rule ``line`` it is.
    where: str | None = None


class UsagePrefs(Mapping[str, _Value]):
    """Usage preferences: a read-only mapping of every label in ``LABELS`` to True
    (allowed), False (disallowed) or None (unknown, or not stated).

    ``sources[label]``: the statements that set the label's value (empty when None);
    ``signals[key]``: every raw Content-Signal value of the key, in order (``use`` included).
    Equality is the mapping's: two results with the same values are equal.
    """

    __slots__ = ("_signals", "_sources", "_values")

    def __init__(
        self,
        values: Mapping[str, _Value] | None = None,
        sources: Mapping[str, Iterable[UsageSource]] | None = None,
        signals: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        values = values or {}
        sources = sources or {}
        unknown = (values.keys() | sources.keys()) - set(LABELS)
        if unknown:
            raise ValueError(f"not a label of {VOCAB}: {', '.join(sorted(unknown))}")
        # Private dicts, never handed out: read-only through Mapping and the properties.
        self._values = {label: values.get(label) for label in LABELS}
        self._sources = {label: tuple(sources.get(label, ())) for label in LABELS}
        self._signals = {key: tuple(raw) for key, raw in (signals or {}).items()}

    @classmethod
    def _make(
        cls,
        values: dict[str, _Value],
        sources: dict[str, tuple[UsageSource, ...]],
        signals: dict[str, tuple[str, ...]],
    ) -> UsagePrefs:
        """``__init__`` for this module's own, complete arguments: no checks, no copies (it
        runs for every statement and every combination)."""
        prefs = object.__new__(cls)
        prefs._values, prefs._sources, prefs._signals = values, sources, signals
        return prefs

    def __getitem__(self, label: str) -> _Value:
        return self._values[label]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    @property
    def sources(self) -> Mapping[str, tuple[UsageSource, ...]]:
        return MappingProxyType(self._sources)

    @property
    def signals(self) -> Mapping[str, tuple[str, ...]]:
        return MappingProxyType(self._signals)

    def __repr__(self) -> str:
        signals = f", signals={self._signals}" if self._signals else ""
        return f"UsagePrefs({self._values}{signals})"


#: No statement at all: every label unknown (vocab-08 §3).
NO_PREFERENCE = UsagePrefs()


def combine(*prefs: UsagePrefs) -> UsagePrefs:
    """Several statements as one, per label (SPEC E5, vocab-08 §5.1): any disallow wins,
    else any allow, else unknown. The result's sources are those of the winning value;
    raw Content-Signal values are kept, in argument order."""
    # Statements that state nothing change nothing.
    stated = [p for p in prefs if p._signals or any(v is not None for v in p._values.values())]
    if len(stated) < 2:
        return stated[0] if stated else NO_PREFERENCE
    values: dict[str, _Value] = {}
    sources: dict[str, tuple[UsageSource, ...]] = {}
    for label in LABELS:
        given = [p._values[label] for p in stated]
        value = False if False in given else True if True in given else None
        values[label] = value
        sources[label] = tuple(
            s
            for p in stated
            if value is not None and p._values[label] is value
            for s in p._sources[label]
        )
    signals: dict[str, list[str]] = {}
    for p in stated:
        for key, raw in p._signals.items():
            signals.setdefault(key, []).extend(raw)
    return UsagePrefs._make(values, sources, {key: tuple(raw) for key, raw in signals.items()})


def _field_text(value: str | bytes | Iterable[str | bytes]) -> str:
    """One field value as text; bytes are read as UTF-8, any invalid byte replaced.

    Both formats are ASCII: a non-ASCII character (a byte >= 0x80 however decoded) never
    parses as RFC 9651 and never forms a Content-Signal key or value, so decoding changes
    no answer and gives the text to show. Several field lines are joined with commas first
    (RFC 9651 §4.2, RFC 9110 §5.3); empty ones are skipped, as recipients ignore empty list
    elements (RFC 9110 §5.6.1).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    lines = [_field_text(line).strip(_OWS) for line in value]
    return ", ".join(line for line in lines if line)


def _prefs(
    values: dict[str, _Value], source: UsageSource, signals: Mapping[str, str]
) -> UsagePrefs:
    stated: dict[str, tuple[UsageSource, ...]] = {
        label: (source,) if values[label] is not None else () for label in LABELS
    }
    return UsagePrefs._make(values, stated, {key: (raw,) for key, raw in signals.items()})


def parse_content_usage(
    value: str | bytes | Iterable[str | bytes], source: UsageSource | None = None
) -> UsagePrefs:
    """A ``Content-Usage`` statement: an RFC 9651 Dictionary over the labels (SPEC E3).

    ``value``: the ``Content-Usage`` header's field value, or its field lines (as
    ``response.headers.getlist`` gives them), or a robots.txt rule's statement. Never
    raises; a value that does not parse states nothing. ``source`` names where it comes
    from (default: the header).
    """
    text = _field_text(value)
    members = parse_dictionary(text)
    values: dict[str, _Value] = {}
    for label in LABELS:
        # vocab-08 §6.5: only the Token y or n counts; the parameters are ignored; anything
        # else (absent, another type, another Token, a failed parse) is unknown. Unknown
        # labels are ignored (§6.4).
        member = members.get(label) if members else None
        item = member[0] if member is not None else None
        values[label] = _TOKEN_VALUES.get(item) if isinstance(item, Token) else None
    return _prefs(values, source or UsageSource("Content-Usage", text), {})


def parse_content_signal(
    value: str | bytes | Iterable[str | bytes], source: UsageSource | None = None
) -> UsagePrefs:
    """A Cloudflare ``Content-Signal`` statement (``search=yes, ai-train=no, use=reference``),
    read leniently and mapped onto the labels by ``SIGNAL_LABELS`` (SPEC E4).

    Every ``key=value`` item is kept raw in ``signals`` (keys lower-cased, the last of a
    repeated key). Never raises. ``value`` and ``source`` as for ``parse_content_usage``.
    """
    text = _field_text(value)
    raw: dict[str, str] = {}
    # SPEC E4: no source defines a path form; a value that starts with one states nothing.
    if not text.lstrip(_OWS).startswith("/"):
        for part in text.split(","):
            key, _, item = part.partition("=")
            key = key.strip(_OWS).lower()
            if key:
                raw[key] = item.strip(_OWS)
    values: dict[str, _Value] = {}
    for key, label in SIGNAL_LABELS.items():
        # SPEC E4: yes / no in any case; anything else, or no such key, is unknown.
        item = raw.get(key, "")
        values[label] = _SIGNAL_VALUES.get(item.lower()) if item.isascii() else None
    return _prefs(values, source or UsageSource("Content-Signal", text), raw)

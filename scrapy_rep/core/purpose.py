"""A crawl's declared purpose (``REP_USAGE_PURPOSES``) judged against usage preferences (SPEC G).

Pure: no Scrapy. ``Purpose.refusal(prefs)`` says whether content with these preferences may
be used for the purpose: the first declared label the preferences disallow (or, when
``strict``, leave unknown), with the statements that said so.
"""

from __future__ import annotations

from dataclasses import dataclass

from scrapy_rep.core.usage import FILE_WIDE, LABELS, VOCAB, UsagePrefs, UsageSource

__all__ = ["NO_PURPOSE", "Purpose", "Refusal", "describe_source"]


def describe_source(source: UsageSource) -> str:
    """Where a statement comes from, as a log line or ``scrapy robots`` says it."""
    if source.where not in (None, FILE_WIDE):
        # A usage document's rule (tdmrep.json, a REP_USAGE_SOURCES entry): ``where`` names it.
        rule = f" rule {source.line}" if source.line is not None else ""
        return f"{source.where}{rule}: {source.value}"
    if source.field.startswith("meta "):
        return f'<meta name="{source.field[5:]}" content="{source.value}">'
    if source.field == "robots directive":
        return f"robots meta tag or X-Robots-Tag ({source.value})"
    if source.line is None:
        return f"header {source.field}: {source.value}"
    # SPEC E1: a line before the first group speaks for the whole file; say so.
    scope = f" ({source.where})" if source.where == FILE_WIDE else ""
    return f"robots.txt line {source.line}{scope}: {source.field}: {source.value}"


@dataclass(frozen=True)
class Refusal:
    """Why content may not be used for a declared purpose."""

    label: str
    #: False: a statement disallows it; None: nothing states it and the purpose is strict.
    value: bool | None
    sources: tuple[UsageSource, ...] = ()

    def __str__(self) -> str:
        if self.value is None:
            return f"{self.label} not stated (REP_USAGE_STRICT = True)"
        where = "; ".join(describe_source(s) for s in self.sources)
        return f"{self.label} disallowed by {where}" if where else f"{self.label} disallowed"


@dataclass(frozen=True)
class Purpose:
    """What the crawl's output is used for: labels of ``usage.LABELS`` (empty: nothing
    declared, nothing refused) and whether an unknown preference refuses too."""

    labels: tuple[str, ...] = ()
    strict: bool = False

    def __post_init__(self) -> None:
        unknown = [label for label in self.labels if label not in LABELS]
        if unknown:
            raise ValueError(
                f"unknown usage label(s) {', '.join(map(repr, unknown))}: the labels of "
                f"{VOCAB} are {', '.join(LABELS)}"
            )

    @property
    def declared(self) -> bool:
        return bool(self.labels)

    def refusal(self, prefs: UsagePrefs, *, pending: bool = False) -> Refusal | None:
        """The first declared label ``prefs`` refuses, or None when all may be used.

        ``pending``: a source not known yet may still state a label ``prefs`` leave unknown
        (a usage document being fetched: tdmrep.json's ``0`` allows ``train-ai``), so only a
        disallow refuses, strict or not; the unknown is judged once every source is known."""
        for label in self.labels:
            value = prefs[label]
            if value is False:
                return Refusal(label, False, prefs.sources[label])
            if value is None and self.strict and not pending:
                return Refusal(label, None)
        return None


#: Nothing declared: nothing is refused for its use.
NO_PURPOSE = Purpose()

"""What one response says its content may be used for (SPEC G3). Pure: no Scrapy.

The statements a response carries, each read by its own rule, combined most restrictive first
(vocab-08 §5.1) with each other — and, by the caller, with the robots.txt preferences for
its URL:

- ``Content-Usage`` header lines (attach-05 §2): one RFC 9651 Dictionary;
- ``Content-Signal`` header lines (Cloudflare's format, read as in robots.txt);
- ``noai`` in robots meta tags or ``X-Robots-Tag`` for this crawler (DeviantArt's
  convention): ``train-ai`` disallowed; ``noimageai`` the same, for image responses only;
- TDMRep: tdmrep.json's rule, superseded by the ``tdm-reservation`` header, superseded by the
  HTML ``<meta name="tdm-reservation">`` (TDMRep's own priority, SPEC F3).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scrapy_rep.core.pagerules import ALL_AGENTS, PageRules, meta_tags
from scrapy_rep.core.tdmrep import TdmRule, reservation_value, rule_source, supersede, tdm_prefs
from scrapy_rep.core.tokens import fold, product_token
from scrapy_rep.core.usage import (
    NO_PREFERENCE,
    UsagePrefs,
    UsageSource,
    combine,
    parse_content_signal,
    parse_content_usage,
)

__all__ = ["page_usage"]

_NOAI = UsagePrefs({"train-ai": False})


def page_usage(
    header: Callable[[str], Sequence[bytes]],
    body: bytes | None,
    encoding: str | None,
    rules: PageRules,
    tokens: Sequence[str],
    *,
    image: bool,
    tdm_file: TdmRule | None = None,
) -> UsagePrefs:
    """The response's own usage preferences.

    ``header(name)``: every value of that response header; ``body``: an HTML body, or None
    (headers only); ``rules``: its page rules (``page_rules``), ``tokens`` the crawler's;
    ``image``: an image response (``noimageai``); ``tdm_file``: the origin's tdmrep.json rule
    for this URL, if any.
    """
    statements = []
    usage = header("Content-Usage")
    if usage:
        statements.append(parse_content_usage(usage))
    signal = header("Content-Signal")
    if signal:
        statements.append(parse_content_signal(signal))
    statements.append(_noai(rules, tokens, image))
    statements.append(_tdm(header, body, encoding, tdm_file))
    return combine(*statements)


def _noai(rules: PageRules, tokens: Sequence[str], image: bool) -> UsagePrefs:
    agents = [ALL_AGENTS, *(fold(product_token(t)) for t in tokens)]
    for agent in agents:
        directives = rules.for_agent(agent)
        for name in ("noai", "noimageai") if image else ("noai",):
            if name in directives:
                source = UsageSource("robots directive", f"{agent}: {name}")
                return UsagePrefs(_NOAI, {"train-ai": (source,)})
    return NO_PREFERENCE


def _tdm(
    header: Callable[[str], Sequence[bytes]],
    body: bytes | None,
    encoding: str | None,
    tdm_file: TdmRule | None,
) -> UsagePrefs:
    found: list[tuple[int | None, UsageSource]] = []
    if tdm_file is not None:
        found.append((tdm_file.reservation, rule_source(tdm_file)))
    for raw in header("tdm-reservation")[-1:]:
        text = raw.decode("latin-1").strip()
        found.append((reservation_value(text), UsageSource("tdm-reservation", text)))
    if body:
        for name, content in meta_tags(body, encoding, (b"tdm-reservation",)):
            if name.strip().lower() == "tdm-reservation":
                meta = UsageSource("meta tdm-reservation", content)
                found.append((reservation_value(content), meta))
    winner = supersede(*(value for value, _source in found))
    if winner is None:
        return NO_PREFERENCE
    # The last source that stated a value (the most specific) is the one that decided.
    source = next(source for value, source in reversed(found) if value is not None)
    return tdm_prefs(winner, source)

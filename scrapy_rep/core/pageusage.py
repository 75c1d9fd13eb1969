"""What one response says its content may be used for (SPEC G3). Pure: no Scrapy.

The statements a response carries, each read by its own rule (``sources.usage_of`` combines
them with each other and with the statements known before fetching: robots.txt's, the
origin's documents'):

- ``Content-Usage`` header lines (attach-05 §2): one RFC 9651 Dictionary;
- ``Content-Signal`` header lines (Cloudflare's format, read as in robots.txt);
- ``noai`` in robots meta tags or ``X-Robots-Tag`` for this crawler (DeviantArt's
  convention): ``train-ai`` disallowed; ``noimageai`` the same, for image responses only;
- TDMRep's ``tdm-reservation`` header and HTML ``<meta name="tdm-reservation">``, which
  supersede tdmrep.json's rule in that order (TDMRep's own priority, SPEC F3).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scrapy_rep.core.pagerules import ALL_AGENTS, PageRules, meta_tags
from scrapy_rep.core.sources import Statement
from scrapy_rep.core.tdmrep import HEADER, META, reservation_value, tdm_statement
from scrapy_rep.core.tokens import fold, product_token
from scrapy_rep.core.usage import (
    UsagePrefs,
    UsageSource,
    parse_content_signal,
    parse_content_usage,
)

__all__ = ["page_statements"]

_NOAI = UsagePrefs({"train-ai": False})


def page_statements(
    header: Callable[[str], Sequence[bytes]],
    body: bytes | None,
    encoding: str | None,
    rules: PageRules,
    tokens: Sequence[str],
    *,
    image: bool,
) -> list[Statement]:
    """The response's own statements.

    ``header(name)``: every value of that response header; ``body``: an HTML body, or None
    (headers only); ``rules``: its page rules (``page_rules``), ``tokens`` the crawler's;
    ``image``: an image response (``noimageai``).
    """
    statements = []
    usage = header("Content-Usage")
    if usage:
        statements.append(Statement(parse_content_usage(usage)))
    signal = header("Content-Signal")
    if signal:
        statements.append(Statement(parse_content_signal(signal)))
    noai = _noai(rules, tokens, image)
    if noai is not None:
        statements.append(noai)
    for raw in header("tdm-reservation")[-1:]:
        text = raw.decode("latin-1").strip()
        found = tdm_statement(reservation_value(text), UsageSource("tdm-reservation", text), HEADER)
        if found is not None:
            statements.append(found)
    if body:
        for name, content in meta_tags(body, encoding, (b"tdm-reservation",)):
            if name.strip().lower() == "tdm-reservation":
                source = UsageSource("meta tdm-reservation", content)
                found = tdm_statement(reservation_value(content), source, META)
                if found is not None:
                    statements.append(found)
    return statements


def _noai(rules: PageRules, tokens: Sequence[str], image: bool) -> Statement | None:
    agents = [ALL_AGENTS, *(fold(product_token(t)) for t in tokens)]
    for agent in agents:
        directives = rules.for_agent(agent)
        for name in ("noai", "noimageai") if image else ("noai",):
            if name in directives:
                source = UsageSource("robots directive", f"{agent}: {name}")
                return Statement(UsagePrefs(_NOAI, {"train-ai": (source,)}))
    return None

"""A toy usage source, registered as a user would register the next one (an RSL document, say):
nothing of it lives under ``scrapy_rep/``.

``/.well-known/toy.json`` is a JSON object ``{"refuse-search": ["/path/", ...]}``: a URL under
one of the paths may not be used for ``search``. Registered with
``REP_USAGE_SOURCES = {"_toy_source.TOY": 200}`` (``tests/`` is on a test crawl's path); it
implements ``scrapy_rep.core.sources.UsageDocument`` and inherits the rest from the crawl's one
document resolver.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from scrapy_rep.core.sources import Statement
from scrapy_rep.core.usage import UsagePrefs, UsageSource

NAME = "toy.json"
PATH = "/.well-known/toy.json"


class ToySource:
    name = NAME
    path = PATH
    stats_prefix = "toy"
    labels = ("search",)

    def parse(self, body: bytes) -> tuple[str, ...]:
        try:
            data = json.loads(body)
        except ValueError:
            return ()
        paths = data.get("refuse-search", []) if isinstance(data, dict) else []
        return tuple(path for path in paths if isinstance(path, str) and path.startswith("/"))

    def statement(self, document: tuple[str, ...], url: str) -> Statement | None:
        path = urlsplit(url).path
        for index, refused in enumerate(document, 1):
            if path.startswith(refused):
                source = UsageSource(NAME, f"refuse-search {refused}", index, where=NAME)
                return Statement(UsagePrefs({"search": False}, {"search": (source,)}))
        return None

    def summary(self, document: tuple[str, ...]) -> str:
        return f"{len(document)} path(s)"


TOY = ToySource()

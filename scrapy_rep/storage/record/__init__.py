"""The compliance record (REP_RECORD): WARC 1.1 files holding every robots.txt and usage
document answer and one decision per request, chained and sealed (``RecordWriter``), and the
check that re-derives the decisions from them (``check``). Needs warcio (``scrapy-rep[record]``),
imported only when one of these names is first used: a crawl without a record never needs it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy_rep.storage.record._check import CheckReport, check
    from scrapy_rep.storage.record._writer import RecordWriter

__all__ = ["CheckReport", "RecordWriter", "check"]

_WHERE = {
    "CheckReport": "_check",
    "check": "_check",
    "RecordWriter": "_writer",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)

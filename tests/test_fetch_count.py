"""The 500 KiB cut of scrapy-rep's own fetches (SPEC A1), counted per fetch: on the fetch's
mark, by the fetcher that made it."""

from __future__ import annotations

import pytest
from scrapy import Spider
from scrapy.exceptions import StopDownload
from scrapy.http import Request
from scrapy.utils.test import get_crawler
from test_middleware_basic import MIDDLEWARE

from scrapy_rep.core.parser import MAX_BODY_BYTES
from scrapy_rep.core.tdmrep import TDMREP
from scrapy_rep.crawl._cache import ROBOTS, usage_kind
from scrapy_rep.crawl._events import Events
from scrapy_rep.crawl._fetch import Fetcher
from scrapy_rep.crawl.guard_middleware import fetch_over


def test_a_fetchs_bytes_are_counted_once_on_its_own_mark_by_its_own_fetcher() -> None:
    """The 500 KiB cut counts a fetch's body on the fetch's mark, by the fetcher that made it.
    robots.txt's and tdmrep.json's fetchers listen to the same ``bytes_received`` while both
    download: the other one neither counts nor stops a fetch it did not make (it used to count
    every fetch by ``id(request)`` and keep counts it never dropped, which a later request
    given a reused id would start from). A middleware's ``replace`` of the fetch counts
    towards the same fetch; a request given a copy of the mark after the fetch counts
    nothing."""
    crawler = get_crawler(Spider, MIDDLEWARE)
    events = Events(crawler.stats, lambda: None)
    robots, tdmrep = (
        Fetcher(crawler, kind, events, timeout=30.0, meta_keys=())
        for kind in (ROBOTS, usage_kind(TDMREP))
    )
    fetch = robots._request("http://a.test/robots.txt", None)
    copy = fetch.replace(headers={"X-Proxy-Rotation": "2"})
    chunk = b"#" * (MAX_BODY_BYTES // 2)
    tdmrep._on_bytes(chunk, fetch)  # not its fetch: nothing counted, nothing stopped
    tdmrep._on_bytes(chunk, fetch)
    robots._on_bytes(chunk, fetch)
    with pytest.raises(StopDownload):
        robots._on_bytes(chunk, copy)  # the same fetch: the limit is reached
    fetch_over(fetch)
    later = Request("http://a.test/page", meta=dict(fetch.meta))
    robots._on_bytes(chunk * 3, later)  # the fetch is over: its mark counts nothing more

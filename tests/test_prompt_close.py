"""A crawl closes when its last request is done with, not at Scrapy's next heartbeat (5 s).

Real crawls on every tox env. The engine looks for idleness after a download; a request
scrapy-rep drops and hands to the scraper for its errback is no download, and Scrapy 2.11 only
looked again at its heartbeat (``_compat.scrape_failure`` wakes it now)."""

from __future__ import annotations

from _crawl import run_crawl
from _servers import ScriptedServer

ADDON = {"ADDONS": {"scrapy_rep.Addon": 0}, "ROBOTSTXT_OBEY": True, "LOG_LEVEL": "INFO"}


def test_a_crawl_whose_last_start_request_is_disallowed_closes_at_once(
    http_server: ScriptedServer,
) -> None:
    http_server.robots("User-agent: *\nDisallow: /private/\n")
    private = http_server.url("/private/x")
    result = run_crawl([http_server.url("/page/1"), private], ADDON)
    assert result.close_reason == "finished"
    assert result.stat("robotstxt/forbidden") == 1
    assert [errback.url for errback in result.errbacks] == [private]
    assert http_server.count("/private/", prefix=True) == 0
    # On Scrapy 2.11.2 it closed 5.0 s after it opened (the heartbeat); 0.2 s now.
    assert result.stats["elapsed_time_seconds"] < 2.5

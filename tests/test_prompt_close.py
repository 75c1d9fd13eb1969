"""A crawl closes when its last request is done with, not at Scrapy's next heartbeat (5 s),
nor after a robots.txt fetch nobody waits for any more.

Real crawls on every tox env. The engine looks for idleness after a download; a request
scrapy-rep drops and hands to the scraper for its errback is no download, and Scrapy 2.11 only
looked again at its heartbeat (``_compat.scrape_failure`` wakes it now). The engine waits for
every download in progress, a robots.txt fetch too: requests held past REP_HOLD_TIMEOUT wait
for the attempt that began while they had time left (``Admission.deadline``)."""

from __future__ import annotations

import re

from _crawl import run_crawl
from _servers import Reply, ScriptedServer

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


def _at(log: str, pattern: str) -> list[float]:
    """Seconds (of the day) of the log lines matching ``pattern`` (the log format below)."""
    times = []
    for match in re.finditer(
        rf"^\d{{4}}-\d\d-\d\d (\d\d):(\d\d):(\d\d)\.(\d{{3}}) .*{pattern}", log, re.M
    ):
        hours, minutes, seconds, millis = (int(part) for part in match.groups())
        times.append(hours * 3600 + minutes * 60 + seconds + millis / 1000)
    return times


def test_a_crawl_whose_last_requests_are_dropped_at_rep_hold_timeout_closes_at_once(
    http_server: ScriptedServer,
) -> None:
    # robots.txt never answers (each attempt ends at REP_FETCH_TIMEOUT); the requests waiting
    # for it wait for the attempt that began while they had time left, then are dropped. The
    # crawl closed about 2 s after the last drop before (the engine waited for that attempt,
    # with nothing left to do); now it closes within 1 s of it.
    http_server.route("/robots.txt", Reply(hang=True))
    settings = {
        **ADDON,
        "REP_HOLD_TIMEOUT": 2,
        "REP_FETCH_TIMEOUT": 3,
        "REP_GIVE_UP_AFTER": 0,
        "REP_RETRY_DELAY": 1,
        "LOG_FORMAT": "%(asctime)s.%(msecs)03d [%(name)s] %(levelname)s: %(message)s",
    }
    starts = [http_server.url("/page/1"), http_server.url("/page/2")]
    result = run_crawl(starts, settings, timeout=60)
    assert result.close_reason == "finished"
    assert result.stat("robotstxt/held_dropped") == 2
    assert sorted(errback.url or "" for errback in result.errbacks) == sorted(starts)
    assert http_server.count("/page/", prefix=True) == 0
    dropped = _at(result.log, r"WARNING: Dropped \d+ request\(s\) for ")
    (closing,) = _at(result.log, r"INFO: Closing spider \(finished\)")
    assert dropped and 0 <= closing - max(dropped) < 1.0, result.log

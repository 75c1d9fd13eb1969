"""The middleware as Scrapy users meet it: settings refused at startup, stats, log lines.

robot_parser and the awaitable process_request are in tests/test_middleware_download.py and
Scrapy's own suites (tests/scrapy_suites).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from _crawl import run_crawl
from _servers import ScriptedServer
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Request
from scrapy.utils.test import get_crawler
from test_middleware_basic import MIDDLEWARE, settings
from twisted.internet.error import ConnectionRefusedError, DNSLookupError, TimeoutError

from scrapy_rep import RobotsTxtMiddleware
from scrapy_rep.core.policy import Entry, Fetch, Limits, give_up_at, record
from scrapy_rep.core.seen import BoundedSet
from scrapy_rep.crawl._admission import ADMITTED, SEEN_META, seen_mark
from scrapy_rep.crawl._cache import ROBOTS, OriginCache, OriginState
from scrapy_rep.crawl._events import Events, Waiting
from scrapy_rep.crawl._fetch import describe_failure

ORIGIN = "http://example.com"


def middleware(**extra: Any) -> RobotsTxtMiddleware:
    return RobotsTxtMiddleware.from_crawler(get_crawler(settings_dict={**MIDDLEWARE, **extra}))


# -- ROBOTSTXT_PARSER: ours or Scrapy's default, anything set to another refused at startup ----


@pytest.mark.parametrize(
    "value",
    [
        "scrapy.robotstxt.PythonRobotParser",
        # Scrapy's default value, but set by the project: it asks for Protego's answers.
        "scrapy.robotstxt.ProtegoRobotParser",
        "scrapy.robotstxt.RerpRobotParser",
    ],
)
def test_another_robotstxt_parser_is_refused_saying_what_to_change(value: str) -> None:
    with pytest.raises(ValueError) as refused:
        middleware(ROBOTSTXT_PARSER=value)
    message = str(refused.value)
    assert f"ROBOTSTXT_PARSER={value!r} is not used" in message
    assert "(it was set in the project settings)" in message
    assert "remove the setting or set it to 'scrapy_rep.RobotParser'" in message


@pytest.mark.parametrize(
    "value",
    [
        None,  # Scrapy's default (Protego), i.e. never set by the project
        "scrapy_rep.RobotParser",  # what the add-on sets
        "scrapy_rep.crawl.robot_parser.RobotParser",
    ],
)
def test_our_parser_or_scrapys_default_is_accepted(value: str | None) -> None:
    extra = {} if value is None else {"ROBOTSTXT_PARSER": value}
    assert isinstance(middleware(**extra), RobotsTxtMiddleware)


def test_obey_false_is_not_configured_without_a_message() -> None:
    # Scrapy logs "Disabled …: <message>" at WARNING for a NotConfigured with a message, on
    # every run; its own robots.txt middleware raises it bare, and so does ours.
    with pytest.raises(NotConfigured) as disabled:
        middleware(ROBOTSTXT_OBEY=False)
    assert disabled.value.args == ()


# -- counting disallowed requests: every drop counted, each request logged once ----------------


def test_a_disallowed_link_is_counted_and_logged_once(http_server: ScriptedServer) -> None:
    http_server.robots("User-agent: *\nDisallow: /no/\n")
    disallowed = [f"/no/{i}" for i in range(4)]
    pages = [f"/page/{i}" for i in range(3)]
    http_server.links("/page/start", pages + disallowed)
    for page in pages:
        http_server.links(page, [*disallowed, "/page/start"])
    result = run_crawl(
        [http_server.url("/page/start")], settings(LOG_LEVEL="DEBUG"), follow_links=True
    )
    assert sorted(result.responses) == sorted(http_server.url(p) for p in ["/page/start", *pages])
    # 4 distinct URLs seen 16 times: as Scrapy's built-in (after the dupefilter) counts them.
    lines = [line for line in result.log.splitlines() if "DEBUG: Forbidden by robots.txt" in line]
    assert len(lines) == 4, lines
    assert sorted(line.split("<GET ")[1].split(">")[0] for line in lines) == sorted(
        http_server.url(p) for p in disallowed
    )
    assert result.stat("robotstxt/forbidden") == 4
    assert result.stat("robotstxt/forbidden_before_schedule") == 4
    assert result.stat("robotstxt/forbidden_duplicate") == 12
    assert http_server.count("/no/0") == 0


def test_remembered_fingerprints_are_bounded() -> None:
    seen: BoundedSet[bytes] = BoundedSet(size=3)
    assert [seen.add(bytes([i])) for i in range(3)] == [True, True, True]
    assert seen.add(b"\x00") is False  # seen; now the most recent
    assert seen.add(b"\x03") is True  # the bound: the least recently seen (\x01) goes
    assert len(seen) == 3
    assert seen.add(b"\x00") is False
    assert seen.add(b"\x01") is True
    seen.discard(b"\x01")
    assert seen.add(b"\x01") is True  # forgotten on purpose: new again


# -- requests sent back to the gate: did the dupefilter see them? -------------------------------


def test_a_request_sent_back_to_the_gate_says_whether_the_dupefilter_saw_it() -> None:
    mw = middleware()
    scheduled = Request(ORIGIN + "/a", meta={ADMITTED: "1:x"})  # passed the gate to the scheduler
    own = Request(
        ORIGIN + "/b", dont_filter=True, meta={ADMITTED: "1:x"}
    )  # the spider's dont_filter
    downloaded = Request(ORIGIN + "/c")  # an engine.download caller's: never scheduled
    back = [mw._admission.send_back(request) for request in (scheduled, own, downloaded)]
    assert back == [scheduled, own, downloaded]
    assert all(request.dont_filter and ADMITTED not in request.meta for request in back)
    # Only the first one's fingerprint is the dupefilter's: a resumed job files it again.
    # The mark is the request's fingerprint: a copy of it on another request files nothing.
    marks = [request.meta.get(SEEN_META) for request in back]
    assert marks == [seen_mark(scheduled), None, None]
    # Held, released and sent back again (dont_filter now): still marked.
    scheduled.meta[ADMITTED] = "2:x"
    assert mw._admission.send_back(scheduled).meta[SEEN_META] == seen_mark(scheduled)


# -- log lines as sentences --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (ConnectionRefusedError(), "connection refused"),
        (TimeoutError(), "timed out"),
        (DNSLookupError("no.such.host"), "DNS lookup failed: no.such.host"),
        (OSError("disk on fire"), "OSError: disk on fire"),
    ],
)
def test_failures_read_as_words(error: Exception, text: str) -> None:
    assert describe_failure(error) == text


class _Stats(dict[str, int]):
    """Scrapy's StatsCollector as far as Events uses it."""

    def inc_value(self, key: str, count: int = 1) -> None:
        self[key] = self.get(key, 0) + count


def resolved_line(
    fetch: Fetch,
    body: bytes | None,
    caplog: pytest.LogCaptureFixture,
    *,
    from_store: bool = False,
    waiting: Waiting | None = None,
    entry: Entry | None = None,
    now: float = 1000.0 + 3600,
) -> str:
    limits = Limits()
    cache = OriginCache(ROBOTS, limits, 10)
    entry = record(entry, fetch, 1000.0, limits)
    state: OriginState = cache.install(ORIGIN, entry, cache.parse(entry, body, None), 1000.0)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="scrapy_rep"):
        Events(_Stats(), lambda: None).resolved(
            state, None, now, from_store=from_store, waiting=waiting
        )
    return "\n".join(record.getMessage() for record in caplog.records)


def test_log_lines_read_as_sentences(caplog: pytest.LogCaptureFixture) -> None:
    one = resolved_line(Fetch("ok", 200), b"User-agent: *\nDisallow: /a\n", caplog)
    assert one == f"robots.txt of {ORIGIN}: 1 rule (status 200); next fetch in 23h"
    two = resolved_line(Fetch("ok", 200), b"User-agent: *\nDisallow: /a\nDisallow: /b\n", caplog)
    assert f"{ORIGIN}: 2 rules (status 200)" in two
    none = resolved_line(Fetch("no_robots", 404), None, caplog)
    assert none == (
        f"robots.txt of {ORIGIN}: no robots.txt (status 404): everything allowed; next fetch in 23h"
    )
    stored = resolved_line(Fetch("ok", 200), b"", caplog, from_store=True)
    assert "(read from the robots.txt store, fetched 1h ago)" in stored
    down = resolved_line(Fetch("unreachable", error="connection refused"), None, caplog)
    assert f"robots.txt of {ORIGIN} is unreachable (connection refused)" in down
    assert "unreachable (connection refused): nothing of it is downloaded for now" in down
    assert "holding" not in down.lower()
    assert "no_robots" not in none and "rules" not in one


def _clock(epoch: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch))


def test_each_failed_attempt_says_when_the_next_is_and_when_the_crawl_stops_waiting(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Defaults: attempts at 1000, 1030 and 1090 s (30 s, doubling); the 3rd failure in a row
    # is the give-up (REP_GIVE_UP_AFTER = 3), long before REP_HOLD_TIMEOUT (900 s).
    refused = Fetch("unreachable", error="connection refused")
    waiting = Waiting(Limits(), 900, since=1000.0)
    first = resolved_line(refused, None, caplog, waiting=waiting, now=1000.0)
    assert first == (
        f"robots.txt of {ORIGIN}: unreachable (connection refused): nothing of it is downloaded "
        f"for now; 1 failure in a row; next attempt in 30s ({_clock(1030)}); if it keeps "
        f"failing, the crawl stops waiting for it at about {_clock(1090)}, at its 3rd failure "
        "(REP_GIVE_UP_AFTER)"
    )
    once = record(None, refused, 970.0, Limits())  # failed at 970: this is the 2nd failure
    second = resolved_line(refused, None, caplog, waiting=waiting, entry=once, now=1000.0)
    assert f"2 failures in a row; next attempt in 1m ({_clock(1060)}); " in second
    assert f"the crawl stops waiting for it at about {_clock(1060)}, at its 3rd" in second
    twice = record(once, refused, 990.0, Limits())
    third = resolved_line(refused, None, caplog, waiting=waiting, entry=twice, now=1000.0)
    assert third.endswith(
        "3 failures in a row: the crawl stops waiting for it now (REP_GIVE_UP_AFTER=3)"
    )
    # Failures of an earlier run (read from a store): this run's own attempt comes first.
    resumed = Waiting(Limits(), 900, since=1000.0, started=1500.0)
    earlier = resolved_line(refused, None, caplog, waiting=resumed, entry=twice, now=1000.0)
    assert earlier.endswith(
        f"3 failures in a row; next attempt in 2m ({_clock(1120)}); if it keeps failing, the "
        f"crawl stops waiting for it at about {_clock(1120)}, at its 4th failure "
        "(REP_GIVE_UP_AFTER)"
    )
    # A hold timeout sooner than the give-up, or no give-up at all: REP_HOLD_TIMEOUT it is.
    soon = Waiting(Limits(), 60, since=990.0)
    timed = resolved_line(refused, None, caplog, waiting=soon, now=1000.0)
    assert timed.endswith(
        f"; the crawl stops waiting for its requests from {_clock(1050)} on, each after "
        "REP_HOLD_TIMEOUT=1m"
    )
    never = Waiting(Limits(give_up_after=0), 900, since=1000.0)
    assert f"from {_clock(1900)} on" in resolved_line(
        refused, None, caplog, waiting=never, now=1000.0
    )
    # Nobody waits (the explain command): only when it is fetched again.
    alone = resolved_line(refused, None, caplog, now=1000.0)
    assert alone.endswith("nothing of it is downloaded for now; next fetch in 30s")


def test_the_waiting_warning_names_what_shortens_and_lengthens_the_wait(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limits = Limits()
    cache = OriginCache(ROBOTS, limits, 10)

    def warning(fetch: Fetch, waiting: Waiting) -> str:
        entry = record(None, fetch, 1000.0, limits)
        state: OriginState = cache.install(ORIGIN, entry, None, 1000.0)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="scrapy_rep"):
            Events(_Stats(), lambda: None).holding(state, waiting)
        (line,) = [r for r in caplog.records if r.levelno == logging.WARNING]
        return line.getMessage()

    refused = Fetch("unreachable", error="connection refused")
    give_up = warning(refused, Waiting(limits, 900, since=1000.0))
    assert give_up == (
        f"Waiting for the robots.txt of {ORIGIN} (unreachable: connection refused): its requests "
        f"are held until it answers, or until about {_clock(1090)} if it keeps failing (3 "
        "failures in a row: REP_GIVE_UP_AFTER); to wait less, lower REP_GIVE_UP_AFTER=3 or "
        "REP_RETRY_DELAY=30s; to wait longer, raise them, or set REP_GIVE_UP_AFTER = 0 to wait "
        "up to REP_HOLD_TIMEOUT=15m"
    )
    # 503: the first delay is REP_RETRY_FAST_DELAY's.
    busy = warning(Fetch("unreachable", status=503), Waiting(limits, 900, since=1000.0))
    assert "lower REP_GIVE_UP_AFTER=3 or REP_RETRY_FAST_DELAY=5s;" in busy
    assert f"until about {_clock(1015)}" in busy  # 503 at 1000, 1005, 1015
    never = warning(refused, Waiting(Limits(give_up_after=0), 60, since=1000.0))
    assert never.endswith(
        f"each for at most 1m (REP_HOLD_TIMEOUT), the first until {_clock(1060)}; to wait "
        "less, lower REP_HOLD_TIMEOUT=1m, or set REP_GIVE_UP_AFTER (failures in a row after "
        "which the crawl stops waiting); to wait longer, raise REP_HOLD_TIMEOUT"
    )


def test_give_up_at_follows_the_retry_schedule() -> None:
    limits = Limits(retry_delay=10, retry_fast_delay=2, give_up_after=4)
    refused = Fetch("unreachable", error="connection refused")
    once = record(None, refused, 0.0, limits)
    assert give_up_at(once, limits) == 10 + 20 + 40  # failures 2, 3, 4 at 10, 30, 70
    assert give_up_at(record(once, refused, 10.0, limits), limits) == 10 + 20 + 40
    busy = record(None, Fetch("unreachable", status=503), 0.0, limits)
    assert give_up_at(busy, limits) == 2 + 4 + 8
    asked = record(None, Fetch("unreachable", status=503, retry_after=60), 0.0, limits)
    assert give_up_at(asked, limits) == 60 + 4 + 8  # later answers: no Retry-After assumed
    four = once
    for at in (10.0, 30.0, 70.0):
        four = record(four, refused, at, limits)
    assert give_up_at(four, limits) == 70.0
    assert give_up_at(once, Limits(give_up_after=0)) is None
    assert give_up_at(record(None, Fetch("ok", 200), 0.0, limits), limits) is None


# -- the final gate's fast path and the usage documents -------------------------------------


def _install(resolver: Any, body: bytes) -> None:
    """``body`` as ``resolver``'s (robots.txt, tdmrep.json) copy of ``ORIGIN``, fetched now."""
    cache = resolver._cache
    now = time.time()
    entry = record(None, Fetch("ok", 200), now, Limits())
    cache.install(ORIGIN, entry, cache.parse(entry, body, None), now)


def test_a_tdmrep_json_changed_since_the_gate_refuses_requests_at_download() -> None:
    # The gate let the requests through under a tdmrep.json allowing train-ai; it refuses it
    # by the time they reach the final gate (refreshed meanwhile), robots.txt unchanged.
    gates = middleware(REP_USAGE_PURPOSES=["train-ai"])
    (tdmrep,) = gates._components.documents
    _install(gates._components.resolver, b"User-agent: *\nAllow: /\n")
    _install(tdmrep.resolver, b'[{"location": "/", "tdm-reservation": 0}]')
    scheduled = [Request(f"{ORIGIN}/page/{i}") for i in range(3)]
    for request in scheduled:
        gates._on_scheduled(request)
    assert gates._final_gate(scheduled[0]) is None  # nothing changed: it goes
    _install(tdmrep.resolver, b'[{"location": "/", "tdm-reservation": 1}]')
    for request in scheduled[1:]:
        with pytest.raises(IgnoreRequest):
            gates._final_gate(request)
    assert gates.crawler.stats.get_value("robotstxt/usage_forbidden/train-ai") == 2
    # A tdmrep.json refreshed to the same answer: the requests still go (the slow path).
    later = Request(f"{ORIGIN}/page/later")
    _install(tdmrep.resolver, b'[{"location": "/", "tdm-reservation": 0}]')
    gates._on_scheduled(later)
    _install(tdmrep.resolver, b'[{"location": "/", "tdm-reservation": 0}]')
    assert gates._final_gate(later) is None

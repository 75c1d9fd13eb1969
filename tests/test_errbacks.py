"""Every request scrapy-rep drops reaches its errback, as Scrapy's own middleware delivers one
(SPEC C3): real crawls, the add-on's defaults, spiders whose errbacks are ``async def`` and
yield an item and a new request each.
"""

from __future__ import annotations

from collections.abc import Callable

from _crawl import CrawlResult, Start, run_crawl
from _servers import Reply, ScriptedServer

ADDON = {"ADDONS": {"scrapy_rep.Addon": 0}, "ROBOTSTXT_OBEY": True}
BUILTIN = {"ROBOTSTXT_OBEY": True}


def _by_url(result: CrawlResult) -> dict[str, list[str]]:
    calls: dict[str, list[str]] = {}
    for errback in result.errbacks:
        assert errback.url is not None
        calls.setdefault(errback.url, []).append(errback.message)
    return calls


def test_each_dropped_request_reaches_its_errback_whose_output_is_processed(
    server_factory: Callable[..., ScriptedServer],
) -> None:
    rules, failing, usage = server_factory(), server_factory(), server_factory()
    rules.robots("User-agent: *\nDisallow: /private\n")
    failing.route("/robots.txt", Reply(503))
    usage.robots("User-agent: *\nContent-Signal: ai-train=no\n")
    disallowed = rules.url("/private/a")
    given_up = failing.url("/page/1")
    refused = usage.url("/page/1")
    raises = rules.url("/private/raises")
    starts = [
        Start(disallowed, meta={"then": rules.url("/page/after-disallowed")}),
        Start(given_up, meta={"then": rules.url("/page/after-given-up")}),
        Start(refused, meta={"then": rules.url("/page/after-usage")}),
        Start(raises, meta={"errback_raises": True}),
        # The same request again (same fingerprint, not dont_filter): what the dupefilter
        # would do with it under Scrapy's middleware.
        Start(disallowed),
    ]
    result = run_crawl(
        starts,
        {**ADDON, "REP_USAGE_PURPOSES": ["train-ai"], "REP_RETRY_FAST_DELAY": 0.2},
        spider="errback_yields",
        timeout=60,
    )
    calls = _by_url(result)
    assert calls == {
        disallowed: ["Forbidden by robots.txt"],
        given_up: [calls[given_up][0]],
        refused: ["Content may not be used for train-ai"],
        raises: ["Forbidden by robots.txt"],
    }
    assert calls[given_up][0].startswith(f"{failing.origin}: its robots.txt failed ")
    assert "times in a row (HTTP 503)" in calls[given_up][0]
    assert all(e.ignore_request and e.same_request for e in result.errbacks)
    assert {e.exception for e in result.errbacks} == {"RequestDropped"}
    # What each errback yields: its item reaches the pipelines, its request is downloaded.
    items = {item["errback_for"]: item["message"] for item in result.items}
    assert items == {
        disallowed: calls[disallowed][0],
        given_up: calls[given_up][0],
        refused: calls[refused][0],
    }
    for path in ("/page/after-disallowed", "/page/after-given-up", "/page/after-usage"):
        assert rules.count(path) == 1, path
    # An errback that raises: Scrapy's spider_error, counted and logged as Scrapy does.
    assert result.stat("spider_exceptions/ValueError") == 1
    assert f"errback raised for {raises}" in result.log
    # The duplicate: no second errback, one request_dropped (the dupefilter's answer). The
    # first copy, an origin's first request, went through the dupefilter to wait at the final
    # gate: the dupefilter filters this one, as behind Scrapy's middleware.
    assert result.dropped == [disallowed]
    assert result.stat("dupefilter/filtered") == 1
    assert result.stat("robotstxt/forbidden_duplicate") == 0
    assert rules.count("/private/a") == 0 and failing.count("/page/1") == 0
    assert usage.count("/page/1") == 0
    assert result.close_reason == "finished"


def test_the_disallowed_case_matches_scrapys_built_in_middleware(
    server_factory: Callable[..., ScriptedServer],
) -> None:
    site = server_factory()
    site.robots("User-agent: *\nDisallow: /private\n")
    url = site.url("/private/a")
    starts = [Start(url, meta={"then": site.url("/page/after")}), Start(url)]
    ours = run_crawl(starts, ADDON, spider="errback_yields")
    builtin = run_crawl(starts, BUILTIN, spider="errback_yields")
    for result in (ours, builtin):
        assert [(e.url, e.message, e.ignore_request) for e in result.errbacks] == [
            (url, "Forbidden by robots.txt", True)
        ]
        assert result.dropped == [url]
        assert [item["errback_for"] for item in result.items] == [url]
        assert result.stat("robotstxt/forbidden") == 1
    assert site.count("/page/after") == 2  # once per crawl


def test_a_held_request_dropped_at_the_hold_timeout_reaches_its_errback(
    http_server: ScriptedServer,
) -> None:
    http_server.route("/robots.txt", Reply(500))
    url = http_server.url("/page/1")
    result = run_crawl(
        [url],
        {**ADDON, "REP_HOLD_TIMEOUT": 1, "REP_GIVE_UP_AFTER": 0},
        spider="errback_yields",
    )
    (errback,) = result.errbacks
    assert errback.url == url and errback.ignore_request
    assert "REP_HOLD_TIMEOUT=1s" in errback.message
    assert result.items == [{"errback_for": url, "message": errback.message}]
    assert result.stat("robotstxt/held_dropped") >= 1


def test_a_durable_job_keeps_given_up_requests_and_calls_no_errback(
    http_server: ScriptedServer, tmp_path: object
) -> None:
    http_server.route("/robots.txt", Reply(503))
    url = http_server.url("/page/1")
    result = run_crawl(
        [url],
        {**ADDON, "JOBDIR": str(tmp_path), "REP_RETRY_FAST_DELAY": 0.2},
        spider="errback_yields",
    )
    assert result.errbacks == []  # kept for the next run: not dropped
    assert result.stat("robotstxt/held_kept_for_next_run") == 1


def test_a_blocked_crawl_says_so_once_per_origin_and_sums_up_at_close(
    server_factory: Callable[..., ScriptedServer],
) -> None:
    blocked, partly = server_factory(), server_factory()
    blocked.robots("User-agent: *\nAllow: /public\nDisallow: /\n")
    partly.robots("User-agent: *\nDisallow: /private\n")
    starts = [blocked.url("/"), blocked.url("/page/1"), partly.url("/private/x")]
    starts += [partly.url("/page/1")]
    result = run_crawl(starts, ADDON)
    warnings = [line for line in result.log.splitlines() if "WARNING: Start request" in line]
    assert len(warnings) == 2, warnings  # one per origin, not one per request
    blocked_line = next(line for line in warnings if blocked.origin in line)
    assert "is forbidden by robots.txt" in blocked_line
    assert "Disallow: / (line 3)" in blocked_line
    summary = result.log[result.log.index("scrapy-rep dropped 3 request(s)") :]
    # Each reason counted, with the first one's words (a Disallow's are not compared).
    assert (
        f"{blocked.origin}: 2 disallowed (first: Forbidden by robots.txt: Disallow: / (line 3)"
    ) in summary
    assert (
        f"{partly.origin}: 1 disallowed (Forbidden by robots.txt: Disallow: /private (line 2)"
    ) in summary
    assert partly.count("/page/1") == 1

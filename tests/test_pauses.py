"""A site that says "slow down" is obeyed (SPEC H): real crawls, the add-on's defaults, three
sites of 20 pages on distinct host names (so they do not share a download slot)."""

from __future__ import annotations

import email.utils
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _crawl import CrawlResult, Start, run_crawl
from _servers import Reply, ScriptedServer, Seen, html_page

ADDON = {"ADDONS": {"scrapy_rep.Addon": 0}, "ROBOTSTXT_OBEY": True}
HOSTS = {"a.test": "127.0.0.1", "b.test": "127.0.0.1", "c.test": "127.0.0.1"}
PAGES = 20
OUTAGE = 8.0


class Site:
    """A server answering as ``host`` (its origin is http://host:port)."""

    def __init__(self, server: ScriptedServer, host: str) -> None:
        self.server, self.host = server, host
        server.robots("User-agent: *\nAllow: /\n")

    def url(self, path: str) -> str:
        return self.server.url(path, host=self.host)

    def pages(self) -> list[str]:
        return [self.url(f"/page/{i}") for i in range(PAGES)]

    def page_requests(self) -> list[Seen]:
        return self.server.seen("/page/", prefix=True)

    def fetched(self) -> set[str]:
        return {seen.path for seen in self.page_requests() if seen.status == 200}


@pytest.fixture
def sites(server_factory: Callable[..., ScriptedServer]) -> list[Site]:
    return [Site(server_factory(), host) for host in ("a.test", "b.test", "c.test")]


@pytest.fixture
def outage() -> Iterator[Callable[[Site, Reply, float], threading.Event]]:
    """``outage(site, reply, seconds)``: ``site``'s pages answer ``reply`` from now until
    ``seconds`` after its first page request; the Event is set when it ends."""
    timers: list[threading.Timer] = []

    def start(site: Site, reply: Reply, seconds: float) -> threading.Event:
        ended = threading.Event()

        def end() -> None:
            site.server.outage(None)
            ended.set()

        def first_request() -> None:
            timer = threading.Timer(seconds, end)
            timers.append(timer)
            timer.start()

        site.server.outage(reply)
        site.server.when(lambda: bool(site.page_requests()), first_request, timeout=60)
        return ended

    yield start
    for timer in timers:
        timer.cancel()


def _http_date(seconds: float) -> Callable[[], str]:
    return lambda: email.utils.formatdate(time.time() + seconds, usegmt=True)


def _assert_obeyed(a: Site, others: list[Site], result: CrawlResult, retry_after: float) -> None:
    """What SPEC H promises for an outage of ``OUTAGE`` seconds on ``a``."""
    assert a.fetched() == {f"/page/{i}" for i in range(PAGES)}
    failing = [seen for seen in a.page_requests() if seen.status in (429, 503)]
    first_answer = min(seen.finished for seen in failing if seen.finished is not None)
    # Those already on their way when the first answer came back (what the crawl process had
    # not read yet: half a second covers a loaded machine) ...
    burst = [seen for seen in failing if seen.time <= first_answer + 0.5]
    later = sorted(seen.time for seen in failing if seen.time > first_answer + 0.5)
    # ... at most CONCURRENT_REQUESTS_PER_DOMAIN (8) on Scrapy 2.11; Scrapy >= 2.14 with the
    # asyncio reactor starts a slot's downloads as tasks after counting them, so more of a
    # slot's queue can leave at once (as without scrapy-rep): at most CONCURRENT_REQUESTS.
    assert len(burst) <= 16, [(seen.path, round(seen.time - first_answer, 3)) for seen in burst]
    # Then nothing for Retry-After seconds after each answer but one probe.
    for before, after in zip([first_answer, *later], later, strict=False):
        assert after - before >= retry_after - 0.1, later
    assert len(later) <= OUTAGE // retry_after + 1, later
    assert result.stat("robotstxt/pause/paused") == 1
    assert result.stat("robotstxt/pause/resumed") == 1
    outage_end = max(seen.time for seen in failing)
    for other in others:
        assert len(other.fetched()) == PAGES
        assert max(seen.time for seen in other.page_requests()) < outage_end
    # Held, not lost, and not retried by RetryMiddleware: no retry was spent.
    assert result.stat("retry/count") == 0
    assert result.stat("robotstxt/held") == result.stat("robotstxt/released")


def _crawl(sites: list[Site], **settings: Any) -> CrawlResult:
    starts = [url for site in sites for url in site.pages()]
    return run_crawl(starts, {**ADDON, **settings}, hosts=HOSTS, timeout=90)


def test_a_503_with_retry_after_pauses_the_site_and_loses_nothing(
    sites: list[Site], outage: Callable[[Site, Reply, float], threading.Event]
) -> None:
    a, *others = sites
    ended = outage(a, Reply(503, headers={"Retry-After": "4"}), OUTAGE)
    started = time.monotonic()
    result = _crawl(sites)
    assert ended.is_set()
    _assert_obeyed(a, others, result, 4)
    # The crawl ends by itself soon after the outage.
    assert time.monotonic() - started < OUTAGE + 30
    assert "Pausing http://a.test" in result.log and "Resuming http://a.test" in result.log


def test_a_429_with_an_http_date_retry_after_pauses_the_site(
    sites: list[Site], outage: Callable[[Site, Reply, float], threading.Event]
) -> None:
    a, *others = sites
    outage(a, Reply(429, headers={"Retry-After": _http_date(4)}), OUTAGE)
    result = _crawl(sites)
    # An HTTP date has whole seconds: the pause is 3 to 4 seconds.
    _assert_obeyed(a, others, result, 3)
    assert result.stat("robotstxt/pause/resent/429") >= 1


def test_one_503_on_a_healthy_site_costs_a_short_pause(sites: list[Site]) -> None:
    a, b, _c = sites
    baseline = _crawl([b])
    a.server.route("/page/3", Reply(503), Reply(200, html_page("p3", [])))
    result = _crawl([a])
    assert a.server.count("/page/3") == 2  # fetched again after the pause, once
    assert len(a.fetched()) == PAGES
    assert result.stat("retry/count") == 0
    # REP_PAUSE_DELAY (2 s) without Retry-After, plus a second.
    took = result.stats["elapsed_time_seconds"] - baseline.stats["elapsed_time_seconds"]
    assert took <= 2 + 1, took


def test_one_broken_page_never_pauses_a_site_several_failing_pages_do(
    sites: list[Site], outage: Callable[[Site, Reply, float], threading.Event]
) -> None:
    a, b, _c = sites
    a.server.route("/page/5", Reply(500))
    broken = _crawl([a])
    assert broken.stat("robotstxt/pause/paused") == 0
    assert a.server.count("/page/5") == 3  # Scrapy's RetryMiddleware, as without scrapy-rep
    assert len(a.fetched()) == PAGES - 1
    # The server struggles for a second: every page fails (no answer between the failures).
    outage(b, Reply(500), 1.0)
    struggling = _crawl([b])
    assert struggling.stat("robotstxt/pause/paused") == 1
    assert "3 different pages answered HTTP 5xx in a row" in struggling.log
    assert len(b.fetched()) == PAGES


def test_whose_answer_a_cached_503_a_proxy_status_error_and_a_spider_that_asked(
    sites: list[Site], tmp_path: Path
) -> None:
    a, b, c = sites
    # A 503 cached while pauses were off: replayed later, it pauses nothing.
    a.server.route("/page/1", Reply(503))
    cache = {"HTTPCACHE_ENABLED": True, "HTTPCACHE_DIR": str(tmp_path / "cache")}
    run_crawl([a.url("/page/1")], {**ADDON, **cache, "REP_PAUSE": False}, hosts=HOSTS)
    replayed = run_crawl([a.url("/page/1")], {**ADDON, **cache}, hosts=HOSTS)
    assert replayed.stat("httpcache/hit") >= 1
    assert replayed.stat("robotstxt/pause/paused") == 0
    # A 503 that pauses is never stored by the HTTP cache (run twice: asked twice).
    a.server.route("/page/2", Reply(503), Reply(200, html_page("ok", [])))
    run_crawl([a.url("/page/2")], {**ADDON, **cache}, hosts=HOSTS)
    assert [seen.status for seen in a.server.seen("/page/2")] == [503, 200]
    # The proxy's (or API's) own 503: not the site's.
    proxy = {"Proxy-Status": "ExampleProxy; error=connection_limit_reached"}
    b.server.route("/page/1", Reply(503, headers=proxy))
    proxied = run_crawl([b.url("/page/1")], ADDON, hosts=HOSTS)
    assert proxied.stat("robotstxt/pause/paused") == 0
    # A request whose spider asked for the status gets it; the origin pauses for the others.
    c.server.route("/page/1", Reply(503), Reply(200, html_page("ok", [])))
    # (Without dont_retry, Scrapy's RetryMiddleware retries a 503 even so, as without
    # scrapy-rep; its retries then wait for the pause.)
    asked = Start(c.url("/page/1"), meta={"handle_httpstatus_list": [503], "dont_retry": True})
    result = run_crawl([asked, c.url("/page/2")], ADDON, hosts=HOSTS)
    assert result.statuses[c.url("/page/1")] == 503
    assert result.stat("robotstxt/pause/paused") == 1
    assert result.stat("robotstxt/pause/passed_to_spider") == 1


def test_a_crawl_delay_of_an_hour_is_clamped(server_factory: Callable[..., ScriptedServer]) -> None:
    site = Site(server_factory(), "a.test")
    site.server.robots("User-agent: *\nCrawl-delay: 3600\n")
    starts = [site.url(f"/page/{i}") for i in range(3)]
    # REP_CRAWL_DELAY_MAX lowered from 30 s (its default, README's settings table) to 1 s:
    # the pages come 1 s apart, not an hour.
    clamp = {**ADDON, "REP_CRAWL_DELAY": True, "REP_CRAWL_DELAY_MAX": 1}
    result = run_crawl(starts, clamp, hosts=HOSTS, timeout=60)
    assert len(site.fetched()) == 3
    times = sorted(seen.time for seen in site.page_requests())
    assert all(1 - 0.1 <= after - before < 10 for before, after in itertools.pairwise(times))
    assert "Crawl-delay 3600s of http://a.test" in result.log
    assert "clamped to 1s (REP_CRAWL_DELAY_MAX)" in result.log
    assert result.stat("robotstxt/crawl_delay_clamped") == 1
    skipped = run_crawl(
        starts,
        {**ADDON, "REP_CRAWL_DELAY": True, "REP_CRAWL_DELAY_ABOVE_MAX": "skip"},
        hosts=HOSTS,
    )
    assert skipped.responses == []
    assert skipped.stat("robotstxt/crawl_delay_skipped") == 3


def test_scrapys_default_user_agent_is_warned_about_once(sites: list[Site]) -> None:
    a, _b, _c = sites
    default = run_crawl([a.url("/page/1")], ADDON, hosts=HOSTS)
    lines = [line for line in default.log.splitlines() if "is Scrapy's default" in line]
    assert len(lines) == 1 and "WARNING" in lines[0]
    assert 'set USER_AGENT = "MyBot/1.0 (+https://mybot.example/about)"' in lines[0]
    named = {**ADDON, "USER_AGENT": "TestBot/1.0 (+https://test.example/bot)"}
    # Every warning about it starts so.
    assert "USER_AGENT 'TestBot" not in run_crawl([a.url("/page/2")], named, hosts=HOSTS).log
    no_url = {**ADDON, "USER_AGENT": "TestBot/1.0"}
    assert (
        "has no URL describing the crawler"
        in run_crawl([a.url("/page/3")], no_url, hosts=HOSTS).log
    )


def test_the_first_request_waits_for_the_spider_opened_handler(http_server: ScriptedServer) -> None:
    # RobotsTxtMiddleware's spider_opened handler (an ``async def``) awaits the first read of
    # the pauses the store keeps: every Scrapy release must await it before the first request
    # (here the read answers 1.5 s late; the harness's clock starts at spider_opened).
    from _slow_open import DELAY

    http_server.robots("User-agent: *\nAllow: /\n")
    settings = {
        "ROBOTSTXT_OBEY": True,
        "DOWNLOADER_MIDDLEWARES": {
            "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
            "_slow_open.SlowPausesMiddleware": 100,
            "scrapy_rep.RobotsTxtGuard": 950,
        },
    }
    result = run_crawl([http_server.url("/page/1")], settings)
    assert result.responses == [http_server.url("/page/1")]
    assert result.response_times[0] >= DELAY
    assert "returned a Deferred" not in result.log

"""The final gate for requests that never pass the scheduler (``engine.download`` callers).

Such requests wait in ``process_request`` for their origin's robots.txt, as with
Scrapy's built-in middleware, then are checked. The harness spider does not call
``engine.download``, so this file runs its own small spider in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from _crawl import BASE_SETTINGS, TESTS_DIR
from _servers import Reply, ScriptedServer
from test_middleware_basic import settings

SPIDER = """
import json, sys, time
import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy_rep import running_middleware

config = json.load(open(sys.argv[1]))
outcome = {}


def start_download(engine, request):
    if hasattr(engine, "download_async"):  # Scrapy >= 2.14
        return deferred_from_coro(engine.download_async(request))
    return engine.download(request)


class DownloadSpider(scrapy.Spider):
    name = "download"

    async def start(self):
        for request in self.start_requests():
            yield request

    def start_requests(self):
        outcome["opened"] = time.time()
        yield scrapy.Request(config["first"])
        for url in config.get("also", []):
            yield scrapy.Request(url, callback=self.ignore)

    def ignore(self, response):
        return None

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        signal = getattr(scrapy.signals, "robots_parsed", None)
        outcome["has_signal"] = signal is not None
        if signal is not None:
            crawler.signals.connect(spider.on_robots, signal=signal)
        return spider

    async def on_robots(self, robotparser, request):
        # async def: runs only if the signal is sent with Scrapy's async API.
        allowed = robotparser.allowed(config["direct"][1], "TestBot/1.0")
        outcome.setdefault("parsed", []).append([request.url, allowed])

    async def parse(self, response):
        engine = self.crawler.engine
        for url in config["direct"]:
            # Started, not awaited yet: the "then" requests go on meanwhile (a media pipeline).
            pending = start_download(engine, scrapy.Request(url))
            for then in config.get("then", []):
                yield scrapy.Request(then, callback=self.ignore)
            try:
                got = await maybe_deferred_to_future(pending)
                outcome[url] = got.status
            except IgnoreRequest as exc:
                outcome[url] = "ignored: " + str(exc)
        middleware = running_middleware(self.crawler)
        for url in config.get("parsers", []):
            parser = await middleware.robot_parser(scrapy.Request(url))
            outcome["parser " + url] = parser and [
                type(parser).__name__, parser.allowed(url, "TestBot/1.0")
            ]

    def closed(self, reason):
        outcome["closed"] = time.time()
        outcome["reason"] = reason
        stats = self.crawler.stats
        outcome["held_dropped"] = stats.get_value("robotstxt/held_dropped", 0)
        outcome["dropped_on_close"] = stats.get_value("robotstxt/held_dropped_on_close", 0)


process = CrawlerProcess(config["settings"])
process.crawl(DownloadSpider)
process.start()
json.dump(outcome, open(config["result"], "w"))
"""


def run_download_spider(
    first: str,
    direct: list[str],
    tmp_path: Path,
    *,
    also: list[str] = (),  # type: ignore[assignment]
    then: list[str] = (),  # type: ignore[assignment]
    parsers: list[str] = (),  # type: ignore[assignment]
    **extra_settings: Any,
) -> dict[str, Any]:
    script = tmp_path / "download_spider.py"
    script.write_text(SPIDER, encoding="utf-8")
    result = tmp_path / "result.json"
    config = {
        "first": first,
        "direct": direct,
        "also": list(also),
        "then": list(then),
        "parsers": list(parsers),
        "settings": {**BASE_SETTINGS, **settings(REP_RETRY_DELAY=0.3, **extra_settings)},
        "result": str(result),
    }
    config_path = tmp_path / "config.json"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), *sys.path])}
    proc = subprocess.run(
        [sys.executable, str(script), str(config_path)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    outcome: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
    return outcome


def test_engine_download_waits_for_robots_txt_then_is_checked(
    http_server: ScriptedServer, http_server2: ScriptedServer, tmp_path: Path
) -> None:
    http_server.robots("User-agent: *\nDisallow:\n")
    # The other origin answers 500 first: the direct downloads wait through the
    # retry, then robots.txt decides.
    http_server2.route("/robots.txt", Reply(500), Reply.text("User-agent: *\nDisallow: /page/no\n"))
    allowed, forbidden = http_server2.url("/page/yes"), http_server2.url("/page/no")
    outcome = run_download_spider(http_server.url("/page/1"), [allowed, forbidden], tmp_path)
    assert outcome[allowed] == 200
    assert outcome[forbidden] == "ignored: Forbidden by robots.txt"
    assert http_server2.count("/robots.txt") == 2
    assert http_server2.count("/page/no") == 0
    # robots.txt answered before the page was downloaded.
    assert http_server2.seen("/robots.txt")[1].time < http_server2.seen("/page/yes")[0].time
    # Scrapy's robots_parsed signal (Scrapy >= 2.18) went out once per parsed robots.txt, to
    # an async def handler, with the request that made robots.txt be fetched.
    if outcome["has_signal"]:
        parsed = outcome["parsed"]
        assert isinstance(parsed, list)
        assert len(parsed) == 2
        assert dict(parsed) == {http_server.url("/page/1"): True, allowed: False}
    else:
        assert "parsed" not in outcome


def test_crawl_closes_at_once_with_requests_waiting_for_robots_txt(
    http_server: ScriptedServer, http_server2: ScriptedServer, tmp_path: Path
) -> None:
    # Origin 2's robots.txt answers 500 for ever; with the default REP_HOLD_TIMEOUT (15 min),
    # an engine.download caller waits in process_request, and so does the origin's first
    # request (yielded at start: it waits at the final gate, where its robots.txt failed).
    http_server.robots("User-agent: *\nDisallow:\n")
    http_server2.route("/robots.txt", Reply(500))
    waiting, held = http_server2.url("/page/waits"), http_server2.url("/page/held")
    outcome = run_download_spider(
        http_server.url("/page/1"),
        [waiting],
        tmp_path,
        also=[held],
        CLOSESPIDER_TIMEOUT=2,
        REP_GIVE_UP_AFTER=0,  # waits up to REP_HOLD_TIMEOUT: the close must end the wait
    )
    assert outcome["reason"] == "closespider_timeout"
    assert outcome["closed"] - outcome["opened"] < 2 + 5
    assert outcome[waiting] == (
        f"ignored: {http_server2.origin}: its robots.txt was not known when the crawl closed"
    )
    # Both let go through the drop path with the close's reason, as requests in flight.
    assert outcome["held_dropped"] == 2
    assert outcome["dropped_on_close"] == 0
    assert http_server2.count("/page/", prefix=True) == 0


def test_engine_download_waiting_for_robots_txt_takes_no_concurrent_requests_place(
    http_server: ScriptedServer, http_server2: ScriptedServer, tmp_path: Path
) -> None:
    other, slow = http_server, http_server2
    other.robots("User-agent: *\nDisallow:\n")
    # Origin "slow" answers 503 first: its media download waits for the retry 3 s later.
    slow.route("/robots.txt", Reply(503), Reply.text("User-agent: *\nDisallow:\n"))
    media = slow.url("/page/media")
    pages = [other.url(f"/page/{i}") for i in range(2, 7)]
    outcome = run_download_spider(
        other.url("/page/1"),
        [media],
        tmp_path,
        then=pages,
        CONCURRENT_REQUESTS=1,
        REP_RETRY_FAST_DELAY=3,
    )
    assert outcome[media] == 200
    retried = slow.seen("/robots.txt")[1].time
    # With CONCURRENT_REQUESTS=1 the waiting download would hold the one place until then.
    assert all(seen.time < retried for seen in other.seen("/page/", prefix=True))
    assert other.count("/page/", prefix=True) == 6


def test_robot_parser_answers_like_scrapys_for_each_kind_of_origin(
    http_server: ScriptedServer, http_server2: ScriptedServer, tmp_path: Path, unused_port: int
) -> None:
    # robot_parser(request), as Scrapy's middleware has it.
    http_server.robots("User-agent: *\nDisallow: /page/no\n")
    http_server2.route("/robots.txt", Reply(404))
    down = f"http://127.0.0.1:{unused_port}/x"
    rules, no_robots = http_server.url("/page/no"), http_server2.url("/x")
    outcome = run_download_spider(
        http_server.url("/page/1"), [], tmp_path, parsers=[rules, no_robots, down]
    )
    assert outcome["parser " + rules] == ["RobotParser", False]
    assert outcome["parser " + no_robots] is None  # no rules: everything allowed
    # Unreachable: a parser that allows nothing, what the crawl does with its requests for now.
    assert outcome["parser " + down] == ["RobotParser", False]
    assert http_server.count("/robots.txt") == 1  # the crawl's copy was used, not fetched again

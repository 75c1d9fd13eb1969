"""One broad crawl of ``bench_broad.py``, in its own process: results as JSON.

``python benchmarks/_broad_crawl.py CONFIG.json`` (``BENCH_PROFILE=FILE``: run under cProfile,
stats to FILE; ``BENCH_TRACEMALLOC=FILE``: what the crawl keeps at its end, by allocating line,
to FILE; ``BENCH_GC_PROMOTED=1``: also ``gc_promoted`` below; ``BENCH_GC_THRESHOLD=N``: the
crawl process's first garbage-collection threshold, ``gc.set_threshold(N)``); CONFIG keys:
``settings`` (dict), ``start`` (home page URLs), ``result`` (path the JSON result is written
to). The spider follows every link of every page. Written on exit (times in seconds since
``spider_opened``):

- ``pages``: pages the spider got (2xx; error statuses go to the errback, not counted),
  ``last_page``: when the last one arrived, ``closed``: when the spider closed;
- ``first_page_latency``: per site that got a page, the time from its first request reaching
  the scheduler (``request_scheduled``, which fires even for requests a robots.txt gate then
  holds) to its first page;
- ``robots_requests``: per host, robots.txt requests that reached the downloader;
  ``page_requests``: per host, the other requests that did;
- ``robots_answered``, ``first_page_answered``: per host, when the downloader had the first
  answer to its robots.txt and to any other request (``response_downloaded``): a site's first
  page after its robots.txt is known; ``first_page_sent``: per host, when its first page
  request reached the downloader, and ``first_page_waited`` whether it had waited for
  robots.txt at scrapy-rep's final gate (the two halves of that latency);
- ``turns_to_first_page``: per host, the turns of the event loop from the first answer to its
  robots.txt to its first page request reaching the downloader (asyncio reactor only: a turn
  handles every event ready at once, so in a busy crawl each one is a wait);
- ``page_urls``, ``page_times``: the URL of every page the spider got, and when;
- ``gc_pauses``: ``[start, end]`` of every full (generation-2) collection of the cyclic
  garbage collector: the pauses of the whole process, which a site's wait may contain;
  ``gc_promoted`` (with ``BENCH_GC_PROMOTED``): what young collections promoted to the oldest
  generation, by kind (``_Promotions``);
- ``cpu``: CPU seconds of this process from ``spider_opened`` to ``spider_closed``;
  ``maxrss_kib``: its peak resident set (``ru_maxrss``, whole process life);
- ``stats``: Scrapy's final stats (numbers only) and ``close_reason``;
- ``timeline``: every 0.25 s, ``[t, start requests pulled from the spider, requests held
  (waiting for robots.txt), requests in Downloader.active, requests in the scheduler, pages,
  CPU seconds]``: how lazily start requests are taken while robots.txt is being fetched, and
  whether the crawl is CPU-bound (CPU seconds rising as fast as t).
"""

from __future__ import annotations

import gc
import json
import os
import resource
import sys
import time
import types
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler, CrawlerProcess
from scrapy.http import Request, Response, TextResponse
from scrapy.settings import default_settings
from scrapy.utils.httpobj import urlparse_cached
from twisted.python.failure import Failure

RESOLVER = "_broad_resolver.SiteResolver"

#: Turns of the asyncio event loop so far (``_count_turns``).
TURNS = [0]
#: ``[start, end]`` (monotonic) of every full collection so far (``_time_full_collections``).
FULL_COLLECTIONS: list[list[float]] = []


def _count_turns() -> None:
    """Count the event loop's turns (``BaseEventLoop._run_once``, asyncio's one step)."""
    import asyncio.base_events

    loop_class: Any = asyncio.base_events.BaseEventLoop
    run_once = getattr(loop_class, "_run_once", None)
    if run_once is None:
        return

    def counted(loop: Any) -> None:
        TURNS[0] += 1
        run_once(loop)

    loop_class._run_once = counted


def _time_full_collections(phase: str, info: dict[str, Any]) -> None:
    if info["generation"] == 2:
        if phase == "start":
            FULL_COLLECTIONS.append([time.monotonic(), 0.0])
        else:
            FULL_COLLECTIONS[-1][1] = time.monotonic()


def _kind(obj: object) -> str:
    """Its type and, for code (functions, methods, coroutines, generators, frames), whose code:
    a promoted task or closure then says which library made it."""
    kind = type(obj)
    target = obj.__func__ if isinstance(obj, types.MethodType) else obj
    code = next(
        (
            getattr(target, attr)
            for attr in ("__code__", "cr_code", "gi_code", "ag_code", "f_code")
            if hasattr(target, attr)
        ),
        None,
    )
    if isinstance(code, types.CodeType):
        where = "/".join(Path(code.co_filename).parts[-3:])  # package/module path
        return f"{kind.__name__} {where}:{getattr(code, 'co_qualname', code.co_name)}"
    return f"{kind.__module__}.{kind.__qualname__}"


class _Promotions:
    """What generation-1 collections promote to the oldest generation, by kind, counted at every
    20th of them. CPython runs a full collection after 10 generation-1 collections if the
    objects promoted since the last full one are a quarter of the oldest generation or more, so
    these are what make full collections come."""

    EVERY = 20

    def __init__(self) -> None:
        self.collections = 0
        self.sampled = 0
        self.promoted: Counter[str] = Counter()
        self._young: dict[int, str] | None = None

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 1:
            return
        if phase == "start":
            self.collections += 1
            if self.collections % self.EVERY == 0:
                # Ids, not the objects: holding them would keep them alive.
                young = gc.get_objects(0) + gc.get_objects(1)
                self._young = {id(o): _kind(o) for o in young}
        elif self._young is not None:
            young, self._young = self._young, None
            # A survivor is in generation 2 now, and an object already there was alive when
            # the young ones were listed: an id found in both is one promoted object.
            for obj in gc.get_objects(2):
                kind = young.get(id(obj))
                if kind is not None:
                    self.promoted[kind] += 1
            self.sampled += 1

    def result(self) -> dict[str, Any]:
        return {
            "collections": self.collections,
            "sampled": self.sampled,
            "promoted": self.promoted.most_common(),
        }


class BroadSpider(scrapy.Spider):
    name = "broad"

    def __init__(self, start: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.home_pages = start
        self.opened = time.monotonic()
        self.cpu_at_open = time.process_time()
        self.pages = 0
        self.last_page = 0.0
        self.closed_at = 0.0
        self.cpu = 0.0
        self.close_reason = ""
        self.first_request: dict[str, float] = {}
        self.first_page: dict[str, float] = {}
        self.robots: Counter[str] = Counter()
        self.page_requests: Counter[str] = Counter()
        self.robots_answered: dict[str, float] = {}
        # Per site: when its first page request reached the downloader, and whether it had
        # waited for robots.txt at scrapy-rep's final gate (else it was held, or Scrapy's).
        self.first_page_sent: dict[str, float] = {}
        self.turn_robots: dict[str, int] = {}
        self.turns_to_first_page: dict[str, int] = {}
        self.first_page_waited: dict[str, bool] = {}
        self.first_page_answered: dict[str, float] = {}
        self.page_urls: list[str] = []
        self.page_times: list[float] = []
        self.pulled = 0
        # Per site: requests in the downloader now (request_reached_downloader until
        # request_left_downloader), and the most at once.
        self.in_downloader: Counter[str] = Counter()
        self.most_in_downloader: dict[str, int] = {}
        self.timeline: list[list[float]] = []
        self._sampler: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> BroadSpider:
        spider: BroadSpider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.on_opened, signals.spider_opened)
        crawler.signals.connect(spider.on_scheduled, signals.request_scheduled)
        crawler.signals.connect(spider.on_reached, signals.request_reached_downloader)
        crawler.signals.connect(spider.on_downloaded, signals.response_downloaded)
        crawler.signals.connect(spider.on_left, signals.request_left_downloader)
        return spider

    def _requests(self) -> Iterator[Request]:
        for url in self.home_pages:
            self.pulled += 1
            yield Request(url, callback=self.parse, errback=self.on_error)

    # Scrapy >= 2.13 calls start(); older versions call start_requests().
    async def start(self) -> AsyncIterator[Request]:
        for request in self._requests():
            yield request

    def start_requests(self) -> Iterator[Request]:
        return self._requests()

    def now(self) -> float:
        return time.monotonic() - self.opened

    def on_opened(self, spider: scrapy.Spider) -> None:
        self.opened = time.monotonic()
        self.cpu_at_open = time.process_time()
        # Imported here: importing it at the top would install the default reactor early.
        from twisted.internet import task

        self._sampler = task.LoopingCall(self.sample)
        self._sampler.start(0.25)

    def sample(self) -> None:
        engine, stats = self.crawler.engine, self.crawler.stats
        if engine is None or stats is None:
            return
        held = sum(
            (stats.get_value(f"robotstxt/{k}", 0) or 0) * sign
            for k, sign in (("held", 1), ("released", -1), ("held_dropped", -1))
        )
        slot = getattr(engine, "_slot", None) or getattr(engine, "slot", None)
        scheduler = len(slot.scheduler) if slot is not None else 0  # type: ignore[arg-type]
        active = len(engine.downloader.active)
        cpu = round(time.process_time() - self.cpu_at_open, 2)
        row = [round(self.now(), 2), self.pulled, held, active, scheduler, self.pages, cpu]
        self.timeline.append(row)

    def on_scheduled(self, request: Request, spider: scrapy.Spider) -> None:
        self.first_request.setdefault(urlparse_cached(request).netloc, self.now())

    def on_reached(self, request: Request, spider: scrapy.Spider) -> None:
        url = urlparse_cached(request)
        now = self.in_downloader[url.netloc] = self.in_downloader[url.netloc] + 1
        if now > self.most_in_downloader.get(url.netloc, 0):
            self.most_in_downloader[url.netloc] = now
        if url.path == "/robots.txt":
            self.robots[url.netloc] += 1
        else:
            self.page_requests[url.netloc] += 1
            if url.netloc not in self.first_page_sent:
                self.first_page_sent[url.netloc] = self.now()
                if url.netloc in self.turn_robots:
                    turns = TURNS[0] - self.turn_robots[url.netloc]
                    self.turns_to_first_page[url.netloc] = turns
                # Waited for robots.txt at the final gate (scrapy-rep), or was held.
                self.first_page_waited[url.netloc] = request.meta.get("_rep_admitted") == "first"

    def on_left(self, request: Request, spider: scrapy.Spider) -> None:
        self.in_downloader[urlparse_cached(request).netloc] -= 1

    def on_downloaded(self, response: Response, request: Request, spider: scrapy.Spider) -> None:
        url = urlparse_cached(request)
        answered = self.robots_answered if url.path == "/robots.txt" else self.first_page_answered
        answered.setdefault(url.netloc, self.now())
        if url.path == "/robots.txt":
            self.turn_robots.setdefault(url.netloc, TURNS[0])

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Request]:
        now = self.now()
        self.pages += 1
        self.last_page = now
        self.first_page.setdefault(urlparse_cached(response).netloc, now)
        self.page_urls.append(response.url)
        self.page_times.append(now)
        if isinstance(response, TextResponse):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, callback=self.parse, errback=self.on_error)

    def on_error(self, failure: Failure) -> None:
        """Dead sites, 5xx pages, dropped requests: expected, not pages."""

    def closed(self, reason: str) -> None:
        traced = os.environ.get("BENCH_TRACEMALLOC")
        if traced:
            # What the crawl keeps at its end, by the line that allocated it.
            import tracemalloc

            top = tracemalloc.take_snapshot().statistics("lineno")[:40]
            Path(traced).write_text("\n".join(str(s) for s in top), encoding="utf-8")
        self.close_reason = reason
        self.closed_at = self.now()
        self.cpu = time.process_time() - self.cpu_at_open
        if self._sampler is not None and self._sampler.running:
            self._sampler.stop()


def _settings(config: dict[str, Any]) -> dict[str, Any]:
    settings = dict(config["settings"])
    # Scrapy >= 2.14 deprecates DNS_RESOLVER in favour of TWISTED_DNS_RESOLVER.
    new_name = hasattr(default_settings, "TWISTED_DNS_RESOLVER")
    settings["TWISTED_DNS_RESOLVER" if new_name else "DNS_RESOLVER"] = RESOLVER
    if getattr(default_settings, "REQUEST_FINGERPRINTER_IMPLEMENTATION", None) == "2.6":
        settings.setdefault("REQUEST_FINGERPRINTER_IMPLEMENTATION", "2.7")
    return settings


def main(config_path: str) -> int:
    # One kept-alive connection per site adds up: lift the soft FD limit.
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    _count_turns()
    gc.callbacks.append(_time_full_collections)
    threshold = os.environ.get("BENCH_GC_THRESHOLD")
    if threshold:
        gc.set_threshold(int(threshold))
    promotions = _Promotions() if os.environ.get("BENCH_GC_PROMOTED") else None
    if promotions is not None:
        gc.callbacks.append(promotions)
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    if os.environ.get("BENCH_TRACEMALLOC"):
        import tracemalloc

        tracemalloc.start()
    process = CrawlerProcess(_settings(config))
    crawler = process.create_crawler(BroadSpider)
    process.crawl(crawler, start=config["start"])
    profile = os.environ.get("BENCH_PROFILE")
    if profile:
        # Where the time goes (``python -m pstats FILE``): the whole crawl, reactor included.
        import cProfile

        cProfile.runctx("process.start()", globals(), {"process": process}, profile)
    else:
        process.start()
    spider = crawler.spider
    assert isinstance(spider, BroadSpider)
    stats = crawler.stats.get_stats() if crawler.stats else {}
    first = spider.first_request
    latency = [t - first[h] for h, t in spider.first_page.items() if h in first]
    result = {
        "pages": spider.pages,
        "last_page": spider.last_page,
        "closed": spider.closed_at,
        "close_reason": spider.close_reason,
        "cpu": spider.cpu,
        "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "first_page_latency": latency,
        "robots_requests": dict(spider.robots),
        "page_requests": dict(spider.page_requests),
        "most_in_downloader": spider.most_in_downloader,
        "first_page_sent": spider.first_page_sent,
        "first_page_waited": spider.first_page_waited,
        "turns_to_first_page": spider.turns_to_first_page,
        "robots_answered": spider.robots_answered,
        "first_page_answered": spider.first_page_answered,
        "page_urls": spider.page_urls,
        "page_times": spider.page_times,
        "timeline": spider.timeline,
        "gc_pauses": [
            [start - spider.opened, end - spider.opened]
            for start, end in FULL_COLLECTIONS
            if start >= spider.opened
        ],
        "stats": {k: v for k, v in stats.items() if isinstance(v, (int, float))},
    }
    if promotions is not None:
        result["gc_promoted"] = promotions.result()
    Path(config["result"]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

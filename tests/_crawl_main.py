"""Subprocess entry point of ``tests/_crawl.py``: one real Scrapy crawl, results as JSON.

Usage: ``python tests/_crawl_main.py CONFIG.json`` (``tests/`` is then ``sys.path[0]``).
CONFIG keys: ``spider`` (``"harness"``, ``"errback_yields"``, ``"drop_chain"``,
``"sitemap"`` or ``"copied_meta"``, see ``SPIDERS``), ``sitemap_urls`` (the sitemap spider's),
``chain`` (the drop chains' {drops, measure_at, sample_every}), ``copy`` (the copied_meta
spider's {idiom, after, target, user_agent}), ``settings`` (dict), ``start`` (list
of {url, meta, dont_filter, priority}),
``follow_links`` (bool), ``follow_meta`` (dict), ``items`` (bool: yield one dict item per
response), ``extra`` (list of {url, at, meta, dont_filter}), ``hosts`` (name → IP for
``_resolver.MappedResolver``), ``memory_limit`` (bytes of address space, RLIMIT_AS, or null),
``say_idle`` (bool: print ``spider idle {stats}`` to stdout, the stats as JSON, on every
``spider_idle``), ``result`` (path the JSON result is written to). Written on exit:
``stats``, ``responses``, ``response_times`` (seconds since spider_opened), ``statuses``,
``errbacks``, ``reached_downloader``, ``dropped``, ``items`` (scraped, as dicts),
``close_reason``, ``cpu_time`` (CPU seconds of the crawl process from spider_opened to
spider_closed), ``max_rss`` and ``max_rss_at_open`` (peak RSS in bytes at the end and at
spider_opened), ``probe`` (what
the drop chain measured, by drop number; the copied_meta spider's ``copied_from``).
"""

from __future__ import annotations

import datetime
import gc
import inspect
import json
import os
import resource
import sys
import time
import types
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler, CrawlerProcess
from scrapy.exceptions import DontCloseSpider, IgnoreRequest
from scrapy.http import Request, Response, TextResponse
from scrapy.settings import default_settings
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.spiders import SitemapSpider
from twisted.python.failure import Failure

import scrapy_rep

_RESOLVER = "_resolver.MappedResolver"
#: What ``say_idle`` prints, then the crawl's stats as JSON.
IDLE_LINE = "spider idle"


class HarnessSpider(scrapy.Spider):
    name = "harness"

    def __init__(self, harness: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.harness = harness
        self.responses: list[str] = []
        self.response_times: list[float] = []
        self._opened_at = time.monotonic()
        self._cpu_at_open = time.process_time()
        self.cpu_time: float | None = None
        self.max_rss_at_open: int | None = None
        self.statuses: dict[str, int] = {}
        self.errbacks: list[dict[str, Any]] = []
        self.reached_downloader: list[str] = []
        # Per start request, the downloads in Downloader.active when it was scheduled.
        self.start_scheduled_active: list[int] = []
        self.dropped: list[str] = []
        self.items: list[dict[str, Any]] = []
        self.close_reason: str | None = None
        self._pending_extra = len(harness.get("extra", []))
        # Requests made from the config, by URL: an errback's failure.request must be one.
        self._sent: dict[str, list[Request]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> HarnessSpider:
        spider: HarnessSpider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider._on_opened, signals.spider_opened)
        crawler.signals.connect(spider._on_idle, signals.spider_idle)
        crawler.signals.connect(spider._on_reached, signals.request_reached_downloader)
        crawler.signals.connect(spider._on_scheduled, signals.request_scheduled)
        crawler.signals.connect(spider._on_dropped, signals.request_dropped)
        crawler.signals.connect(spider._on_item, signals.item_scraped)
        return spider

    def _request(self, entry: dict[str, Any]) -> Request:
        request = Request(
            entry["url"],
            callback=self.parse,
            errback=self.on_error,
            meta=entry.get("meta") or {},
            dont_filter=bool(entry.get("dont_filter", False)),
            priority=int(entry.get("priority", 0)),
        )
        self._sent.setdefault(request.url, []).append(request)
        return request

    # Scrapy >= 2.13 calls start(); older versions call start_requests().
    async def start(self) -> AsyncIterator[Request]:
        for entry in self.harness["start"]:
            yield self._request(entry)

    def start_requests(self) -> Iterator[Request]:
        for entry in self.harness["start"]:
            yield self._request(entry)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Request | dict[str, Any]]:
        self.responses.append(response.url)
        self.response_times.append(time.monotonic() - self._opened_at)
        self.statuses[response.url] = response.status
        if self.harness.get("items"):
            item = {"url": response.url}
            for key in self.harness.get("item_meta", []):
                value = response.meta.get(key)
                # Mappings (PageRules aside) as plain dicts, so the item is JSON.
                item[key] = dict(value) if isinstance(value, Mapping) else value
            yield item
        if not self.harness.get("follow_links") or not isinstance(response, TextResponse):
            return
        meta = self.harness.get("follow_meta") or {}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse, errback=self.on_error, meta=meta)

    def on_error(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        status = failure.value.response.status if isinstance(failure.value, HttpError) else None
        self.errbacks.append(
            {
                "url": request.url if request is not None else None,
                "exception": type(failure.value).__name__,
                "message": str(failure.value),
                "status": status,
                "ignore_request": isinstance(failure.value, IgnoreRequest),
                "same_request": request is not None
                and any(sent is request for sent in self._sent.get(request.url, [])),
            }
        )

    def _on_opened(self, spider: scrapy.Spider) -> None:
        from twisted.internet import reactor

        self._opened_at = time.monotonic()
        self._cpu_at_open = time.process_time()
        self.max_rss_at_open = _max_rss()
        clock: Any = reactor
        for entry in self.harness.get("extra", []):
            clock.callLater(float(entry.get("at", 0)), self._inject, entry)

    def _inject(self, entry: dict[str, Any]) -> None:
        self._pending_extra -= 1
        self.crawler.engine.crawl(self._request(entry))

    def _on_idle(self, spider: scrapy.Spider) -> None:
        if self.harness.get("say_idle"):
            stats = _jsonable(self.crawler.stats.get_stats())
            print(f"{IDLE_LINE} {json.dumps(stats)}", flush=True)
        if self._pending_extra > 0:
            raise DontCloseSpider

    def _on_reached(self, request: Request, spider: scrapy.Spider) -> None:
        self.reached_downloader.append(request.url)

    def _on_scheduled(self, request: Request, spider: scrapy.Spider) -> None:
        if request.meta.get("is_start_request"):
            active = len(self.crawler.engine.downloader.active)
            self.start_scheduled_active.append(active)

    def _on_dropped(self, request: Request, spider: scrapy.Spider) -> None:
        self.dropped.append(request.url)

    def _on_item(self, item: Any, spider: scrapy.Spider) -> None:
        self.items.append(dict(item))

    def closed(self, reason: str) -> None:
        self.close_reason = reason
        self.cpu_time = time.process_time() - self._cpu_at_open


class ErrbackYieldsSpider(HarnessSpider):
    """The harness spider whose errback is an ``async def`` generator, as a spider that tries
    elsewhere from its errback writes it: it records the failure, then yields one item
    (``{"errback_for": url, "message": ...}``) and, when the failed request's meta has
    ``then`` (a URL), one new request for it. ``meta["errback_raises"]``: it raises instead."""

    name = "errback_yields"

    async def on_error(self, failure: Failure) -> AsyncIterator[Any]:  # type: ignore[override]
        super().on_error(failure)
        request = failure.request  # type: ignore[attr-defined]
        if request.meta.get("errback_raises"):
            raise ValueError(f"errback raised for {request.url}")
        yield {"errback_for": request.url, "message": str(failure.value)}
        then = request.meta.get("then")
        if then:
            yield Request(then, callback=self.parse, errback=self.on_error)


class SitemapHarnessSpider(HarnessSpider, SitemapSpider):
    """Scrapy's SitemapSpider with the harness's recording: ``sitemap_urls`` from the config
    (a robots.txt URL among them makes it read the file's ``Sitemap:`` lines), every page of
    the sitemaps to ``parse``."""

    name = "sitemap"

    def __init__(self, harness: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(harness, **kwargs)
        self.sitemap_urls = list(harness.get("sitemap_urls", []))

    def _sitemap_requests(self) -> Iterator[Request]:
        for url in self.sitemap_urls:
            yield Request(url, callback=self._parse_sitemap, errback=self.on_error)

    async def start(self) -> AsyncIterator[Request]:
        for request in self._sitemap_requests():
            yield request

    def start_requests(self) -> Iterator[Request]:
        yield from self._sitemap_requests()


class DropChainSpider(HarnessSpider):
    """Errback chains of dropped requests (a robots.txt Disallow): each start request's
    errback yields the next request of its chain (the URL with the link's number as its last
    path segment), and so on until ``chain["drops"]`` requests were made in all. It records no
    errback (20,000 records would be the growth it measures). ``probe`` has, at each drop
    number of ``chain["measure_at"]`` (inside its errback), what is alive after a full
    collection (``_census``) and ``sampled_alive``: of the Requests, Failures and exceptions of
    every ``chain["sample_every"]``-th drop before, those of a stale drop still alive.

    A drop is stale once the errback of the next drop of its chain returned too (``_done``:
    per chain, the last link whose errback returned). Until then its Request and Failure are
    alive by right: Scrapy resumes an errback only after the request it yields was dropped,
    and may hold its Failure a moment after it returned. Chains do not keep in step (under
    load some run drops ahead), so only a drop's own chain says whether it is over."""

    name = "drop_chain"

    def __init__(self, harness: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(harness, **kwargs)
        chain = harness["chain"]
        self.drops: int = chain["drops"]
        self.measure_at: list[int] = chain["measure_at"]
        self.sample_every: int = chain["sample_every"]
        self.probe: dict[str, dict[str, int | None]] = {}
        self._made = len(harness["start"])
        self._dropped = 0
        self._sample: list[tuple[str, weakref.ref[Any]]] = []
        self._done: dict[str, int] = {}

    def on_error(self, failure: Failure) -> Iterator[Request]:  # type: ignore[override]
        self._dropped += 1
        request: Request = failure.request  # type: ignore[attr-defined]
        base, link = request.url.rsplit("/", 1)
        if self._dropped in self.measure_at:
            alive = sum(ref() is not None and self._stale(url) for url, ref in self._sample)
            self.probe[str(self._dropped)] = {
                **_census(failure, self._stale),
                "sampled_alive": alive,
            }
        if self._dropped % self.sample_every == 0:
            self._sample += [
                (request.url, weakref.ref(o)) for o in (request, failure, failure.value)
            ]
        if self._made < self.drops:
            self._made += 1
            yield Request(f"{base}/{int(link) + 1}", callback=self.parse, errback=self.on_error)
        self._done[base] = int(link)

    def _stale(self, url: str) -> bool:
        """Is ``url`` a drop of a chain whose next drop's errback returned too? Not a start
        request (link 0): the harness keeps those (``_sent``)."""
        base, _, link = url.rpartition("/")
        return link.isdigit() and 0 < int(link) < self._done.get(base, 0)


class CopiedMetaSpider(HarnessSpider):
    """The harness spider that, once, after the page ``copy["after"]`` (its callback's own
    output first: links followed as ``follow_links`` says), makes one more request by an
    everyday idiom that copies that page's meta or request (``copy["idiom"]``):

    ``follow``              ``response.follow(target)`` (copies nothing: the control)
    ``follow_meta``         ``response.follow(target, meta=response.meta)``
    ``request_meta``        ``Request(absolute target, meta=dict(response.meta))``
    ``replace_url``         ``response.request.replace(url=absolute target)``
    ``replace_user_agent``  ``response.request.replace(headers={"User-Agent":
                            copy["user_agent"]}, dont_filter=True)`` (the page again)

    ``probe["copied_from"]`` says what was copied: the page's ``url``, its ``meta_keys`` and the
    new request's (``copy_meta_keys``, ``copy_url``)."""

    name = "copied_meta"

    def __init__(self, harness: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(harness, **kwargs)
        self.copy: dict[str, Any] = harness["copy"]
        self.probe: dict[str, dict[str, Any]] = {}

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Request | dict[str, Any]]:
        yield from super().parse(response, **kwargs)
        # Once: the copy made by replace() has this callback and may fetch this page again.
        if response.url != self.copy["after"] or "copied_from" in self.probe:
            return
        request = self._copied(response)
        self.probe["copied_from"] = {
            "url": response.url,
            "meta_keys": sorted(response.meta),
            "copy_url": request.url,
            "copy_meta_keys": sorted(request.meta),
        }
        yield request

    def _copied(self, response: Response) -> Request:
        idiom: str = self.copy["idiom"]
        target: str = self.copy.get("target") or ""
        if idiom == "follow":
            return response.follow(target, callback=self.parse, errback=self.on_error)
        if idiom == "follow_meta":
            return response.follow(
                target, callback=self.parse, errback=self.on_error, meta=response.meta
            )
        if idiom == "request_meta":
            return Request(
                response.urljoin(target),
                callback=self.parse,
                errback=self.on_error,
                meta=dict(response.meta),
            )
        page = response.request
        assert page is not None
        if idiom == "replace_url":
            return page.replace(url=response.urljoin(target))
        if idiom == "replace_user_agent":
            return page.replace(headers={"User-Agent": self.copy["user_agent"]}, dont_filter=True)
        raise ValueError(f"unknown copy idiom {idiom!r}")


_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
_REP_DIR = os.path.dirname(scrapy_rep.__file__)


def _census(delivered: Failure, stale: Callable[[str], bool]) -> dict[str, int | None]:
    """After a full collection: the RSS (Linux), the memory blocks Python's allocator holds,
    and what a finished drop could keep alive: objects the GC tracks, Requests (and those of a
    drop ``stale`` says is over), Failures of an IgnoreRequest but ``delivered`` (and those of
    a stale drop), tracebacks, finished frames (of functions, not generators, that no thread
    runs) and those of scrapy_rep's code."""
    gc.collect()
    blocks = sys.getallocatedblocks()
    rss = _rss()
    running = set()
    for top in sys._current_frames().values():
        frame: types.FrameType | None = top
        while frame is not None:
            running.add(frame)
            frame = frame.f_back
    objects = gc.get_objects()
    requests = [o for o in objects if isinstance(o, Request)]
    ignored = [
        o
        for o in objects
        if isinstance(o, Failure) and isinstance(o.value, IgnoreRequest) and o is not delivered
    ]
    finished = [
        o
        for o in objects
        if isinstance(o, types.FrameType)
        and o not in running
        and not o.f_code.co_flags & _GENERATOR_FLAGS
    ]
    return {
        "rss": rss,
        "blocks": blocks,
        "objects": len(objects),
        "requests": len(requests),
        "stale_requests": sum(stale(r.url) for r in requests),
        "ignore_failures": len(ignored),
        # One without a request is Scrapy's own, made where the gate's IgnoreRequest is caught
        # (seen on Scrapy 2.14).
        "stale_failures": sum(
            stale(request.url) for f in ignored if (request := getattr(f, "request", None))
        ),
        "tracebacks": sum(isinstance(o, types.TracebackType) for o in objects),
        "finished_frames": len(finished),
        "finished_rep_frames": sum(f.f_code.co_filename.startswith(_REP_DIR) for f in finished),
    }


def _rss() -> int | None:
    """The current resident set, in bytes (Linux); None elsewhere."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return None


SPIDERS: dict[str, type[HarnessSpider]] = {
    "harness": HarnessSpider,
    "errback_yields": ErrbackYieldsSpider,
    "drop_chain": DropChainSpider,
    "sitemap": SitemapHarnessSpider,
    "copied_meta": CopiedMetaSpider,
}


def _max_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _jsonable(value: Any) -> Any:
    if isinstance(value, (datetime.datetime, datetime.date, datetime.timedelta)):
        return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)


def _settings(config: dict[str, Any]) -> dict[str, Any]:
    settings = dict(config["settings"])
    if getattr(default_settings, "REQUEST_FINGERPRINTER_IMPLEMENTATION", None) == "2.6":
        settings.setdefault("REQUEST_FINGERPRINTER_IMPLEMENTATION", "2.7")
    if config.get("hosts"):
        # Scrapy >= 2.14 deprecates DNS_RESOLVER in favour of TWISTED_DNS_RESOLVER.
        new_name = hasattr(default_settings, "TWISTED_DNS_RESOLVER")
        settings["TWISTED_DNS_RESOLVER" if new_name else "DNS_RESOLVER"] = _RESOLVER
        settings["TEST_HOSTS"] = config["hosts"]
    return settings


def main(config_path: str) -> int:
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    limit = config.get("memory_limit")
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    process = CrawlerProcess(_settings(config))
    crawler = process.create_crawler(SPIDERS[config.get("spider") or "harness"])
    process.crawl(crawler, harness=config)
    process.start()
    spider = crawler.spider
    assert isinstance(spider, HarnessSpider)
    result = {
        "stats": _jsonable(crawler.stats.get_stats()),
        "responses": spider.responses,
        "response_times": spider.response_times,
        "statuses": spider.statuses,
        "errbacks": spider.errbacks,
        "reached_downloader": spider.reached_downloader,
        "start_scheduled_active": spider.start_scheduled_active,
        "dropped": spider.dropped,
        "items": _jsonable(spider.items),
        "close_reason": spider.close_reason,
        "cpu_time": spider.cpu_time,
        "max_rss": _max_rss(),
        "max_rss_at_open": spider.max_rss_at_open,
        "probe": getattr(spider, "probe", {}),
    }
    Path(config["result"]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

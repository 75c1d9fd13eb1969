"""The next usage source is one module: a toy one (tests/_toy_source.py, nothing of it under
scrapy_rep/), registered with REP_USAGE_SOURCES, inherits everything tdmrep.json has from the
crawl's one document resolver. Real crawls, a real Redis fleet, the real ``scrapy robots``."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from _crawl import Start, run_crawl
from _redis_server import RedisServer
from _servers import Reply, ScriptedServer
from _toy_source import PATH, TOY
from scrapy.settings import Settings
from test_crawl_parts import ORIGIN, FlakyStore, Stats
from test_explain import scrapy_robots
from twisted.internet import task
from twisted.internet.defer import Deferred, succeed

from scrapy_rep.core.policy import Fetch
from scrapy_rep.crawl._events import Events
from scrapy_rep.crawl._settings import MiddlewareSettings
from scrapy_rep.crawl.robotstxt_middleware import build_components

ADDON = {"ADDONS": {"scrapy_rep.Addon": 0}, "ROBOTSTXT_OBEY": True}
SOURCES = {"REP_USAGE_SOURCES": {"_toy_source.TOY": 200}}
SEARCH = {**ADDON, **SOURCES, "REP_USAGE_PURPOSES": ["search"]}
TOY_BODY = json.dumps({"refuse-search": ["/page/hidden/"]})


def _site(site: ScriptedServer, *toy: Reply) -> None:
    site.robots("User-agent: *\nDisallow: /never/\n")
    site.route(PATH, *(toy or (Reply.text(TOY_BODY, delay=1.0),)))


def test_a_registered_source_is_waited_for_and_obeyed_at_the_gate(
    http_server: ScriptedServer,
) -> None:
    site = http_server
    _site(site)
    result = run_crawl([site.url("/page/1"), site.url("/page/hidden/2")], SEARCH)
    assert result.responses == [site.url("/page/1")]
    assert site.count("/page/hidden/2") == 0
    assert result.stat("robotstxt/usage_forbidden/search") == 1
    assert result.stat("toy/request_count") == 1
    # The gate waited for it: the page was asked for only once toy.json had answered.
    (toy,) = site.seen(PATH)
    (page,) = site.seen("/page/1")
    assert toy.finished is not None and page.time >= toy.finished
    # The first request waited for both at the final gate; the other was held once, for
    # robots.txt then toy.json (not released to the gate in between and held again).
    assert result.stat("robotstxt/held") == 1
    assert result.stat("robotstxt/released") == 1
    assert f"toy.json of {site.origin}: 1 path(s)" in result.log


def test_without_a_purpose_it_needs_it_is_never_fetched(http_server: ScriptedServer) -> None:
    site = http_server
    _site(site)
    result = run_crawl([site.url("/page/hidden/2")], {**ADDON, **SOURCES})
    assert result.responses == [site.url("/page/hidden/2")]
    assert site.count(PATH) == 0


def test_it_is_retried_with_backoff_after_a_503(http_server: ScriptedServer) -> None:
    site = http_server
    _site(site, Reply(503), Reply.text(TOY_BODY))
    starts = [site.url("/page/hidden/a")]
    extra = [
        Start(site.url("/page/hidden/b"), at=2.0),  # the 503's backoff (1 s) is over
        Start(site.url("/page/hidden/c"), at=4.0),
    ]
    result = run_crawl(starts, {**SEARCH, "REP_RETRY_FAST_DELAY": 1}, extra=extra)
    first, second = site.seen(PATH)
    assert second.time - first.time >= 1.0
    assert result.stat("toy/response_status_count/503") == 1
    # A document that cannot be fetched states nothing (unlike robots.txt, it holds nothing);
    # b came while the refresh ran, with the old answer; c after it, with the new one.
    assert site.count("/page/hidden/a") == 1 and site.count("/page/hidden/b") == 1
    assert site.count("/page/hidden/c") == 0
    assert result.stat("robotstxt/usage_forbidden/search") == 1


def test_a_fleet_fetches_it_and_tdmrep_json_once_per_origin(
    server_factory: Callable[..., ScriptedServer], redis_server: RedisServer
) -> None:
    sites = [server_factory() for _ in range(3)]
    for site in sites:
        _site(site)
        reserved = json.dumps([{"location": "/page/reserved/*", "tdm-reservation": 1}])
        site.route("/.well-known/tdmrep.json", Reply.text(reserved, delay=1.0))
    urls = [s.url(p) for s in sites for p in ("/page/1", "/page/hidden/2", "/page/reserved/3")]
    settings: dict[str, Any] = {
        **SEARCH,
        "REP_USAGE_PURPOSES": ["search", "train-ai"],
        "REP_STORE": redis_server.url,
        # A store call that times out makes a process fetch by itself (by design): not this
        # test's subject.
        "REP_STORE_TIMEOUT": 10,
        "REP_LEASE_POLL_INTERVAL": 0.1,
    }
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: run_crawl(urls, settings, timeout=120), range(2)))
    for site in sites:
        assert site.count(PATH) == 1, site.origin
        assert site.count("/.well-known/tdmrep.json") == 1, site.origin
        assert site.count("/robots.txt") == 1
        assert site.count("/page/1") == 2  # both processes crawl it
        assert site.count("/page/hidden/2") == 0 and site.count("/page/reserved/3") == 0
    assert sum(r.stat("toy/request_count") for r in results) == 3
    assert sum(r.stat("toy/store_hit") for r in results) == 3
    assert sum(r.stat("tdmrep/request_count") for r in results) == 3


class _ToyFetcher:
    """Answers toy.json: the site is fine, the store is not."""

    def __init__(self) -> None:
        self.urls: list[str] = []

    def fetch(self, url: str, via: object = None) -> Deferred[tuple[Fetch, bytes | None]]:
        self.urls.append(url)
        return succeed((Fetch("ok", status=200), TOY_BODY.encode()))


def test_a_store_outage_while_reading_it_is_warned_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = task.Clock()
    store, stats, fetcher = FlakyStore(clock=clock.seconds), Stats(), _ToyFetcher()
    built = build_components(
        clock=clock,
        store=store,
        fetcher_for=lambda kind: fetcher,
        events=Events(stats, lambda: None),
        config=replace(MiddlewareSettings.from_settings(Settings()), usage_documents=(TOY,)),
        owner="me",
        crawl=lambda request: None,
        closing=lambda: False,
    )
    (toy,) = built.documents
    store.down = True
    with caplog.at_level(logging.WARNING):
        known: list[Any] = []
        toy.resolver.wait(ORIGIN, None).addCallback(known.append)
        clock.advance(0)
    # The store could not answer: fetched by this process, warned once, counted.
    assert fetcher.urls == [ORIGIN + PATH]
    assert TOY.statement(known[0].document, ORIGIN + "/page/hidden/x") is not None
    assert stats["robotstxt/store_error"] >= 1
    warnings = [r.getMessage() for r in caplog.records if "store unavailable" in r.getMessage()]
    assert len(warnings) == 1


def test_scrapy_robots_names_it_and_its_rule(tmp_path: Path, http_server: ScriptedServer) -> None:
    site = http_server
    _site(site)
    result = scrapy_robots(
        "-s",
        f"REP_USAGE_SOURCES={json.dumps(SOURCES['REP_USAGE_SOURCES'])}",
        "--purpose",
        "search",
        site.url("/page/hidden/2"),
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr  # its content would not be used
    assert "toy.json: 1 path(s) (HTTP 200)" in result.stdout
    assert "search: disallowed (toy.json rule 1: refuse-search /page/hidden/)" in result.stdout

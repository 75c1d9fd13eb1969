"""One idea of what a site says about a URL's use (SPEC G1): every source's statement combined by
one function, and every entry point — the crawl's gate, its page level, ``scrapy robots`` and
``explain`` — giving the same answer for the same sources."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from types import SimpleNamespace
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scrapy import Spider
from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_crawler
from twisted.internet import task

from scrapy_rep import explain
from scrapy_rep.commands import _online
from scrapy_rep.commands._online import build_entry
from scrapy_rep.core import explain as _explain
from scrapy_rep.core.explain import usage_entry
from scrapy_rep.core.policy import Entry, Good, Limits
from scrapy_rep.core.purpose import Purpose
from scrapy_rep.core.robots_file import RobotsTxt
from scrapy_rep.core.sources import Statement, known_statements, usage_of
from scrapy_rep.core.tdmrep import TDMREP, TdmFile
from scrapy_rep.core.tokens import CrawlerTokens
from scrapy_rep.core.usage import UsagePrefs, UsageSource
from scrapy_rep.crawl import _verdict
from scrapy_rep.crawl._cache import ROBOTS, OriginCache, OriginState, usage_kind
from scrapy_rep.crawl._drops import Drops
from scrapy_rep.crawl._events import Events
from scrapy_rep.crawl._settings import MiddlewareSettings
from scrapy_rep.crawl._verdict import Verdicts
from scrapy_rep.crawl.page_middleware import PageRobotsMiddleware, response_statements

ORIGIN = "http://site.test"
URL = ORIGIN + "/page/reserved/1"
NOW = 1_000_000.0
TRAIN = Purpose(("train-ai",))


def test_a_later_tdmrep_source_supersedes_label_by_label_then_the_rest_combine_restrictively() -> (
    None
):
    def prefs(value: bool | None, label: str = "train-ai", where: str = "x") -> UsagePrefs:
        return UsagePrefs({label: value}, {label: (UsageSource(where, str(value)),)})

    file, header, meta = prefs(False, where="file"), prefs(None), prefs(True, where="meta")
    tdm = [
        Statement(file, "tdmrep", 0),
        Statement(header, "tdmrep", 1),
        Statement(meta, "tdmrep", 2),
    ]
    combined = usage_of(tdm)
    assert combined["train-ai"] is True  # the meta tag supersedes the file
    assert [s.field for s in combined.sources["train-ai"]] == ["meta"]
    # Another source's disallow is combined most restrictively with the family's winner.
    signal = Statement(prefs(False, where="signal"))
    assert usage_of([*tdm, signal])["train-ai"] is False
    assert usage_of([*tdm, Statement(prefs(False, "search"))])["search"] is False


# -- the divergence case: tdmrep.json reserves the URL, the page's meta tag says 0 -------------

ROBOTS_BODY = b"User-agent: *\nAllow: /\n"
TDM_BODY = json.dumps([{"location": "/page/reserved/*", "tdm-reservation": 1}]).encode()
PAGE = b'<html><head><meta name="tdm-reservation" content="0"></head><body>x</body></html>'


def _entry(outcome: str = "ok", status: int = 200) -> Entry:
    good = Good(outcome, NOW, NOW + 86400, status)  # type: ignore[arg-type]
    return Entry(fetched_at=NOW, outcome=outcome, status=status, good=good)  # type: ignore[arg-type]


def _states(robots_body: bytes, tdm_body: bytes | None) -> tuple[OriginState[Any], Any]:
    robots = OriginCache(ROBOTS, Limits(), 10).install(
        ORIGIN, _entry(), RobotsTxt.parse(robots_body), NOW
    )
    kind = usage_kind(TDMREP)
    if tdm_body is None:
        tdm = OriginCache(kind, Limits(), 10).install(ORIGIN, _entry("no_robots", 404), None, NOW)
    else:
        tdm = OriginCache(kind, Limits(), 10).install(
            ORIGIN, _entry(), TdmFile.parse(tdm_body), NOW
        )
    return robots, tdm


class _Crawl:
    """The crawl's real parts for one origin whose documents are known: the gate's
    ``Verdicts``, and a ``PageRobotsMiddleware`` reading what the gate knew from the request's
    admission token (the states the request was let go with)."""

    def __init__(self, robots: OriginState[Any], tdm: Any, purpose: Purpose = TRAIN) -> None:
        crawler = get_crawler(Spider, {"ROBOTSTXT_OBEY": True, "USER_AGENT": "TestBot/1.0"})
        events = Events(crawler.stats, lambda: None)
        tokens = CrawlerTokens.from_settings(crawler.settings)
        config = replace(MiddlewareSettings.from_settings(crawler.settings), purpose=purpose)
        self.verdicts = Verdicts(crawler, tokens, events, Drops(events, task.Clock()), config)
        self.robots, self.known = robots, [(TDMREP, tdm)]
        self.page = PageRobotsMiddleware.from_crawler(crawler)
        # The robots.txt middleware's answer for a request it let go: what it was judged by.
        judged = (self.robots, tuple(self.known))
        self.page._robots = cast("Any", SimpleNamespace(judged=lambda request: judged))

    def admitted(self, url: str) -> Request:
        """A request let go with this origin's documents, as the final gate lets one go."""
        return Request(url)

    def gate(self, url: str) -> UsagePrefs:
        return usage_of(self.verdicts.statements(self.robots, Request(url), self.known))

    def page_level(self, url: str, body: bytes, headers: dict[str, Any]) -> UsagePrefs:
        request = self.admitted(url)
        response = HtmlResponse(url, body=body, headers=headers, request=request)
        prefs = self.page.usage(response)
        assert prefs is not None
        return prefs


def _page_entry(
    url: str, body: bytes, headers: dict[str, Any], tokens: list[str]
) -> dict[str, Any]:
    from datetime import datetime, timezone

    from scrapy_rep.crawl.page_middleware import response_rules

    response = HtmlResponse(url, body=body, headers=headers, request=Request(url))
    rules = response_rules(response, tokens, datetime.now(timezone.utc))
    return {"url": url, "status": 200, "statements": response_statements(response, rules, tokens)}


def test_the_divergence_case_gives_each_entry_points_answer() -> None:
    robots, tdm = _states(ROBOTS_BODY, TDM_BODY)
    crawl = _Crawl(robots, tdm)
    tokens = ["TestBot"]
    # The gate sees only what is known before fetching: the file reserves the URL.
    assert crawl.gate(URL)["train-ai"] is False
    # The page level, given the page: its meta tag supersedes the file (TDMRep).
    assert crawl.page_level(URL, PAGE, {})["train-ai"] is True
    # scrapy robots --page shows both, each equal to its crawl counterpart.
    entry = build_entry(
        robots.report(), URL, tokens, TRAIN, [(TDMREP, tdm)], _page_entry(URL, PAGE, {}, tokens)
    )
    assert entry["usage"]["train-ai"]["value"] is False
    assert entry["purpose"]["used"] is False
    assert entry["page"]["usage"]["train-ai"]["value"] is True
    assert entry["page"]["purpose"]["used"] is True
    assert entry["documents"] == [
        {
            "name": "tdmrep.json",
            "outcome": "ok",
            "status": 200,
            "error": None,
            "summary": "1 rule(s)",
        }
    ]
    # explain, given the same statements.
    file = TDMREP.statement(tdm.document, URL)
    assert file is not None
    assert explain(ROBOTS_BODY, URL, tokens, TRAIN, [file])["usage"]["train-ai"]["value"] is False
    page = _page_entry(URL, PAGE, {}, tokens)["statements"]
    assert explain(ROBOTS_BODY, URL, tokens, TRAIN, [file, *page])["purpose"]["used"] is True


# -- every entry point, every source -----------------------------------------------------------

_CU_VALUES = ["train-ai=n", "train-ai=y", "search=n", "ai-use=y, train-ai=n", "search=y"]
_SIGNALS = ["ai-train=no", "ai-train=yes", "search=no", "ai-input=no, search=yes"]


@st.composite
def sources(draw: st.DrawFn) -> dict[str, Any]:
    lines = []
    if draw(st.booleans()):  # a file-wide line, before any group (SPEC E1)
        lines.append(f"Content-Signal: {draw(st.sampled_from(_SIGNALS))}")
    lines.append("User-agent: *")
    lines.append(f"Disallow: {draw(st.sampled_from(['/nowhere', '/page/off']))}")
    for _ in range(draw(st.integers(0, 2))):
        path = draw(st.sampled_from(["", "/page/ ", "/page/reserved/ "]))
        lines.append(f"Content-Usage: {path}{draw(st.sampled_from(_CU_VALUES))}")
    if draw(st.booleans()):
        lines.append(f"Content-Signal: {draw(st.sampled_from(_SIGNALS))}")
    reservation = draw(st.sampled_from([None, 0, 1]))
    tdm = None
    if reservation is not None:
        tdm = json.dumps([{"location": "/page/*", "tdm-reservation": reservation}]).encode()
    headers: dict[str, Any] = {}
    if draw(st.booleans()):
        headers["Content-Usage"] = draw(st.sampled_from(_CU_VALUES))
    if draw(st.booleans()):
        headers["Content-Signal"] = draw(st.sampled_from(_SIGNALS))
    if draw(st.booleans()):
        headers["tdm-reservation"] = draw(st.sampled_from(["0", "1"]))
    head = ""
    if draw(st.booleans()):
        head += f'<meta name="tdm-reservation" content="{draw(st.sampled_from(["0", "1"]))}">'
    if draw(st.booleans()):
        head += '<meta name="robots" content="noai">'
    url = ORIGIN + draw(st.sampled_from(["/page/reserved/1", "/page/2", "/page/off/3", "/x"]))
    labels = tuple(draw(st.sets(st.sampled_from(["train-ai", "ai-use", "search"]), min_size=1)))
    return {
        "robots": "\n".join(lines).encode(),
        "tdm": tdm,
        "headers": headers,
        "page": f"<html><head>{head}</head><body>x</body></html>".encode(),
        "url": url,
        "purpose": Purpose(labels, draw(st.booleans())),
    }


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sources())
def test_every_entry_point_agrees_given_the_same_sources(case: dict[str, Any]) -> None:
    robots, tdm = _states(case["robots"], case["tdm"])
    url, purpose, tokens = case["url"], case["purpose"], ["TestBot"]
    crawl = _Crawl(robots, tdm, purpose)
    page = _page_entry(url, case["page"], case["headers"], tokens)
    entry = build_entry(robots.report(), url, tokens, purpose, [(TDMREP, tdm)], page)
    file = TDMREP.statement(tdm.document, url) if tdm.document is not None else None
    explained = explain(case["robots"], url, tokens, purpose, [file] if file else [])
    gate = crawl.gate(url)
    # The gate: the crawl's Verdicts, scrapy robots and explain.
    assert entry["usage"] == explained["usage"] == usage_entry(gate)
    assert entry.get("purpose") == explained.get("purpose")
    assert entry["purpose"]["used"] == (
        robots.document.allowed(url, tokens) and purpose.refusal(gate) is None
    )
    # The page level: the crawl's page middleware on the built response and scrapy robots.
    if robots.document.allowed(url, tokens):
        page_level = crawl.page_level(url, case["page"], case["headers"])
        assert entry["page"]["usage"] == usage_entry(page_level)
        assert entry["page"]["purpose"]["used"] == (purpose.refusal(page_level) is None)
        with_page = explain(
            case["robots"], url, tokens, purpose, [*([file] if file else []), *page["statements"]]
        )
        assert with_page["usage"] == entry["page"]["usage"]


def _shape(statements: Sequence[Statement]) -> list[tuple[Any, ...]]:
    """Statements as comparable values (a UsagePrefs compares its values only)."""
    return [
        (s.family, s.rank, dict(s.prefs), dict(s.prefs.sources), dict(s.prefs.signals))
        for s in statements
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sources())
def test_the_gate_scrapy_robots_and_explain_assemble_the_same_statements(
    case: dict[str, Any],
) -> None:
    # One assembling function (sources.known_statements): the crawl's gate (Verdicts, which
    # the page level asks too), scrapy robots (build_entry) and explain all call it, and give
    # the same statements for the same URL and documents — none for a URL robots.txt
    # disallows (SPEC E2), decided there once.
    robots, tdm = _states(case["robots"], case["tdm"])
    url, purpose, tokens = case["url"], case["purpose"], ["TestBot"]
    made: list[list[Statement]] = []

    def recorded(*args: Any, **kwargs: Any) -> list[Statement]:
        found = known_statements(*args, **kwargs)
        made.append(found)
        return found

    with pytest.MonkeyPatch.context() as patch:
        for module in (_verdict, _explain, _online):
            patch.setattr(module, "known_statements", recorded)
        gate = _Crawl(robots, tdm, purpose).verdicts.statements(
            robots, Request(url), [(TDMREP, tdm)]
        )
        build_entry(robots.report(), url, tokens, purpose, [(TDMREP, tdm)])
        file = TDMREP.statement(tdm.document, url) if tdm.document is not None else None
        explain(case["robots"], url, tokens, purpose, [file] if file else [])
    assert len(made) == 3
    assert _shape(made[0]) == _shape(gate) == _shape(made[1]) == _shape(made[2])
    if not robots.document.allowed(url, tokens):
        assert gate == []


def test_a_url_robots_txt_does_not_let_be_fetched_has_no_statements() -> None:
    # SPEC E2, decided in known_statements only: whatever the documents and pages state.
    refused = RobotsTxt.parse(b"User-agent: *\nDisallow: /\nContent-Usage: train-ai=y\n")
    documents = [(TDMREP, TdmFile.parse(TDM_BODY))]
    page = [Statement(UsagePrefs({"train-ai": True}))]
    assert known_statements(refused, URL, ["TestBot"], documents, given=page) == []
    assert known_statements(None, URL, ["TestBot"], documents, given=page, fetchable=False) == []
    assert len(known_statements(None, URL, ["TestBot"], documents, given=page)) == 2
    assert usage_of([])["train-ai"] is None


@pytest.mark.parametrize("reservation", [0, 1])
def test_a_tdmrep_file_that_cannot_be_fetched_states_nothing(reservation: int) -> None:
    robots, tdm = _states(ROBOTS_BODY, None)
    crawl = _Crawl(robots, tdm)
    assert crawl.gate(URL)["train-ai"] is None
    headers = {"tdm-reservation": str(reservation)}
    assert crawl.page_level(URL, b"<html></html>", headers)["train-ai"] is (reservation == 0)


def test_a_store_outage_while_reading_tdmrep_json_is_warned_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from scrapy.settings import Settings
    from test_crawl_parts import FlakyStore, Stats
    from twisted.internet.defer import succeed

    from scrapy_rep.core.policy import Fetch
    from scrapy_rep.crawl.robotstxt_middleware import build_components

    clock, stats, urls = task.Clock(), Stats(), []
    store = FlakyStore(clock=clock.seconds)

    class Fetcher:
        def fetch(self, url: str, via: object = None) -> Any:
            urls.append(url)
            return succeed((Fetch("ok", status=200), TDM_BODY))

    parts = build_components(
        clock=clock,
        store=store,
        fetcher_for=lambda kind: Fetcher(),
        events=Events(stats, lambda: None),
        config=MiddlewareSettings.from_settings(Settings()),
        owner="me",
        crawl=lambda request: None,
        closing=lambda: False,
    )
    (tdm,) = parts.documents
    assert tdm.document is TDMREP  # the default REP_USAGE_SOURCES
    store.down = True
    known: list[Any] = []
    with caplog.at_level("WARNING"):
        tdm.resolver.wait(ORIGIN, None).addCallback(known.append)
        clock.advance(0)
    assert urls == [ORIGIN + "/.well-known/tdmrep.json"]  # fetched by this process
    assert TDMREP.statement(known[0].document, URL) is not None
    assert stats["robotstxt/store_error"] >= 1
    assert [r for r in caplog.records if "store unavailable" in r.getMessage()]


def test_a_url_the_gate_let_go_is_matched_once_gate_and_page_level_together(
    matched: list[str],
) -> None:
    # The gate matches a URL against robots.txt (refusal), and with a declared purpose reads
    # its usage lines; the page level reads them again for the page the gate let go. Neither
    # matches the URL again: the token the page was let go with binds that URL and its
    # User-Agent to that robots.txt.
    body = b"User-agent: *\nDisallow: /private/\nContent-Usage: /page/ train-ai=n\n"
    robots, tdm = _states(body, TDM_BODY)
    crawl = _Crawl(robots, tdm)
    request = crawl.admitted(URL)
    verdicts = crawl.verdicts
    why = verdicts.refusal(robots, request) or verdicts.usage_refusal(robots, request, crawl.known)
    assert why is not None and why.label == "train-ai"  # the usage line was read
    assert matched == [URL]
    response = HtmlResponse(URL, body=PAGE, request=request)
    prefs = crawl.page.usage(response)
    assert prefs is not None and prefs["train-ai"] is False  # the usage line, read again
    assert matched == [URL]
    # A URL robots.txt disallows still has no statements where nothing matched it before.
    assert verdicts.statements(robots, Request(ORIGIN + "/private/x"), crawl.known) == []

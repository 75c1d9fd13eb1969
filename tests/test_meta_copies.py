"""A verdict belongs to the request it was given for: scrapy-rep's meta, copied, changes nothing.

Spiders copy ``response.meta`` onto new requests. For random pairs of requests (allowed and
disallowed URLs, User-Agents, a downloader middleware that sets another User-Agent, a declared
purpose, paused and unpaused routes, an origin's first request), every mark scrapy-rep keeps in
the first one's meta is copied onto the second, and the second's fate must be what it is
without them, at every place that reads meta: the gate, the final gate, the guard's last look,
the probe's accounting, the restore of held requests and the page level. On ``task.Clock``,
with the real middleware, guard and page middleware (no engine: nothing is downloaded).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scrapy import Spider
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_crawler
from test_admission_adapters import _run, _waits
from test_middleware_basic import MIDDLEWARE
from twisted.internet import task
from twisted.internet.defer import Deferred

from scrapy_rep import PageRobotsMiddleware, RobotsTxtGuard, RobotsTxtMiddleware
from scrapy_rep.core.policy import Fetch, Limits, record
from scrapy_rep.crawl._admission import ADMITTED, SEEN_META
from scrapy_rep.crawl._pauses import PROBE_META, route
from scrapy_rep.crawl._settings import MiddlewareSettings
from scrapy_rep.crawl.exceptions import RequestDropped
from scrapy_rep.crawl.guard_middleware import ROBOTS_META, fetch_over, is_fetch, mark_fetch
from scrapy_rep.crawl.page_middleware import META_KEY, USAGE_KEY
from scrapy_rep.storage.held import MemoryHeld
from scrapy_rep.storage.results import MemoryStore

KNOWN, OTHER, UNKNOWN = "http://a.test", "http://b.test", "http://new.test"
ROBOTS = b"""User-agent: *
Disallow: /private/

User-agent: blockedbot
Disallow: /
"""
#: tdmrep.json: text and data mining reserved under /reserved/ (a train-ai crawl may not).
TDMREP = (
    b'[{"location": "/reserved/", "tdm-reservation": 1}, {"location": "/", "tdm-reservation": 0}]'
)
PAGE = b'<html><head><meta name="robots" content="noindex, nofollow"></head></html>'
#: Every key scrapy-rep writes into a request's or a response's meta.
MARKS = (ADMITTED, SEEN_META, PROBE_META, ROBOTS_META, META_KEY, USAGE_KEY)
START = 1_000_000.0


class _Pending:
    """robots.txt of an origin not known yet: its fetch stays pending (no engine here), until
    ``finish`` answers it (a resolution left pending would be closed by the garbage collector
    in the middle of its fetch)."""

    def __init__(self) -> None:
        self.pending: list[Deferred[Any]] = []

    def fetch(self, url: str, via: Request | None = None) -> Deferred[Any]:
        found: Deferred[Any] = Deferred()
        self.pending.append(found)
        return found

    def finish(self) -> None:
        pending, self.pending = self.pending, []
        for found in pending:
            found.callback((Fetch("no_robots", 404), None))


class Crawl:
    """The middleware, its guard and the page level, with a.test and b.test known."""

    def __init__(self, purpose: bool, paused: str) -> None:
        self.clock = task.Clock()
        self.clock.advance(START)
        crawler = get_crawler(
            Spider,
            {
                **MIDDLEWARE,
                "REP_SLOT_CONCURRENCY": False,  # no engine to ask for its slots
                "REP_USAGE_PURPOSES": ["train-ai"] if purpose else [],
            },
        )
        config = MiddlewareSettings.from_settings(crawler.settings)
        self.stats = crawler.stats
        self.middleware = mw = RobotsTxtMiddleware(
            crawler, config, MemoryStore(clock=self.clock.seconds), self.clock
        )
        self.fetches = _Pending()
        for document in mw._components.resolvers:
            document._fetcher = self.fetches
        self.crawled: list[Request] = []
        mw._room._crawl = self.crawled.append
        mw._room.open(MemoryHeld())  # the spider opens; held requests in memory
        mw._components.pauses._evict = lambda key: None  # no engine, no download slots to take from
        mw._room.off_active = _waits  # type: ignore[method-assign,assignment]
        # Built after the middleware, the guard has its last look (``serve``).
        self.guard = RobotsTxtGuard(crawler)
        assert self.guard.leaving == mw._room.last_look
        self.page = PageRobotsMiddleware.from_crawler(crawler)
        self.page._robots = mw
        now = self.clock.seconds()
        entry = record(None, Fetch("ok", 200), now, Limits())
        for origin in (KNOWN, OTHER):
            mw._components.resolver._cache.read(origin, entry, ROBOTS, None, now)
            for used in mw._components.documents:
                used.resolver._cache.read(origin, entry, TDMREP, None, now)
        if paused != "no":
            answer = Request(KNOWN + "/answered")
            assert mw._components.pauses.answered(route(KNOWN, answer), answer, 503, None)
            if paused == "probe due":
                self.clock.advance(10)  # past the pause (REP_PAUSE_DELAY = 2 s)

    def fate(self, request: Request, rotate: bool, gate: bool = True) -> str:
        """What becomes of ``request``: the gate (unless ``gate`` is False: an
        ``engine.download`` caller's), the final gate, a downloader middleware that sets
        ``blockedbot/1.0`` (``rotate``), the guard's last look, the download's answer (the
        probe's accounting) and the page level."""
        mw = self.middleware
        # A request sent back goes where Scrapy takes it: a scheduled one to the scheduler
        # (the gate), an engine.download caller's to the downloader again (download_async).
        for _ in range(3):
            try:
                if gate:
                    mw._on_scheduled(request)
                final = mw._final_gate(request)
                if inspect.iscoroutine(final):
                    final = _run(final)
                if inspect.iscoroutine(final):
                    return "waits at the final gate"
                if isinstance(final, Request):
                    continue
                if rotate:
                    request.headers[b"User-Agent"] = b"blockedbot/1.0"
                look = self.guard._last_look(request)
            except RequestDropped as dropped:
                return f"dropped: {dropped.reason}"
            except IgnoreRequest as held:
                return f"held at the gate: {held}"
            if look is None:
                break
        else:
            return "sent back again and again"
        agent = request.headers.get(b"User-Agent", b"").decode()
        # Downloaded: its route's answer (503) pauses it, or probes it again.
        answer = route(KNOWN, request) if request.url.startswith(KNOWN) else None
        paused = (
            ""
            if answer is None
            else str(mw._components.pauses.answered(answer, request, 503, None))
        )
        response = HtmlResponse(request.url, body=PAGE, request=request)
        rules = self.page.rules(response)
        usage = self.page.usage(response)
        own = response.meta.get(META_KEY) is rules and response.meta.get(USAGE_KEY) is usage
        return f"downloaded as {agent!r}; 503 paused: {paused}; page: {rules} {usage} {own}"


@dataclass(frozen=True)
class Case:
    url: str
    agent: bytes | None
    #: A downloader middleware sets ``blockedbot/1.0`` before the guard's last look.
    rotate: bool
    dont_filter: bool
    #: Through the scheduler (the gate first), or an ``engine.download`` caller's.
    scheduled: bool

    def request(self, meta: dict[str, Any] | None = None) -> Request:
        headers = {b"User-Agent": self.agent} if self.agent else None
        return Request(self.url, headers=headers, meta=meta, dont_filter=self.dont_filter)


_PATHS = ["/ok/1", "/ok/2", "/private/1", "/reserved/1"]
cases = st.builds(
    Case,
    url=st.sampled_from([f"{o}{p}" for o in (KNOWN, OTHER, UNKNOWN) for p in _PATHS]),
    agent=st.sampled_from([None, b"blockedbot/1.0", b"OtherBot/2"]),
    rotate=st.booleans(),
    dont_filter=st.booleans(),
    scheduled=st.booleans(),
)


def _marks(crawl: Crawl, first: Case) -> dict[str, Any]:
    """Every mark scrapy-rep leaves in meta, from requests like ``first`` taken through
    ``crawl``: passed the gate (a token, or its origin's first), downloaded (a token and its
    page's rules), sent back to the gate (seen by the dupefilter), a route's probe, one of
    scrapy-rep's own fetches. The later ones' marks win."""
    mw = crawl.middleware
    downloaded = first.request()
    crawl.fate(downloaded, first.rotate)
    sent_back = first.request()
    crawl.fate(sent_back, first.rotate)
    mw._admission.send_back(sent_back)
    probe = Request(KNOWN + "/probe")
    mw._components.pauses.admit(KNOWN, probe, crawl.clock.seconds())
    fetch = mark_fetch(Request(first.url.rsplit("/", 2)[0] + "/robots.txt"))
    fetch_over(fetch)  # its download is over: what a spider could copy
    scheduled = first.request()
    try:
        mw._on_scheduled(scheduled)
    except IgnoreRequest:
        pass
    marks: dict[str, Any] = {}
    for request in (fetch, probe, sent_back, downloaded, scheduled):
        marks.update({key: value for key, value in request.meta.items() if key in MARKS})
    return marks


@settings(max_examples=250, deadline=None)
@given(
    first=cases,
    second=cases,
    purpose=st.booleans(),
    paused=st.sampled_from(["no", "paused", "probe due"]),
    keys=st.sets(st.sampled_from(MARKS), min_size=1),
)
def test_scrapy_reps_meta_copied_onto_another_request_changes_nothing(
    first: Case, second: Case, purpose: bool, paused: str, keys: set[str]
) -> None:
    # Two crawls in the same state (the first request's marks made in each alike); in one the
    # second request carries a copy of them.
    # The probe's mark must cross JOBDIR's and scrapy-redis's queues (new request objects):
    # it names its request's URL, so a copy for the same URL, taken while the probe is in
    # flight (a spider never sees it before its answer ends it), is that probe (design.md).
    assume(PROBE_META not in keys or first.url != second.url)
    plain, copied = Crawl(purpose, paused), Crawl(purpose, paused)
    _marks(plain, first)
    marks = _marks(copied, first)
    with_copy = second.request(meta={key: marks[key] for key in keys if key in marks})
    assert not is_fetch(with_copy)
    without = second.request()
    try:
        assert fate(plain, without, second) == fate(copied, with_copy, second)
    finally:
        plain.fetches.finish()
        copied.fetches.finish()


def fate(crawl: Crawl, request: Request, case: Case) -> str:
    if case.scheduled:
        return crawl.fate(request, case.rotate)
    return crawl.fate(request, case.rotate, gate=False)


def test_the_restore_of_held_requests_files_no_copy_with_the_dupefilter() -> None:
    crawl = Crawl(purpose=False, paused="no")
    sent = Request(KNOWN + "/ok/1")
    crawl.fate(sent, rotate=False)
    crawl.middleware._admission.send_back(sent)
    assert SEEN_META in sent.meta
    copy = Request(KNOWN + "/ok/2", meta=dict(sent.meta))
    place = MemoryHeld()
    for request in (sent, copy):
        place.add(KNOWN, request)
    filed: list[str] = []
    crawl.middleware._room.open(place, seen=lambda request: filed.append(request.url))
    assert filed == [KNOWN + "/ok/1"]

"""A verdict given in one process is judged again in another: real crawls in which a
request reaches the final gate carrying an admission token (meta ``_rep_admitted``) it was not
given in that process, and whose inputs no longer match.

- A JOBDIR job stopped with Ctrl-C while allowed requests wait in Scrapy's disk queue; robots.txt
  changes before the job is resumed: the queued requests for now-disallowed paths are judged
  again (``robotstxt/rejudged``) and dropped, never downloaded.
- A two-process scrapy-redis fleet (README's block, the scheduler and dupefilter and REP_STORE on
  one redis-server): a request for a disallowed URL carrying a copy of a queued request's meta,
  token included, is pushed into the shared queue and popped by the very process whose token it
  carries; it is judged again and dropped. Requests one member queued and the other popped are
  judged again there too, and each allowed page is downloaded once fleet-wide.

Everything downloaded is counted by the servers, so a download slipping past scrapy-rep cannot
hide.
"""

from __future__ import annotations

import pickle
import threading
from collections import Counter
from pathlib import Path
from typing import cast

import redis
from _crawl import Interrupt, run_crawl
from _fleet import Fleet, Member, readme_block
from _redis_server import RedisServer
from _servers import Reply, ScriptedServer, html_page
from test_middleware_basic import settings

REJUDGED = "robotstxt/rejudged"
FORBIDDEN = "robotstxt/forbidden"
FORBIDDEN_BEFORE_DOWNLOAD = "robotstxt/forbidden_before_download"


# -- A JOBDIR job resumed after robots.txt changed -------------------------------------------

#: Pages /page/0 links to, alternating: robots.txt disallows /page/b/ once the job is stopped.
PAIRS = 8
A_PATHS = [f"/page/a/{i}" for i in range(PAIRS)]
B_PATHS = [f"/page/b/{i}" for i in range(PAIRS)]


def test_jobdir_resumed_after_robots_txt_changed_judges_queued_requests_again(
    http_server: ScriptedServer, tmp_path: Path
) -> None:
    """On the code before the fix (5e1248e) the pages are dropped too: a token names this
    process's run (a random tag in its generation), so a token restored from JOBDIR never
    matched there either, and a changed robots.txt changes the token's content id besides.
    What fails there is the count: ``robotstxt/rejudged`` did not exist."""
    site = http_server
    site.robots("User-agent: *\nDisallow: /private/\n")
    site.links("/page/0", [path for pair in zip(A_PATHS, B_PATHS, strict=True) for path in pair])
    start = [site.url("/page/0")]
    # robots.txt only in memory, so the resumed job fetches it again (the default store with
    # JOBDIR, SQLite there, would serve the first run's copy for a day). One download at a
    # time: the other links wait in Scrapy's JOBDIR queue, each with the token the gate gave.
    job = settings(JOBDIR=str(tmp_path / "job"), REP_STORE="memory://", CONCURRENT_REQUESTS=1)
    first = run_crawl(start, job, follow_links=True, interrupt=Interrupt(site, "/page/", 1 + 3))
    assert first.interrupted
    assert first.close_reason == "shutdown"
    assert first.stat(FORBIDDEN) == 0
    assert first.stat("robotstxt/held_persisted") == 0  # every link in the queue, none held
    fetched_first = Counter(site.paths())
    queued_a = [p for p in A_PATHS if fetched_first[p] == 0]
    queued_b = [p for p in B_PATHS if fetched_first[p] == 0]
    # Enough left in the queue for the change to matter, of both kinds.
    assert queued_a
    assert len(queued_b) >= 2

    site.robots("User-agent: *\nDisallow: /private/\nDisallow: /page/b/\n")
    second = run_crawl(start, job, follow_links=True)

    assert second.close_reason == "finished"
    assert site.count("/robots.txt") == 2  # the resumed job read the new one
    fetched = Counter(site.paths())
    # Not one queued /page/b/ page reached the server; everything else exactly once.
    assert [p for p in queued_b if fetched[p]] == []
    assert {p: fetched[p] for p in A_PATHS} == dict.fromkeys(A_PATHS, 1)
    assert {p: fetched[p] for p in B_PATHS if p not in queued_b} == {
        p: 1 for p in B_PATHS if p not in queued_b
    }
    assert fetched["/page/0"] == 1  # the start request: filtered by the JOBDIR's dupefilter
    assert sorted(second.responses) == sorted(site.url(p) for p in queued_a)
    # Every request restored from the queue carried a token this process never gave: judged
    # again, each counted once; the now-disallowed ones dropped there, before download.
    assert second.stat(REJUDGED) == len(queued_a) + len(queued_b)
    assert second.stat(FORBIDDEN) == len(queued_b)
    assert second.stat(FORBIDDEN_BEFORE_DOWNLOAD) == len(queued_b)


# -- A two-process scrapy-redis fleet ---------------------------------------------------------

FLEET_ROBOTS = "User-agent: *\nDisallow: /private/\n"
#: /page/0 (the seed) links to these and to CONTROL, which the gate drops.
FLEET_PAGES = [f"/page/{i}" for i in range(1, 11)]
CONTROL = "/private/linked"
COPIED = "/private/copied"
QUEUE = "fleet:requests"  # scrapy-redis's SCHEDULER_QUEUE_KEY, "%(spider)s:requests"


def _pages_of(server: ScriptedServer, member: Member | None = None) -> list[str]:
    """Paths of FLEET_PAGES the server received (from ``member``, by its User-Agent)."""
    return [
        seen.path
        for seen in server.requests
        if seen.path in FLEET_PAGES
        and (member is None or seen.headers.get("user-agent") == member.name)
    ]


def test_fleet_judges_again_a_copied_token_and_requests_another_member_queued(
    http_server: ScriptedServer, redis_server: RedisServer, tmp_path: Path
) -> None:
    """Fails on the code before the fix (5e1248e): there a request carrying the token of its
    origin's current state skipped the refusal check, and the copy carries exactly that (it is
    popped by the member whose token it copied): /private/copied was downloaded."""
    site = http_server
    site.robots(FLEET_ROBOTS)
    site.links("/page/0", [*FLEET_PAGES, CONTROL])
    # Each page is answered when the test says: the member's downloads stay in flight, so the
    # rest wait in the shared queue, and the test chooses when a member may pop the next one.
    released = {path: threading.Event() for path in FLEET_PAGES}
    html = {"Content-Type": "text/html"}
    for path in FLEET_PAGES:
        site.route(path, Reply(200, html_page(path, []), headers=html, release=released[path]))
    fleet = Fleet(
        tmp_path,
        redis_server.url,
        readme_block(),
        {
            "REDIS_URL": redis_server.url,
            "REP_STORE": redis_server.url,
            "MAX_IDLE_TIME_BEFORE_CLOSE": 3,
            "REP_LEASE_POLL_INTERVAL": 0.1,
            "REP_STORE_TIMEOUT": 10,
            # Two downloads at a time per member: the engine pops no more while both wait.
            "CONCURRENT_REQUESTS": 2,
            "RETRY_ENABLED": False,
        },
    )
    client = redis.Redis.from_url(redis_server.url)
    try:
        fleet.seed([site.url("/page/0")])
        (first,) = fleet.start(1)
        # The seed's links are queued (each with first's token); two are in flight.
        assert site.wait_until(lambda: len(_pages_of(site)) >= 2, timeout=30), first.log
        queued = [pickle.loads(cast(bytes, data)) for data in client.zrange(QUEUE, 0, -1)]
        assert queued
        # What a producer does that builds a request from another's meta: a request for a
        # disallowed URL with a copy of a queued request's meta, admission token included,
        # pushed into the shared queue ahead of the rest (as scrapy-redis pushes: the pickled
        # request dict, score -priority).
        original = queued[0]
        token = original["meta"]["_rep_admitted"]
        assert isinstance(token, str)
        assert token != "first"
        copy = {**original, "url": site.url(COPIED), "meta": dict(original["meta"])}
        copy["priority"] = 100
        pushed = pickle.dumps(copy, protocol=-1)
        client.zadd(QUEUE, {pushed: -copy["priority"]})
        # One download ends: first pops the next request, the copy, then (the copy dropped
        # at its final gate, or downloaded) the next page.
        released[_pages_of(site)[0]].set()
        assert site.wait_until(lambda: len(_pages_of(site)) >= 3, timeout=30), first.log
        assert client.zscore(QUEUE, pushed) is None  # popped, by first: second is not started

        # The other member pops requests first queued.
        (second,) = fleet.start(1)
        assert site.wait_until(lambda: len(_pages_of(site, second)) >= 1, timeout=30), second.log
    finally:
        client.close()
        for event in released.values():
            event.set()
    results = fleet.wait(timeout=60)
    assert [r.exit_code for r in results] == [0, 0]
    by_first, by_second = results

    # Server side: nothing under /private/ (neither the linked control nor the copy), and each
    # allowed page downloaded exactly once fleet-wide, by either member.
    assert [s.path for s in site.requests if s.path.startswith("/private/")] == []
    assert Counter(site.paths()) == {
        "/robots.txt": 1,
        "/page/0": 1,
        **dict.fromkeys(FLEET_PAGES, 1),
    }
    assert _pages_of(site, second)
    assert sorted(_pages_of(site, first) + _pages_of(site, second)) == sorted(FLEET_PAGES)

    # Every request a member popped from the shared queue is a new object carrying a token it
    # was not given there: judged again, once each. first popped the seed, its pages and the
    # copy; second the pages it downloaded (queued by first).
    first_pages = len(_pages_of(site, first))
    assert by_first.stat(REJUDGED) == 1 + first_pages + 1
    assert by_second.stat(REJUDGED) == len(_pages_of(site, second))
    # The copy counted as forbidden where it was judged again (before download); the linked
    # control at the gate, before the queue.
    assert by_first.stat(FORBIDDEN_BEFORE_DOWNLOAD) == 1
    assert by_first.stat(FORBIDDEN) == 2
    assert by_second.stat(FORBIDDEN) == 0

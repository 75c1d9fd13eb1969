"""Holding requests while robots.txt is unknown: no stall, nothing lost."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path

from _crawl import Interrupt, Start, run_crawl
from _servers import Reply, ScriptedServer
from test_middleware_basic import settings


def test_slow_robots_txt_does_not_stall_other_origins(
    http_server: ScriptedServer, http_server2: ScriptedServer
) -> None:
    slow, fast = http_server, http_server2
    answer = threading.Event()
    slow.route(
        "/robots.txt", Reply.text("User-agent: *\nDisallow: /page/private\n", release=answer)
    )
    fast.robots("User-agent: *\nDisallow:\n")
    # Origin A's pages come first: with Scrapy's built-in middleware they would
    # fill every downloader slot waiting for A's robots.txt and freeze B.
    urls = [slow.url(f"/page/{i}") for i in range(20)] + [slow.url("/page/private")]
    urls += [fast.url(f"/page/{i}") for i in range(20)]
    outcome: dict[str, bool] = {}

    def release_when_b_is_done() -> None:
        outcome["b_done"] = fast.wait_for("/page/", count=20, timeout=20, prefix=True)
        answer.set()

    watcher = threading.Thread(target=release_when_b_is_done)
    watcher.start()
    try:
        result = run_crawl(urls, settings(CONCURRENT_REQUESTS=4), timeout=60)
    finally:
        answer.set()
        watcher.join()
    assert outcome["b_done"], "origin B stalled behind origin A's robots.txt"
    assert fast.count("/page/", prefix=True) == 20
    assert slow.count("/page/", prefix=True) == 20
    assert slow.count("/page/private") == 0
    assert result.stat("robotstxt/held") >= 21
    assert result.stat("robotstxt/released") == result.stat("robotstxt/held")


def test_duplicates_of_a_request_on_its_way_are_filtered_not_held(
    http_server: ScriptedServer,
) -> None:
    http_server.route("/robots.txt", Reply.text("User-agent: *\nDisallow:\n", delay=0.5))
    url = http_server.url("/page/same")
    result = run_crawl([url, url, url, Start(url, dont_filter=True)], settings())
    # The first went on to the scheduler (it waits for robots.txt at the final gate), so the
    # dupefilter has seen it: its two copies are filtered at once rather than held (and
    # filtered once released), and only the dont_filter one is held. It and the first are
    # downloaded.
    assert http_server.count("/page/same") == 2
    assert result.stat("robotstxt/held") == 1
    assert result.stat("robotstxt/released") == 1
    assert result.stat("dupefilter/filtered") == 2


def test_requests_found_while_robots_txt_is_pending_are_held(http_server: ScriptedServer) -> None:
    http_server.route(
        "/robots.txt", Reply(500), Reply.text("User-agent: *\nDisallow: /page/late-no\n")
    )
    result = run_crawl(
        [http_server.url("/page/first")],
        settings(REP_RETRY_DELAY=1),
        extra=[
            Start(http_server.url("/page/late-yes"), at=0.3),
            Start(http_server.url("/page/late-no"), at=0.3),
        ],
    )
    assert http_server.count("/page/first") == 1
    assert http_server.count("/page/late-yes") == 1
    assert http_server.count("/page/late-no") == 0
    # Each held once: the first at the final gate (through its 500, not sent back through the
    # scheduler to be held), the two found later outside the scheduler.
    assert result.stat("robotstxt/held") == 3
    assert result.stat("robotstxt/released") == 3
    assert result.stat("robotstxt/rescheduled") == 0
    assert result.stat("robotstxt/forbidden_before_schedule") == 1


def test_held_requests_survive_a_stopped_job(
    http_server: ScriptedServer, http_server2: ScriptedServer, tmp_path: Path
) -> None:
    down, up = http_server, http_server2
    down.route("/robots.txt", Reply(503))
    up.robots("User-agent: *\nDisallow:\n")
    jobdir = tmp_path / "job"
    held_urls = [down.url("/page/1"), down.url("/page/2")]
    first = run_crawl(
        [*held_urls, *(up.url(f"/page/{i}") for i in range(3))],
        settings(JOBDIR=str(jobdir), REP_RETRY_FAST_DELAY=0.5),
        interrupt=Interrupt(up, "/page/", 3),
    )
    assert first.stat("robotstxt/held_persisted") == 2
    assert (jobdir / "robotstxt-held.sqlite3").exists()
    assert down.count("/page/", prefix=True) == 0
    assert "2 held request(s) stay in" in first.log

    down.route("/robots.txt", Reply.text("User-agent: *\nDisallow: /page/2\n"))
    second = run_crawl([], settings(JOBDIR=str(jobdir)))
    assert second.stat("robotstxt/held_restored") == 2
    assert down.count("/page/1") == 1
    assert down.count("/page/2") == 0
    assert second.stat("robotstxt/forbidden_before_schedule") == 1
    assert not (jobdir / "robotstxt-held.sqlite3").exists()


def test_queued_requests_of_a_resumed_job_wait_outside_the_downloader(
    http_server: ScriptedServer, tmp_path: Path
) -> None:
    # The robots.txt state lives in memory only, so on resume the requests
    # waiting in the JOBDIR queue reach the downloader with their origin unknown:
    # the final gate makes them wait (off Downloader.active) for the resolver,
    # which reads the store and fetches, instead of sending them through the queue again.
    http_server.robots("User-agent: *\nDisallow: /page/no\n")
    links = [f"/page/l{i}" for i in range(10)]
    http_server.links("/page/start", links)
    start = [http_server.url("/page/start")]
    jobdir = str(tmp_path / "job")
    job = settings(JOBDIR=jobdir, REP_STORE="memory://", CONCURRENT_REQUESTS=1, DOWNLOAD_DELAY=0.2)
    first = run_crawl(start, job, follow_links=True, interrupt=Interrupt(http_server, "/page/l", 2))
    assert first.close_reason == "shutdown"
    done_first = len(http_server.seen("/page/", prefix=True))
    assert done_first < 11
    # The new robots.txt answers late: queued requests reach the downloader first.
    # (More than one slot: the robots.txt download itself takes one.)
    http_server.route("/robots.txt", Reply.text("User-agent: *\nDisallow: /page/l0\n", delay=1.0))
    second = run_crawl(start, {**job, "CONCURRENT_REQUESTS": 4}, follow_links=True)
    assert second.stat("robotstxt/rescheduled") == 0
    # Nothing was held: the queued requests waited at the final gate, and the start request,
    # seen in the first run, was filtered by the dupefilter at once.
    assert second.stat("robotstxt/held") == 0
    assert second.stat("dupefilter/filtered") >= 1
    assert http_server.count("/robots.txt") == 2
    pages = [p for p in http_server.paths() if p.startswith("/page/")]
    assert len(pages) == len(set(pages))  # nothing downloaded twice
    late = pages[done_first:]
    assert late
    # The new robots.txt decided for the queued requests.
    assert "/page/l0" not in pages
    assert sorted(pages) == sorted(["/page/start", *links[1:]])
    assert second.stat("robotstxt/forbidden") == 1


def test_idle_crawl_gives_up_an_origin_whose_robots_txt_keeps_failing_not_one_that_recovers(
    server_factory: Callable[..., ScriptedServer],
) -> None:
    good, failing, recovering = server_factory(), server_factory(), server_factory()
    good.robots("User-agent: *\nDisallow:\n")
    failing.route("/robots.txt", Reply(500))
    # Answers within the REP_GIVE_UP_AFTER=3 attempts (at 0, 0.5, 1.5 s): never given up.
    recovering.route(
        "/robots.txt", Reply(500), Reply(500), Reply.text("User-agent: *\nDisallow: /page/no\n")
    )
    urls = [good.url(f"/page/{i}") for i in range(3)]
    urls += [failing.url(f"/page/{i}") for i in range(4)]
    urls += [recovering.url(p) for p in ("/page/1", "/page/2", "/page/no")]
    # REP_HOLD_TIMEOUT keeps its default (900 s): the crawl must end long before that, once
    # robots.txt failed REP_GIVE_UP_AFTER=3 times (at 0, 0.5, 1.5 s).
    result = run_crawl(urls, settings(REP_RETRY_DELAY=0.5), timeout=60)
    assert good.count("/page/", prefix=True) == 3
    assert failing.count("/page/", prefix=True) == 0
    # At 0, 0.5, 1.5 and 3.5 s: the idle check that gives it up comes after the 3rd or 4th.
    assert failing.count("/robots.txt") in (3, 4)
    assert recovering.count("/robots.txt") == 3
    assert recovering.count("/page/1") == 1
    assert recovering.count("/page/2") == 1
    assert recovering.count("/page/no") == 0
    assert result.stat("robotstxt/gave_up") == 1  # the failing origin only
    assert result.stat("robotstxt/held_dropped") == 4  # the failing origin's 4 pages
    assert result.stat("robotstxt/held_dropped_on_close") == 0
    dropped = f"Dropped 4 request(s) for {failing.url('')}, not downloaded: its robots.txt failed"
    assert result.log.count(dropped) == 1
    # The WARNING above, and the closing summary of dropped requests.
    assert result.log.count("times in a row") == 2
    # What makes it stop sooner, and later (a 500: REP_RETRY_DELAY is the first delay).
    assert (
        "to give up sooner, lower REP_GIVE_UP_AFTER or REP_RETRY_DELAY; to wait longer, raise "
        "them (REP_GIVE_UP_AFTER = 0: up to REP_HOLD_TIMEOUT)" in result.log
    )
    # Attempts end at 1.5 s; the give-up comes on the next tick (every second at most).
    assert result.stats["elapsed_time_seconds"] < 15


def test_an_unknown_origins_first_request_goes_the_moment_robots_txt_is_known(
    http_server: ScriptedServer,
) -> None:
    # Its first request waits at the final gate (not held, not in a downloader slot); the
    # others found meanwhile are held; a disallowed one is still never downloaded.
    http_server.route("/robots.txt", Reply.text("User-agent: *\nDisallow: /page/no\n", delay=0.5))
    http_server.links("/page/1", ["/page/2", "/page/no"])
    first = http_server.url("/page/1")
    result = run_crawl(
        [first, http_server.url("/page/3"), http_server.url("/page/no")],
        settings(),
        follow_links=True,
    )
    assert sorted(result.responses) == sorted(http_server.url(f"/page/{i}") for i in (1, 2, 3))
    assert http_server.count("/page/no") == 0
    [robots] = http_server.seen("/robots.txt")
    [page] = http_server.seen("/page/1")
    assert robots.finished is not None and page.time >= robots.finished
    # Not held: the start requests after it were (until robots.txt came), then released.
    assert result.stat("robotstxt/held") == 2
    assert result.stat("robotstxt/released") == 2
    assert result.stat("robotstxt/forbidden") == 1


def _seconds_of_day(clock: str) -> int:
    hours, minutes, seconds = (int(part) for part in clock.split(":"))
    return hours * 3600 + minutes * 60 + seconds


def _close(clock: str, other: str, slack: int = 2) -> bool:
    """Two HH:MM:SS within ``slack`` seconds (across midnight too)."""
    apart = abs(_seconds_of_day(clock) - _seconds_of_day(other)) % 86400
    return min(apart, 86400 - apart) <= slack


def test_a_dead_site_says_at_each_attempt_when_the_next_is_and_when_the_crawl_stops_waiting(
    unused_port: int,
) -> None:
    # Nothing listens: robots.txt is refused at 0, 1 and 3 s (REP_RETRY_DELAY=1, doubling),
    # and the 3rd failure in a row is the give-up (REP_GIVE_UP_AFTER=3).
    origin = f"http://127.0.0.1:{unused_port}"
    result = run_crawl([f"{origin}/page/{i}" for i in range(3)], settings(REP_RETRY_DELAY=1))
    assert result.stat("robotstxt/request_count") == 3
    assert result.stat("robotstxt/gave_up") == 1
    attempts = [
        line for line in result.log.splitlines() if f"robots.txt of {origin}: unreachable" in line
    ]
    # One INFO line per attempt, each stamped when it failed.
    assert len(attempts) == 3, attempts
    stamp = re.compile(r"^\S+ (\d\d:\d\d:\d\d) \[scrapy_rep\.crawl\.robotstxt_middleware\] INFO: ")
    stamps = []
    for line in attempts:
        found = stamp.match(line)
        assert found is not None, line
        stamps.append(found.group(1))
    told = re.compile(
        r"nothing of it is downloaded for now; (\d) failures? in a row; next attempt in \S+ "
        r"\((\d\d:\d\d:\d\d)\); if it keeps failing, the crawl stops waiting for it at about "
        r"(\d\d:\d\d:\d\d), at its 3rd failure \(REP_GIVE_UP_AFTER\)$"
    )
    for number, line in enumerate(attempts[:2], 1):
        found = told.search(line)
        assert found is not None, line
        assert int(found.group(1)) == number
        # The next attempt came when this line said, and the crawl stopped waiting when it
        # said (the last attempt's line), to the second the log stamps.
        assert _close(found.group(2), stamps[number]), (found.group(2), stamps)
        assert _close(found.group(3), stamps[2]), (found.group(3), stamps)
    assert attempts[2].endswith(
        "; 3 failures in a row: the crawl stops waiting for it now (REP_GIVE_UP_AFTER=3)"
    )
    # One WARNING for the origin, with what makes the wait shorter or longer.
    (warning,) = [line for line in result.log.splitlines() if "Waiting for the robots.txt" in line]
    assert "] WARNING: " in warning
    assert (
        "to wait less, lower REP_GIVE_UP_AFTER=3 or REP_RETRY_DELAY=1s; to wait longer, raise "
        "them, or set REP_GIVE_UP_AFTER = 0 to wait up to REP_HOLD_TIMEOUT=15m"
    ) in warning
    assert result.stats["elapsed_time_seconds"] < 15

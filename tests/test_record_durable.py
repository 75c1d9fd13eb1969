"""The compliance record across processes and runs: a two-process fleet on a real Redis, and a
JOBDIR job stopped and resumed, each write one consistent record: every request decided once
(a request kept for the next run: ``kept``, then decided by the run that ends it), each copy
stored once per process at most, a copy another process fetched named by that process's
record, and the check passing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from _crawl import Interrupt, run_crawl
from _fleet import Fleet, own_key, readme_block
from _redis_server import RedisServer
from _servers import Reply, ScriptedServer
from test_record_crawl import ADDON, Record, decisions, read_records

from scrapy_rep.storage.record import check


def _runs(records: list[Record]) -> Counter[str]:
    """How many files each run wrote."""
    return Counter(
        r.headers["WARC-Filename"].split("-")[2] for r in records if r.kind == "warcinfo"
    )


def _run_of(records: list[Record]) -> dict[str, str]:
    """Each record's run id (its file's warcinfo's)."""
    run, found = "", {}
    for record in records:
        if record.kind == "warcinfo":
            run = record.headers["WARC-Filename"].split("-")[2]
        found[record.rid] = run
    return found


def _stored_once_per_run(records: list[Record], runs: dict[str, str]) -> None:
    copies = Counter(
        (runs[r.rid], r.target, r.payload)
        for r in records
        if r.kind in ("response", "resource") and r.status in (None, 200)
    )
    assert copies and max(copies.values()) == 1, copies


def test_a_fleet_writes_one_record_each_copy_once_named_by_the_member_that_fetched_it(
    server_factory: Callable[[], ScriptedServer], redis_server: RedisServer, tmp_path: Path
) -> None:
    site, missing = server_factory(), server_factory()
    site.robots("User-agent: *\nDisallow: /private\n")
    missing.route("/robots.txt", Reply(404, b"no"))
    urls = [
        *(site.url(f"/page/{i}") for i in range(10)),
        *(site.url(f"/private/{i}") for i in range(4)),
        *(missing.url(f"/page/{i}", host="localhost") for i in range(6)),
    ]
    record = tmp_path / "record"
    overrides = {
        "REDIS_URL": redis_server.url,
        "REP_STORE": redis_server.url,
        "REP_LEASE_POLL_INTERVAL": 0.1,
        "MAX_IDLE_TIME_BEFORE_CLOSE": 3,
        "REP_RECORD": str(record),
    }
    fleet = Fleet(tmp_path / "fleet", redis_server.url, readme_block(), overrides)
    for n in range(2):
        fleet.seed(urls[n::2], key=own_key(n))
    fleet.start(2, own_queue=True)
    results = fleet.wait(timeout=120)
    assert [r.exit_code for r in results] == [0, 0]
    records = read_records(record)
    runs = _run_of(records)
    # Two file series in one directory, each sealed and in the manifest.
    assert len(_runs(records)) == 2
    assert len((record / "manifest.jsonl").read_text().splitlines()) == 2
    # Every request decided once, by the member that had it.
    found = decisions(records)
    assert sorted(found) == sorted(urls)
    assert all(len(made) == 1 for made in found.values())
    assert {url for url, (made,) in found.items() if made["decision"] == "dropped"} == {
        site.url(f"/private/{i}") for i in range(4)
    }
    # Each robots.txt fetched once by the fleet, stored once, by the member that fetched it;
    # the other member's decisions name that member's record.
    assert site.count("/robots.txt") == 1 and missing.count("/robots.txt") == 1
    _stored_once_per_run(records, runs)
    answers = {r.rid: r for r in records if r.kind == "response"}
    for url, (made,) in found.items():
        assert made["robots"]["record"] in answers, url
    deciders = {runs[_decision_id(records, url)] for url in urls}
    assert len(deciders) == 2
    named_elsewhere = [
        url
        for url, (made,) in found.items()
        if runs[made["robots"]["record"]] != runs[_decision_id(records, url)]
    ]
    assert named_elsewhere
    report = check([record])
    assert report.ok, [str(p) for p in report.failures]


def _decision_id(records: list[Record], url: str) -> str:
    (rid,) = [
        r.rid
        for r in records
        if r.kind == "metadata"
        and r.target == url
        and r.headers.get("Content-Type") == "application/json"
    ]
    return rid


def test_a_stopped_and_resumed_job_decides_each_request_once_and_names_the_first_runs_copy(
    server_factory: Callable[..., ScriptedServer], tmp_path: Path
) -> None:
    down, up = server_factory(), server_factory()
    down.route("/robots.txt", Reply(503))
    up.robots("User-agent: *\nDisallow: /page/no\n")
    held = [down.url("/page/1", host="localhost"), down.url("/page/2", host="localhost")]
    pages = [up.url(f"/page/{i}") for i in range(8)]
    record, jobdir = tmp_path / "record", tmp_path / "job"
    job = {
        **ADDON,
        "JOBDIR": str(jobdir),
        "REP_RECORD": str(record),
        "REP_RETRY_FAST_DELAY": 0.5,
        "CONCURRENT_REQUESTS": 1,
        "DOWNLOAD_DELAY": 0.2,
    }
    first = run_crawl([*held, *pages], job, interrupt=Interrupt(up, "/page/", 3))
    assert first.close_reason == "shutdown"
    assert first.stat("robotstxt/held_persisted") == 2
    down.route("/robots.txt", Reply.text("User-agent: *\nDisallow: /page/2\n"))
    second = run_crawl([*held, *pages], job)
    assert second.close_reason == "finished"
    records = read_records(record)
    runs = _run_of(records)
    assert len(_runs(records)) == 2
    found = decisions(records)
    assert sorted(found) == sorted([*held, *pages])
    # The held ones: kept by the first run (held when it stopped), decided by the second.
    for url in held:
        assert [made["decision"] for made in found[url]] == [
            "kept",
            "downloaded" if url.endswith("1") else "dropped",
        ]
    # Every page decided once over both runs: by the first run, or left in Scrapy's queue and
    # decided by the second.
    for url in pages:
        assert len(found[url]) == 1, url
        assert found[url][0]["decision"] == "downloaded", url
    assert up.count("/page/", prefix=True) == len(pages)
    # up's robots.txt was fetched once, by the first run: the second run's decisions name that
    # record (the store keeps it), and no copy is stored twice by one run.
    assert up.count("/robots.txt") == 1
    _stored_once_per_run(records, runs)
    second_run = {runs[_decision_id(records, url)] for url in pages[-2:]}
    late = [url for url in pages if runs[_decision_id(records, url)] in second_run]
    assert late
    first_copy = {found[url][0]["robots"]["record"] for url in pages}
    assert len(first_copy) == 1
    report = check([record])
    assert report.ok, [str(p) for p in report.failures]

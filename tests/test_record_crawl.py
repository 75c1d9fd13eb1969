"""The compliance record (REP_RECORD, docs/record.md) written by real crawls: every response
and every drop has its decision, each naming the stored copies it rests on, and the check
re-derives them."""

from __future__ import annotations

import gzip
import hmac
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _crawl import Start, run_crawl
from _servers import Reply, ScriptedServer, html_page
from warcio.archiveiterator import ArchiveIterator

from scrapy_rep.storage.record import check

ADDON = {"ADDONS": {"scrapy_rep.Addon": 0}, "ROBOTSTXT_OBEY": True}
#: tdmrep.json: text and data mining reserved under /reserved/ (a train-ai crawl may not).
TDMREP = (
    b'[{"location": "/reserved/", "tdm-reservation": 1}, {"location": "/", "tdm-reservation": 0}]'
)
HTML = {"Content-Type": "text/html"}
#: A robots.txt answer that lives a second (with REP_CACHE_MIN_LIFETIME = 1).
ONE_SECOND = {"Cache-Control": "max-age=1"}


@dataclass(frozen=True)
class Record:
    kind: str
    rid: str
    target: str
    headers: dict[str, str]
    payload: bytes
    #: The HTTP status of a response or revisit record.
    status: int | None

    @property
    def decision(self) -> dict[str, Any]:
        return dict(json.loads(self.payload))


def read_records(directory: Path) -> list[Record]:
    """Every record of every file in ``directory``, in file order."""
    found = []
    for path in sorted(directory.glob("rep-*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                headers = dict(record.rec_headers.headers)
                found.append(
                    Record(
                        record.rec_type,
                        headers["WARC-Record-ID"],
                        headers.get("WARC-Target-URI", ""),
                        headers,
                        record.content_stream().read(),
                        int(record.http_headers.get_statuscode())
                        if record.rec_type in ("response", "revisit")
                        else None,
                    )
                )
    return found


def decisions(records: list[Record]) -> dict[str, list[dict[str, Any]]]:
    """Decision payloads by the URL they are for, each URL's in the order they were made (the
    files of runs begun in the same second sort by their random run ids)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        if record.kind == "metadata" and record.headers.get("Content-Type") == "application/json":
            payload = record.decision
            if "decision" in payload:
                found.setdefault(payload["url"], []).append(payload)
    for made in found.values():
        made.sort(key=lambda payload: str(payload["time"]))
    return found


def test_every_response_and_every_drop_has_a_decision_resting_on_stored_copies(
    server_factory: Callable[..., ScriptedServer], tmp_path: Path
) -> None:
    rules, missing, flaky, usage = (server_factory() for _ in range(4))
    rules.robots("User-agent: *\nDisallow: /private\n")
    rules.route("/private/not-judged", Reply(200, html_page("p", []), headers=HTML))
    rules.route(
        "/page/noindex", Reply(200, html_page("n", []), headers={**HTML, "X-Robots-Tag": "noindex"})
    )
    # A page that says "slow down" once: its site pauses, the page is fetched again after it.
    rules.route(
        "/page/busy", Reply.retry_after(503, 1), Reply(200, html_page("b", []), headers=HTML)
    )
    missing.route("/robots.txt", Reply(404, b"none here"))
    # robots.txt fails once (with a cookie, sent back by the next attempt), then answers: the
    # pages wait for it and are crawled.
    flaky.route(
        "/robots.txt",
        Reply(503, headers={"Set-Cookie": "session=s3cr3t"}),
        Reply.text("User-agent: *\nAllow: /\n"),
    )
    # robots.txt that resets the connection once: no answer, then its file.
    reset = server_factory()
    reset.route("/robots.txt", Reply(reset=True), Reply.text("User-agent: *\nAllow: /\n"))
    usage.robots("User-agent: *\nAllow: /\nContent-Usage: /page/no-ai train-ai=n\n")
    usage.route(
        "/.well-known/tdmrep.json", Reply(200, TDMREP, headers={"Content-Type": "application/json"})
    )
    downloaded = [
        rules.url("/page/1"),
        rules.url("/page/noindex"),
        rules.url("/page/busy"),
        missing.url("/page/1", host="localhost"),
        flaky.url("/page/1"),
        usage.url("/page/free"),
        reset.url("/page/1", host="localhost"),
    ]
    dropped = {
        rules.url("/private/a"): "disallowed",
        usage.url("/reserved/a"): "usage",
        usage.url("/page/no-ai"): "usage",
    }
    unjudged = rules.url("/private/not-judged")
    record = tmp_path / "record"
    result = run_crawl(
        [*downloaded, *dropped, Start(unjudged, meta={"dont_obey_robotstxt": True})],
        {
            **ADDON,
            "REP_RECORD": str(record),
            "REP_USAGE_PURPOSES": ["train-ai"],
            "REP_RETRY_FAST_DELAY": 0.2,
            "REP_RETRY_DELAY": 0.5,
            "REP_PAUSE_DELAY": 0.5,
        },
        timeout=60,
    )
    assert result.close_reason == "finished"
    assert sorted(e.url for e in result.errbacks if e.url) == sorted(dropped)
    records = read_records(record)
    by_id = {r.rid: r for r in records}
    found = decisions(records)
    # One decision per request the spider made.
    assert sorted(found) == sorted([*downloaded, *dropped, unjudged])
    assert all(len(made) == 1 for made in found.values())
    for url in downloaded:
        (made,) = found[url]
        assert made["decision"] == "downloaded" and made["judged"], url
        assert made["page"]["status"] == 200
        # The robots.txt answer it rests on is in the record: a 200's copy, or the 404.
        answer = by_id[made["robots"]["record"]]
        assert answer.kind == "response" and answer.target.endswith("/robots.txt")
        assert made["agent"]["tokens"] and made["purpose"]["labels"] == ["train-ai"]
    for url, reason in dropped.items():
        (made,) = found[url]
        assert (made["decision"], made["reason"]) == ("dropped", reason)
    (made,) = found[unjudged]
    assert (made["decision"], made["judged"]) == ("downloaded", False)
    # What each rests on, as stored.
    assert found[missing.url("/page/1", host="localhost")][0]["robots"]["outcome"] == "allow_all"
    assert found[rules.url("/private/a")][0]["rule"] == {
        "allow": False,
        "pattern": "/private",
        "line": 2,
    }
    # robots.txt that failed first: its 503 is recorded too, the page rests on the 200 after it.
    flaky_answers = [
        r for r in records if r.kind == "response" and r.target == flaky.url("/robots.txt")
    ]
    assert [r.status for r in flaky_answers] == [503, 200]
    assert found[flaky.url("/page/1")][0]["robots"]["record"] == flaky_answers[-1].rid
    # The usage document: tdmrep.json's answer, named by the page that used it.
    (free,) = found[usage.url("/page/free")]
    assert [d["document"] for d in free["documents"]] == ["tdmrep.json"]
    assert by_id[free["documents"][0]["record"]].target.endswith("/.well-known/tdmrep.json")
    # Each usage statement with its source (here tdmrep.json's rule), and what it means for
    # the purpose; the refusal by robots.txt's Content-Usage line, with that line.
    assert free["purpose"]["used"] is True
    assert [s.split(" rule ")[0] for s in free["usage"]["train-ai"]["sources"]] == ["tdmrep.json"]
    (no_ai,) = found[usage.url("/page/no-ai")]
    assert "Content-Usage" in no_ai["why"] and "line 3" in no_ai["why"], no_ai["why"]
    # The page's own rules and headers; the pause that delayed a page.
    noindex = found[rules.url("/page/noindex")][0]["page"]
    assert noindex["headers"] == {"X-Robots-Tag": ["noindex"]}
    assert noindex["rules"]["noindex"] is True
    assert found[rules.url("/page/busy")][0]["waited"]["for"] == "pause"
    # The fetch that got no answer: a metadata record of its error, and the answer after it.
    (no_answer,) = [
        r
        for r in records
        if r.kind == "metadata" and r.target == reset.url("/robots.txt", host="localhost")
    ]
    assert json.loads(no_answer.payload)["error"]
    assert found[reset.url("/page/1", host="localhost")][0]["robots"]["status"] == 200
    # Nothing secret: the cookie went out with the second attempt and is written nowhere.
    assert any(s.headers.get("cookie") == "session=s3cr3t" for s in flaky.seen("/robots.txt"))
    raw = b"".join(gzip.decompress(path.read_bytes()) for path in record.glob("*.warc.gz"))
    assert b"s3cr3t" not in raw and b"Set-Cookie" not in raw
    report = check([record])
    assert report.ok, [str(p) for p in report.failures]
    assert (
        subprocess.run(
            [sys.executable, "-m", "warcio.cli", "check", *map(str, sorted(record.glob("*.gz")))],
            check=False,
        ).returncode
        == 0
    )


def test_pages_name_the_robots_txt_copy_they_were_decided_by_when_it_changes(
    server_factory: Callable[..., ScriptedServer], tmp_path: Path
) -> None:
    site = server_factory()
    # The first copy lives 1 s, the second a day; the second disallows what the first
    # allowed, and the other way.
    first, second = "User-agent: *\nDisallow: /page/new\n", "User-agent: *\nDisallow: /page/old\n"
    site.route("/robots.txt", Reply.text(first, headers=ONE_SECOND), Reply.text(second))
    # One place at the site: /page/old passes both gates under the first copy and waits for
    # its place behind a slow page, while a request arriving after the copy's lifetime gets
    # the second one installed (the race, forced).
    # The copy is fetched within about 0.1 s of the start (up to 0.6 s on a loaded machine):
    # the trigger comes after its lifetime, the others within the second copy's, and the slow
    # page ends after both.
    site.route("/page/slow", Reply(200, html_page("s", []), headers=HTML, delay=3.0))
    later = [
        Start(site.url("/page/trigger"), at=1.6),
        Start(site.url("/page/new"), at=2.4),
        Start(site.url("/page/old/again"), at=2.4),
    ]
    record = tmp_path / "record"
    result = run_crawl(
        [site.url("/page/slow"), site.url("/page/old")],
        {
            **ADDON,
            "REP_RECORD": str(record),
            "REP_CACHE_MIN_LIFETIME": 1,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        },
        extra=later,
        timeout=60,
    )
    assert result.close_reason == "finished"
    records = read_records(record)
    copies = [r for r in records if r.kind == "response" and r.target == site.url("/robots.txt")]
    assert [r.payload.decode() for r in copies] == [first, second]
    old, new = (r.rid for r in copies)
    found = {url: made for url, (made,) in decisions(records).items()}
    named = {url[len(site.origin) :]: made["robots"]["record"] for url, made in found.items()}
    assert named["/page/slow"] == old
    assert named["/page/new"] == new and found[site.url("/page/new")]["decision"] == "downloaded"
    assert found[site.url("/page/old/again")]["decision"] == "dropped"
    assert named["/page/old/again"] == new
    # The raced one: let through under the first copy, it waited for its place while the
    # second was installed, and was judged again by it before download: dropped, naming it.
    raced = found[site.url("/page/old")]
    assert (raced["decision"], raced["reason"], named["/page/old"]) == (
        "dropped",
        "disallowed",
        new,
    )
    assert site.count("/page/old") == 0
    report = check([record])
    assert report.ok, [str(p) for p in report.failures]


def test_query_strings_kept_as_their_hmac_and_decisions_reading_them_unverifiable(
    server_factory: Callable[..., ScriptedServer], tmp_path: Path
) -> None:
    site = server_factory()
    site.robots("User-agent: *\nDisallow: /*?session\n")
    key = "a secret kept outside the record"
    plain, read = site.url("/page/1?user=alice"), site.url("/page/2?session=42")
    record = tmp_path / "record"
    result = run_crawl(
        [plain, read, site.url("/page/3")],
        {**ADDON, "REP_RECORD": str(record), "REP_RECORD_QUERY_KEY": key},
        timeout=60,
    )
    assert result.close_reason == "finished"
    raw = b"".join(gzip.decompress(path.read_bytes()) for path in record.glob("*.warc.gz"))
    assert b"user=alice" not in raw and b"session=42" not in raw
    found = decisions(read_records(record))

    def hashed(url: str) -> str:
        base, query = url.split("?", 1)
        return f"{base}?hmac-sha256={hmac.new(key.encode(), query.encode(), 'sha256').hexdigest()}"

    assert sorted(found) == sorted([hashed(plain), hashed(read), site.url("/page/3")])
    (kept,) = found[hashed(plain)]
    assert (kept["decision"], kept["query"], kept["query_read"]) == (
        "downloaded",
        "hmac-sha256",
        False,
    )
    (dropped,) = found[hashed(read)]
    assert (dropped["decision"], dropped["query_read"]) == ("dropped", True)
    assert "query" not in found[site.url("/page/3")][0]
    report = check([record])
    assert report.ok, [str(p) for p in report.failures]
    assert [p.record for p in report.unverifiable] == [
        r.rid for r in read_records(record) if r.target == hashed(read)
    ]


def test_an_identical_refetch_is_a_revisit_of_the_first_answer(
    server_factory: Callable[..., ScriptedServer], tmp_path: Path
) -> None:
    site = server_factory()
    robots = "User-agent: *\nDisallow: /private\n"
    # The same file twice: the first copy lives 1 s, the second a day.
    site.route("/robots.txt", Reply.text(robots, headers=ONE_SECOND), Reply.text(robots))
    record = tmp_path / "record"
    result = run_crawl(
        [site.url("/page/1")],
        {**ADDON, "REP_RECORD": str(record), "REP_CACHE_MIN_LIFETIME": 1},
        # /page/2 finds the copy's lifetime over: it is judged by the copy in force while the
        # refresh it triggers runs (SPEC B3); the next ones by the refreshed copy.
        extra=[
            Start(site.url("/page/2"), at=1.8),
            Start(site.url("/page/3"), at=2.4),
            Start(site.url("/private/x"), at=2.4),
        ],
        timeout=60,
    )
    assert result.close_reason == "finished"
    assert site.count("/robots.txt") == 2
    records = read_records(record)
    (first,) = [r for r in records if r.kind == "response"]
    (again,) = [r for r in records if r.kind == "revisit"]
    assert again.headers["WARC-Refers-To"] == first.rid
    assert again.headers["WARC-Payload-Digest"] == first.headers["WARC-Payload-Digest"]
    found = {url: made for url, (made,) in decisions(records).items()}
    assert found[site.url("/page/1")]["robots"]["record"] == first.rid
    assert found[site.url("/page/2")]["robots"]["record"] == first.rid
    # Decided by the refreshed copy: named by its revisit record, which the check follows.
    assert found[site.url("/page/3")]["robots"]["record"] == again.rid
    assert found[site.url("/private/x")]["robots"]["record"] == again.rid
    assert found[site.url("/private/x")]["decision"] == "dropped"
    report = check([record])
    assert report.ok, [str(p) for p in report.failures]


def test_a_cache_replay_is_flagged_and_a_redirect_names_the_urls_before_it(
    server_factory: Callable[..., ScriptedServer], tmp_path: Path
) -> None:
    site = server_factory()
    site.robots("User-agent: *\nDisallow: /private\n")
    site.route("/page/moved", Reply.redirect("/page/here"))
    settings = {
        **ADDON,
        "HTTPCACHE_ENABLED": True,
        "HTTPCACHE_DIR": str(tmp_path / "cache"),
        "REP_RECORD": str(tmp_path / "record"),
    }
    urls = [site.url("/page/1"), site.url("/page/moved")]
    for _ in range(2):
        assert run_crawl(urls, settings, timeout=60).close_reason == "finished"
    assert site.count("/page/1") == 1  # the second run's came from the cache
    records = read_records(tmp_path / "record")
    found = decisions(records)
    assert [made["page"]["cached"] for made in found[site.url("/page/1")]] == [False, True]
    # The redirect's target is the request decided (each run), naming the URL before it.
    assert site.url("/page/moved") not in found
    here = found[site.url("/page/here")]
    assert [made["page"]["redirects"] for made in here] == [[site.url("/page/moved")]] * 2
    report = check([tmp_path / "record"])
    assert report.ok, [str(p) for p in report.failures]

"""The compliance record's check (docs/record.md, ``scrapy robots-record check``): a record
``RecordWriter`` wrote passes, and every kind of tampering the chain and the seal are meant to
show (with the WARC digests recomputed and each record recompressed) fails, naming the record;
a decision that does not follow from its copy fails; an unsealed file is listed apart."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastwarc.warc import ArchiveIterator as FastArchiveIterator
from fastwarc.warc import WarcRecordType
from warcio.archiveiterator import ArchiveIterator

import scrapy_rep
from scrapy_rep.core.robots_file import RobotsTxt
from scrapy_rep.storage.record import CheckReport, RecordWriter, check
from scrapy_rep.storage.record._check import Problem
from scrapy_rep.storage.record._format import (
    CHAIN_HEADER,
    CHAIN_START,
    MANIFEST,
    chain_link,
    warc_digest,
)

ROBOTS = b"User-agent: *\nDisallow: /private\n"
NOT_FOUND = b"<html>not found</html>"
STORED = b"User-agent: mybot\nDisallow: /\n"
TOKENS = ["mybot"]
USER_AGENT = "mybot/1.0 (+https://example.com/bot)"
WHEN = 1_700_000_000.0
SOFTWARE = f"scrapy-rep {scrapy_rep.__version__}"
#: Disallow: /private is line 2 of ROBOTS; Disallow: / line 2 of STORED.
PRIVATE_RULE = {"allow": False, "pattern": "/private", "line": 2}
ALL_RULE = {"allow": False, "pattern": "/", "line": 2}

#: A record as the tampering helpers see it: its WARC headers and its block.
Record = tuple[list[tuple[str, str]], bytes]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _info(software: str = SOFTWARE) -> dict[str, Any]:
    return {
        "software": software,
        "scrapy": "2.x",
        "python": sys.version.split()[0],
        "user-agent": USER_AGENT,
        "tokens": " ".join(TOKENS),
        "settings": json.dumps({"ROBOTSTXT_OBEY": True}),
    }


def _robots(url: str, record: str, body: bytes | None, outcome: str, status: int) -> dict[str, Any]:
    sha = None if body is None else _sha(body)
    return {"url": url, "record": record, "sha256": sha, "outcome": outcome, "status": status}


def _decision(
    url: str,
    decision: str,
    robots: dict[str, Any] | None,
    *,
    allowed: bool | None = None,
    rule: dict[str, Any] | None = None,
    reason: str | None = None,
    documents: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """A version 1 decision payload (docs/record.md)."""
    payload: dict[str, Any] = {
        "version": 1,
        "url": url,
        "method": "GET",
        "decision": decision,
        "time": "2023-11-14T22:13:20.000000Z",
        "judged": True,
        "agent": {"user_agent": USER_AGENT, "tokens": TOKENS},
        "purposes": [],
        "robots": robots,
        "documents": list(documents),
    }
    if robots is not None and robots["outcome"] == "rules":
        payload.update(allowed=allowed, rule=rule, group="no group for mybot; used *")
    if decision == "downloaded":
        payload["page"] = {"status": 200, "headers": {}, "cached": False, "redirects": []}
    else:
        payload.update(reason=reason, why=f"{reason} by robots.txt")
    return payload


@dataclass
class Base:
    """A record directory as a crawl would leave it, and the ids of what it holds."""

    directory: Path
    ids: dict[str, str]

    @property
    def file(self) -> Path:
        (path,) = sorted(self.directory.glob("rep-*.warc.gz"))
        return path


def _answer(writer: RecordWriter, url: str, status: int, body: bytes, **extra: Any) -> str:
    return writer.answer(
        url,
        method="GET",
        request_headers=[(b"User-Agent", USER_AGENT.encode()), (b"Accept-Encoding", b"gzip")],
        status=status,
        headers=[(b"Content-Type", b"text/plain"), *extra.get("headers", [])],
        body=body,
        truncated=None,
        when=WHEN,
    )


def _write_base(
    directory: Path,
    more: Callable[[RecordWriter, dict[str, str]], None] | None = None,
    software: str = SOFTWARE,
) -> Base:
    """A 200 robots.txt with Disallow: /private, a 404, a copy read from the store, and a
    decision of each kind resting on them; ``more`` writes further decisions."""
    writer = RecordWriter(directory, _info(software), clock=lambda: WHEN)
    ids: dict[str, str] = {}
    ids["ok"] = _answer(writer, "https://example.com/robots.txt", 200, ROBOTS)
    ids["missing"] = _answer(writer, "https://example.org/robots.txt", 404, NOT_FOUND)
    about = {"document": "robots.txt", "origin": "https://example.net", "status": 200}
    ids["stored"] = writer.copy("https://example.net/robots.txt", STORED, WHEN, about)
    ok = _robots("https://example.com/robots.txt", ids["ok"], ROBOTS, "rules", 200)
    missing = _robots("https://example.org/robots.txt", ids["missing"], None, "allow_all", 404)
    stored = _robots("https://example.net/robots.txt", ids["stored"], STORED, "rules", 200)
    decisions = {
        "downloaded": _decision("https://example.com/page", "downloaded", ok, allowed=True),
        "dropped": _decision(
            "https://example.com/private/x",
            "dropped",
            ok,
            allowed=False,
            rule=PRIVATE_RULE,
            reason="disallowed",
        ),
        "not_judged": {
            "version": 1,
            "url": "https://example.com/private/y",
            "method": "GET",
            "decision": "downloaded",
            "judged": False,
        },
        "allow_all": _decision("https://example.org/a", "downloaded", missing),
        "from_store": _decision(
            "https://example.net/b",
            "dropped",
            stored,
            allowed=False,
            rule=ALL_RULE,
            reason="disallowed",
        ),
    }
    for name, payload in decisions.items():
        ids[name] = writer.decision(payload["url"], payload, WHEN)
    if more is not None:
        more(writer, ids)
    writer.close()
    assert writer.error is None
    return Base(directory, ids)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Base:
    return _write_base(tmp_path_factory.mktemp("base"))


# -- reading and rewriting records (the tamperer's tools) --------------------------------------


def _read(path: Path) -> list[Record]:
    with path.open("rb") as stream:
        return [
            (list(record.rec_headers.headers), record.raw_stream.read())
            for record in ArchiveIterator(stream, no_record_parse=True)
        ]


def _set(headers: list[tuple[str, str]], name: str, value: str) -> list[tuple[str, str]]:
    return [(key, value if key.lower() == name.lower() else old) for key, old in headers]


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    return next((value for key, value in headers if key.lower() == name.lower()), None)


def _write(path: Path, records: list[Record]) -> None:
    """Write ``records`` back as warcio does (one gzip member each), their Content-Length and
    WARC digests recomputed: only the chain and the seal can tell an edit."""
    out = bytearray()
    for headers, block in records:
        fixed = _set(headers, "Content-Length", str(len(block)))
        fixed = _set(fixed, "WARC-Block-Digest", warc_digest(block))
        if _header(fixed, "WARC-Type") in ("response", "request"):
            payload = block.partition(b"\r\n\r\n")[2]
            fixed = _set(fixed, "WARC-Payload-Digest", warc_digest(payload))
        head = "WARC/1.1\r\n" + "".join(f"{key}: {value}\r\n" for key, value in fixed) + "\r\n"
        compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS + 16)
        member = head.encode() + block + b"\r\n\r\n"
        out += compressor.compress(member) + compressor.flush()
    path.write_bytes(bytes(out))


def _tampered(base: Base, where: Path, records: list[Record]) -> Path:
    """A copy of ``base``'s directory at ``where`` with its file rewritten as ``records``."""
    shutil.copytree(base.directory, where)
    _write(where / base.file.name, records)
    return where


def _rid(record: Record) -> str:
    rid = _header(record[0], "WARC-Record-ID")
    assert rid is not None
    return rid


def _named(report: CheckReport) -> set[str | None]:
    return {problem.record for problem in report.failures}


def _words(problems: Sequence[Problem]) -> str:
    return "\n".join(str(problem) for problem in problems)


# -- a record as written -------------------------------------------------------------------


def test_a_clean_record_passes(base: Base) -> None:
    report = check([base.directory])
    assert report.ok, _words(report.failures)
    assert report.unsealed == ()
    assert report.parser_changed == (), _words(report.parser_changed)
    # warcinfo, 2 answers of 2 records each, a copy, 5 decisions, the seal.
    assert (report.files, report.records) == (1, 12)
    assert (report.decisions, report.not_judged) == (4, 1)


def test_the_chain_read_back_is_the_one_written_for_every_record_type(base: Base) -> None:
    # The checker's chain is the writer's: recomputed over each record as read, it equals
    # the WARC-Rep-Chain header written, for each type of record in the file.
    chain, types = CHAIN_START, set()
    for headers, block in _read(base.file):
        types.add(_header(headers, "WARC-Type"))
        chain = chain_link(chain, lambda name, h=headers: _header(h, name), block)
        assert _header(headers, CHAIN_HEADER) == chain, _header(headers, "WARC-Type")
    assert types == {"warcinfo", "response", "request", "resource", "metadata"}


def test_the_rewriting_helper_alone_changes_nothing(base: Base, tmp_path: Path) -> None:
    # So that in the tampering tests below the edit, and nothing else, is what is caught.
    copy = _tampered(base, tmp_path / "same", _read(base.file))
    assert (copy / base.file.name).read_bytes() == base.file.read_bytes()
    assert check([copy]).ok


def test_warcio_and_fastwarc_read_every_record(base: Base) -> None:
    script = Path(sys.executable).with_name("warcio")
    result = subprocess.run(
        [str(script), "check", "-v", str(base.file)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("digest pass") == 12, result.stdout
    expected = [
        (_header(h, "WARC-Type"), _header(h, "WARC-Record-ID")) for h, _ in _read(base.file)
    ]
    with base.file.open("rb") as stream:
        records = FastArchiveIterator(
            stream, parse_http=False, record_types=WarcRecordType.any_type
        )
        seen = []
        for record in records:
            assert record.verify_block_digest()
            seen.append((str(record.record_type), record.record_id))
    assert seen == expected


def test_a_gzip_encoded_answer_is_checked_as_decoded(tmp_path: Path) -> None:
    def more(writer: RecordWriter, ids: dict[str, str]) -> None:
        url = "https://gzip.example/robots.txt"
        encoded = [(b"Content-Encoding", b"gzip")]
        rid = _answer(writer, url, 200, gzip.compress(ROBOTS), headers=encoded)
        robots = _robots(url, rid, ROBOTS, "rules", 200)
        payload = _decision(
            "https://gzip.example/private/1",
            "dropped",
            robots,
            allowed=False,
            rule=PRIVATE_RULE,
            reason="disallowed",
        )
        ids["gzip"] = writer.decision(payload["url"], payload, WHEN)
        robots = {**robots, "sha256": _sha(gzip.compress(ROBOTS))}
        payload = _decision("https://gzip.example/page", "downloaded", robots, allowed=True)
        ids["raw_sha"] = writer.decision(payload["url"], payload, WHEN)

    base = _write_base(tmp_path / "gzip", more)
    report = check([base.directory])
    # The SHA-256 of the copy as parsed (decoded), not of the bytes received.
    assert _named(report) == {base.ids["raw_sha"]}, _words(report.failures)


# -- tampering -----------------------------------------------------------------------------


def test_single_byte_edits_of_copies_and_decisions_fail_naming_the_record(
    base: Base, tmp_path: Path
) -> None:
    records = _read(base.file)
    # The bytes an edit may hit: a robots.txt answer's body, a stored copy, a decision.
    targets: list[tuple[int, int]] = []  # (record index, first byte the edit may hit)
    for index, (headers, block) in enumerate(records):
        rid = _rid((headers, block))
        if rid in (base.ids["ok"], base.ids["missing"]):
            targets.append((index, block.index(b"\r\n\r\n") + 4))
        elif rid == base.ids["stored"] or rid in {
            base.ids[name] for name in ("downloaded", "dropped", "not_judged", "from_store")
        }:
            targets.append((index, 0))
    assert len(targets) == 7
    rng = random.Random(20240601)
    for edit in range(100):
        index, start = rng.choice(targets)
        headers, block = records[index]
        position = rng.randrange(start, len(block))
        changed = bytearray(block)
        changed[position] ^= rng.randrange(1, 256)
        edited = [*records[:index], (headers, bytes(changed)), *records[index + 1 :]]
        report = check([_tampered(base, tmp_path / f"edit{edit}", edited)])
        assert not report.ok
        assert _rid(records[index]) in _named(report), (index, position, _words(report.failures))


def test_a_removed_record_fails_naming_its_place(base: Base, tmp_path: Path) -> None:
    records = _read(base.file)
    index = next(i for i, record in enumerate(records) if _rid(record) == base.ids["dropped"])
    report = check([_tampered(base, tmp_path / "removed", records[:index] + records[index + 1 :])])
    assert not report.ok
    # The record that took its place no longer links to the one before it; the seal counts.
    assert _rid(records[index + 1]) in _named(report), _words(report.failures)
    assert _rid(records[-1]) in _named(report)


def test_two_swapped_records_fail_naming_both(base: Base, tmp_path: Path) -> None:
    records = _read(base.file)
    index = next(i for i, record in enumerate(records) if _rid(record) == base.ids["downloaded"])
    swapped = [*records[:index], records[index + 1], records[index], *records[index + 2 :]]
    report = check([_tampered(base, tmp_path / "swapped", swapped)])
    assert not report.ok
    assert {_rid(records[index]), _rid(records[index + 1])} <= _named(report)


def test_a_dropped_seal_fails_as_tampered(base: Base, tmp_path: Path) -> None:
    records = _read(base.file)
    directory = _tampered(base, tmp_path / "unsealed", records[:-1])
    report = check([directory])
    assert not report.ok
    assert report.unsealed == ()
    file = directory / base.file.name
    assert any(p.file == file and "seal is gone" in p.words for p in report.failures)


def test_a_gone_file_and_a_changed_manifest_line_fail(base: Base, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    shutil.copytree(base.directory, gone)
    (gone / base.file.name).unlink()
    report = check([gone])
    assert [(p.file, "gone" in p.words) for p in report.failures] == [(gone / base.file.name, True)]
    changed = tmp_path / "changed"
    shutil.copytree(base.directory, changed)
    line = json.loads((changed / MANIFEST).read_text())
    (changed / MANIFEST).write_text(json.dumps({**line, "records": 11}) + "\n")
    report = check([changed])
    assert [p.words for p in report.failures] == ["the manifest's records is 11, the file's 12"]


def test_an_unreadable_file_fails(base: Base, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(base.directory, broken)
    data = bytearray(base.file.read_bytes())
    data[40] ^= 0xFF  # inside the first gzip member's deflate data
    (broken / base.file.name).write_bytes(bytes(data))
    report = check([broken])
    assert not report.ok
    assert any("cannot be read" in p.words for p in report.failures), _words(report.failures)


def test_an_unsealed_file_is_listed_apart(tmp_path: Path) -> None:
    base = _write_base(tmp_path / "killed")
    # A writer that never closed: the file stops before the seal, the manifest has no line.
    with base.file.open("rb") as stream:
        records = ArchiveIterator(stream, no_record_parse=True)
        for _ in records:
            seal_at = records.get_record_offset()
    os.truncate(base.file, seal_at)
    (base.directory / MANIFEST).write_text("")
    report = check([base.directory])
    assert report.ok, _words(report.failures)
    assert report.unsealed == (base.file,)
    assert (report.records, report.decisions) == (11, 4)


# -- decisions -----------------------------------------------------------------------------


def test_a_decision_that_does_not_follow_fails(tmp_path: Path) -> None:
    def more(writer: RecordWriter, ids: dict[str, str]) -> None:
        ok = _robots("https://example.com/robots.txt", ids["ok"], ROBOTS, "rules", 200)
        payload = _decision("https://example.com/private/z", "downloaded", ok, allowed=True)
        ids["wrong"] = writer.decision(payload["url"], payload, WHEN)
        payload = _decision(
            "https://example.com/open", "dropped", ok, allowed=False, reason="disallowed"
        )
        ids["wrong_drop"] = writer.decision(payload["url"], payload, WHEN)
        gone = _robots("https://example.com/robots.txt", "<urn:uuid:0000>", ROBOTS, "rules", 200)
        payload = _decision("https://example.com/page", "downloaded", gone, allowed=True)
        ids["missing_copy"] = writer.decision(payload["url"], payload, WHEN)
        other = {**ok, "sha256": _sha(b"User-agent: *\nAllow: /\n")}
        payload = _decision("https://example.com/page", "downloaded", other, allowed=True)
        ids["other_copy"] = writer.decision(payload["url"], payload, WHEN)

    base = _write_base(tmp_path / "wrong", more)
    report = check([base.directory])
    problems = {p.record: p.words for p in report.failures}
    assert set(problems) == {
        base.ids[n] for n in ("wrong", "wrong_drop", "missing_copy", "other_copy")
    }
    assert all(p.kind == "decision" for p in report.failures)
    assert problems[base.ids["wrong"]].startswith("downloaded, but today's parser disallows")
    assert problems[base.ids["wrong_drop"]].startswith("dropped as disallowed, but")
    assert problems[base.ids["missing_copy"]].startswith("missing copy")
    assert "SHA-256" in problems[base.ids["other_copy"]]


def test_a_different_deciding_line_is_a_parser_change(tmp_path: Path) -> None:
    def more(writer: RecordWriter, ids: dict[str, str]) -> None:
        ok = _robots("https://example.com/robots.txt", ids["ok"], ROBOTS, "rules", 200)
        payload = _decision(
            "https://example.com/private/q",
            "dropped",
            ok,
            allowed=False,
            rule={**PRIVATE_RULE, "line": 7},
            reason="disallowed",
        )
        ids["moved"] = writer.decision(payload["url"], payload, WHEN)

    base = _write_base(tmp_path / "moved", more)
    report = check([base.directory])
    assert report.ok, _words(report.failures)
    assert [p.record for p in report.parser_changed] == [base.ids["moved"]]


def test_another_versions_verdict_is_a_parser_change(tmp_path: Path) -> None:
    def more(writer: RecordWriter, ids: dict[str, str]) -> None:
        ok = _robots("https://example.com/robots.txt", ids["ok"], ROBOTS, "rules", 200)
        # That version's parser allowed it and the crawl went by it: today's disallows it.
        payload = _decision("https://example.com/private/v", "downloaded", ok, allowed=True)
        ids["then"] = writer.decision(payload["url"], payload, WHEN)

    old = _write_base(tmp_path / "old", more, software="scrapy-rep 0.0.1")
    report = check([old.directory], software=SOFTWARE)
    assert report.ok, _words(report.failures)
    assert [p.record for p in report.parser_changed] == [old.ids["then"]]
    assert "scrapy-rep 0.0.1" in report.parser_changed[0].words
    # Taken as today's own: a verdict that does not follow.
    assert not check([old.directory]).ok


def test_a_copy_in_another_directory_counts_only_if_given(tmp_path: Path) -> None:
    fetcher = RecordWriter(tmp_path / "a", _info())
    answer = _answer(fetcher, "https://example.com/robots.txt", 200, ROBOTS)
    fetcher.close()
    crawler = RecordWriter(tmp_path / "b", _info())
    ok = _robots("https://example.com/robots.txt", answer, ROBOTS, "rules", 200)
    payload = _decision("https://example.com/page", "downloaded", ok, allowed=True)
    decision = crawler.decision(payload["url"], payload, WHEN)
    crawler.close()
    both = check([tmp_path / "a", tmp_path / "b"])
    assert both.ok, _words(both.failures)
    assert (both.files, both.decisions) == (2, 1)
    alone = check([tmp_path / "b"])
    assert [(p.record, p.words.startswith("missing copy")) for p in alone.failures] == [
        (decision, True)
    ]


def test_todays_parser_agrees_with_the_base_decisions() -> None:
    # What the base record's decisions say is what the parser answers (not a tautology of
    # the checker: it is what a crawl would have written).
    robots = RobotsTxt.parse(ROBOTS)
    rule = robots.decide("https://example.com/private/x", TOKENS).rule
    assert rule is not None and rule._asdict() == PRIVATE_RULE
    stored = RobotsTxt.parse(STORED).decide("https://example.net/b", TOKENS).rule
    assert stored is not None and stored._asdict() == ALL_RULE


# -- the command ---------------------------------------------------------------------------


def _command(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "robots-record", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_command_exits_0_on_a_clean_record_and_1_naming_a_tampered_one(
    base: Base, tmp_path: Path
) -> None:
    clean = _command(tmp_path, "check", str(base.directory))
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.strip().splitlines() == [
        "everything follows: 1 files, 12 records, 4 decisions checked, 1 not judged, "
        "0 unsealed, 0 parser changes, 0 unverifiable"
    ]
    records = _read(base.file)
    index = next(i for i, record in enumerate(records) if _rid(record) == base.ids["dropped"])
    headers, block = records[index]
    edited = block.replace(b'"dropped"', b'"kept"')
    edited_records = [*records[:index], (headers, edited), *records[index + 1 :]]
    directory = _tampered(base, tmp_path / "edited", edited_records)
    tampered = _command(tmp_path, "check", str(directory))
    assert tampered.returncode == 1, tampered.stdout + tampered.stderr
    assert any(
        line.startswith("FAILED:") and base.file.name in line and base.ids["dropped"] in line
        for line in tampered.stdout.splitlines()
    ), tampered.stdout


@pytest.mark.parametrize(
    "args", [[], ["verify", "."], ["check"], ["check", "not-there"], ["check", "file.txt"]]
)
def test_the_command_exits_2_on_a_usage_error(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "file.txt").write_text("")
    result = _command(tmp_path, *args)
    assert result.returncode == 2, result.stdout + result.stderr

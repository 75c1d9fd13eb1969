"""``check``: read a compliance record's directories back and say what does not hold
(docs/record.md): digests, the chain, the seals and the manifest (integrity), and each decision
re-derived with today's parser from the copies it names. Pure: no Scrapy, no Twisted."""

from __future__ import annotations

import base64
import hashlib
import json
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from warcio.archiveiterator import ArchiveIterator

from scrapy_rep.core.decode import DecodeError, decode, split_codings
from scrapy_rep.core.parser import MAX_BODY_BYTES
from scrapy_rep.core.robots_file import RobotsTxt
from scrapy_rep.storage.record._format import (
    CHAIN_HEADER,
    CHAIN_START,
    DECISION_VERSION,
    FILE_PREFIX,
    MANIFEST,
    SEAL_URI,
    chain_link,
    rule_fields,
)

__all__ = ["CheckReport", "Problem", "check"]

#: The record types a decision's ``robots.record`` / ``documents[].record`` may name.
_COPY_TYPES = ("response", "resource", "revisit")
#: Revisits followed to the answer they repeat, at most.
_REVISIT_HOPS = 8
#: Parsed robots.txt copies kept at once (decisions name the same few copies over and over).
_PARSED_KEPT = 64

Kind = Literal["integrity", "decision"]


@dataclass(frozen=True)
class Problem:
    """One thing that does not hold (or a note), and where: ``file``, and the record
    (``index``: its position in the file, 0 the warcinfo; ``offset``: its first byte) when it
    is about one."""

    kind: Kind
    file: Path
    words: str
    record: str | None = None
    index: int | None = None
    offset: int | None = None

    def __str__(self) -> str:
        if self.index is None:
            return f"{self.file}: {self.words}"
        rid = f" {self.record}" if self.record else ""
        return f"{self.file} record {self.index}{rid} (byte {self.offset}): {self.words}"


@dataclass(frozen=True)
class CheckReport:
    """What ``check`` found. ``ok``: no failure (unsealed files and parser changes are not)."""

    failures: tuple[Problem, ...]
    #: Files with neither a seal nor a manifest line: their writer never closed them.
    unsealed: tuple[Path, ...]
    #: Decisions today's parser answers differently only in the deciding line, or that
    #: another scrapy-rep version wrote and that it answers differently.
    parser_changed: tuple[Problem, ...]
    #: Decisions that cannot be re-derived: robots.txt's answer read the URL's query string,
    #: which the record keeps hashed (REP_RECORD_QUERY_KEY).
    unverifiable: tuple[Problem, ...]
    files: int
    records: int
    #: Judged decisions re-derived (``not_judged``: those of dont_obey_robotstxt requests).
    decisions: int
    not_judged: int

    @property
    def ok(self) -> bool:
        return not self.failures


def check(directories: Sequence[Path], *, software: str | None = None) -> CheckReport:
    """Check every ``rep-*.warc.gz`` file and the manifest of each of ``directories``; a
    decision may name a copy recorded in any of them (a fleet's members each have one).
    ``software``: what checks (``scrapy-rep <version>``, as warcinfo's ``software`` field
    says what wrote): a verdict written by another version that today's parser answers
    otherwise is a parser change, not a failure (None: every file is taken as today's)."""
    return _Checker(software=software).run(directories)


@dataclass(frozen=True)
class _Record:
    index: int
    offset: int
    headers: Any  # warcio's StatusAndHeaders
    block: bytes

    def header(self, name: str) -> str | None:
        value: str | None = self.headers.get_header(name)
        return value

    @property
    def kind(self) -> str:
        return self.header("WARC-Type") or ""

    @property
    def rid(self) -> str | None:
        return self.header("WARC-Record-ID")

    @property
    def target(self) -> str:
        return self.header("WARC-Target-URI") or ""


@dataclass(frozen=True)
class _Copy:
    """A response or resource record a decision may name: where, and its copy's SHA-256
    (decoded and cut as the parser read it), or why it has none."""

    file: Path
    offset: int
    kind: str
    sha256: str | None
    error: str | None
    #: A revisit's: the record it repeats (its copy is that one's).
    refers_to: str | None = None


@dataclass
class _File:
    """What the first pass learnt of one file."""

    path: Path
    readable: bool = True
    records: int = 0
    last_chain: str | None = None
    sealed: bool = False
    continues: bool = False
    software: str | None = None
    sha256: str = ""


def _records(path: Path) -> Iterator[_Record]:
    """``path``'s records, each with its whole block (for an HTTP record: headers and
    payload as written; otherwise the payload)."""
    with path.open("rb") as stream:
        records = ArchiveIterator(stream, no_record_parse=True)
        for index, record in enumerate(records):
            block = record.raw_stream.read()
            yield _Record(index, records.get_record_offset(), record.rec_headers, block)


def _file_sha256(path: Path) -> str:
    # In pieces: a file grows to 1 GiB before the next is begun.
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while piece := stream.read(1 << 20):
            digest.update(piece)
    return digest.hexdigest()


def _record_at(path: Path, offset: int) -> _Record:
    with path.open("rb") as stream:
        stream.seek(offset)
        record = next(iter(ArchiveIterator(stream, no_record_parse=True)))
        return _Record(-1, offset, record.rec_headers, record.raw_stream.read())


def _digest_matches(value: str, data: bytes) -> bool | None:
    """Whether WARC digest ``value`` (``algorithm:`` base32 or hex) is ``data``'s; None for
    an algorithm hashlib does not know."""
    algorithm, _, encoded = value.partition(":")
    try:
        digest = hashlib.new(algorithm.strip().lower().replace("-", ""), data).digest()
    except ValueError:
        return None
    encoded = encoded.strip()
    base32 = base64.b32encode(digest).decode("ascii").rstrip("=")
    return encoded.upper().rstrip("=") == base32 or encoded.lower() == digest.hex()


def _split_http(block: bytes) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """An HTTP record's block: its headers (without the status line) and its payload."""
    head, separator, payload = block.partition(b"\r\n\r\n")
    if not separator:
        raise ValueError("its HTTP headers have no end")
    headers = []
    for line in head.split(b"\r\n")[1:]:
        name, colon, value = line.partition(b":")
        if colon:
            headers.append((name.strip(), value.strip()))
    return headers, payload


def _copy_of(kind: str, block: bytes) -> bytes:
    """The copy as the parser read it: a resource's block; a response's payload decoded
    per its Content-Encoding and cut at MAX_BODY_BYTES, as the guard middleware does."""
    if kind == "resource":
        return block
    headers, payload = _split_http(block)
    values = [value for name, value in headers if name.lower() == b"content-encoding"]
    if not values:
        return payload[:MAX_BODY_BYTES]
    return decode(payload, split_codings(values), MAX_BODY_BYTES)[0]


def _warc_fields(block: bytes) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in block.decode("utf-8", "replace").splitlines():
        name, colon, value = line.partition(":")
        if colon:
            fields.setdefault(name.strip(), value.strip())
    return fields


def _rule_words(rule: dict[str, Any] | None) -> str:
    if rule is None:
        return "no rule"
    verb = "Allow" if rule.get("allow") else "Disallow"
    return f"line {rule.get('line')} ({verb}: {rule.get('pattern')})"


def _next_file(name: str) -> str | None:
    """The name of the file a series goes on in after ``name`` (its number plus one)."""
    stem = name.removesuffix(".warc.gz")
    head, _, number = stem.rpartition("-")
    if not number.isdigit():
        return None
    return f"{head}-{int(number) + 1:0{len(number)}d}.warc.gz"


@dataclass
class _Checker:
    software: str | None = None
    failures: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)
    unsealed: list[Path] = field(default_factory=list)
    unverifiable: list[Problem] = field(default_factory=list)
    copies: dict[str, _Copy] = field(default_factory=dict)
    parsed: OrderedDict[str, RobotsTxt] = field(default_factory=OrderedDict)
    records: int = 0
    decisions: int = 0
    not_judged: int = 0

    def run(self, directories: Sequence[Path]) -> CheckReport:
        unique = list(dict.fromkeys(Path(directory).resolve() for directory in directories))
        files: list[_File] = []
        for directory in unique:
            found = [
                self._integrity(path) for path in sorted(directory.glob(f"{FILE_PREFIX}*.warc.gz"))
            ]
            self._manifest(directory, found)
            files += found
        # Second pass, once every directory's copies are known: a decision may name a copy
        # another fleet member recorded.
        for info in files:
            if info.readable:
                self._decisions(info)
        return CheckReport(
            failures=tuple(self.failures),
            unsealed=tuple(self.unsealed),
            parser_changed=tuple(self.notes),
            unverifiable=tuple(self.unverifiable),
            files=len(files),
            records=self.records,
            decisions=self.decisions,
            not_judged=self.not_judged,
        )

    # -- integrity -------------------------------------------------------------------------

    def _fail(self, kind: Kind, path: Path, words: str, record: _Record | None = None) -> None:
        self.failures.append(_problem(kind, path, words, record))

    def _integrity(self, path: Path) -> _File:
        info = _File(path)
        chain = CHAIN_START
        before_last = chain
        last: _Record | None = None
        try:
            info.sha256 = _file_sha256(path)
            for record in _records(path):
                info.records += 1
                self.records += 1
                if last is not None and last.target.startswith(SEAL_URI):
                    self._fail("integrity", path, "a seal before the file's end", last)
                self._digests(path, record)
                if record.index == 0:
                    self._warcinfo(path, record, info)
                if record.kind in _COPY_TYPES and record.rid and record.rid not in self.copies:
                    self.copies[record.rid] = self._copy_entry(path, record)
                before_last = chain
                chain = self._link(path, record, chain)
                last = record
        except Exception as exc:  # a bad gzip, a cut record, not a WARC: nothing to trust
            info.readable = False
            self._fail("integrity", path, f"cannot be read: {type(exc).__name__}: {exc}")
            return info
        info.last_chain = None if last is None else last.header(CHAIN_HEADER)
        if last is not None and last.target.startswith(SEAL_URI):
            info.sealed = True
            self._seal(path, last, before_last, info)
        return info

    def _warcinfo(self, path: Path, record: _Record, info: _File) -> None:
        if record.kind != "warcinfo":
            self._fail("integrity", path, "the file does not start with its warcinfo", record)
            return
        info.software = _warc_fields(record.block).get("software")

    def _digests(self, path: Path, record: _Record) -> None:
        length = record.header("Content-Length")
        if length is None or not length.isdigit() or int(length) != len(record.block):
            self._fail(
                "integrity", path, f"Content-Length {length} but {len(record.block)} bytes", record
            )
        checks = [("WARC-Block-Digest", record.block)]
        if record.kind in ("response", "request"):
            try:
                checks.append(("WARC-Payload-Digest", _split_http(record.block)[1]))
            except ValueError as exc:
                self._fail("integrity", path, f"{exc}", record)
        for name, data in checks:
            value = record.header(name)
            if value is None:
                self._fail("integrity", path, f"no {name}", record)
                continue
            matches = _digest_matches(value, data)
            if matches is None:
                self._fail("integrity", path, f"{name} of an unknown algorithm: {value}", record)
            elif not matches:
                self._fail("integrity", path, f"{name} does not match the record", record)

    def _link(self, path: Path, record: _Record, previous: str) -> str:
        """The chain after ``record``. After a break it goes on from the value written, so
        that each break is named once: the edited, removed or moved record's place."""
        link = chain_link(previous, record.header, record.block)
        written = record.header(CHAIN_HEADER)
        if written is None:
            self._fail("integrity", path, f"no {CHAIN_HEADER}", record)
            return link
        if written != link:
            self._fail(
                "integrity",
                path,
                "the chain breaks here: this record, or the one before it, is not as written "
                "(edited, removed, moved or inserted)",
                record,
            )
            return written
        return link

    def _seal(self, path: Path, seal: _Record, before: str, info: _File) -> None:
        expected_uri = f"{SEAL_URI}:{path.name}"
        if seal.target != expected_uri:
            self._fail("integrity", path, f"the seal is another file's: {seal.target}", seal)
        try:
            body = json.loads(seal.block)
            records, chain = body["records"], body["chain"]
            info.continues = bool(body.get("continues"))
        except (ValueError, KeyError, TypeError) as exc:
            self._fail("integrity", path, f"the seal cannot be read: {exc}", seal)
            return
        if records != seal.index:
            self._fail(
                "integrity",
                path,
                f"the seal counts {records} records before it, the file has {seal.index}",
                seal,
            )
        if chain != before:
            self._fail("integrity", path, "the seal's chain is not the file's", seal)

    def _copy_entry(self, path: Path, record: _Record) -> _Copy:
        if record.kind == "revisit":
            refers_to = record.header("WARC-Refers-To")
            error = None if refers_to else "is a revisit that refers to no record"
            return _Copy(path, record.offset, record.kind, None, error, refers_to)
        try:
            copy = _copy_of(record.kind, record.block)
        except (DecodeError, ValueError) as exc:
            return _Copy(path, record.offset, record.kind, None, f"cannot be decoded: {exc}")
        digest = hashlib.sha256(copy).hexdigest()
        return _Copy(path, record.offset, record.kind, digest, None)

    def _manifest(self, directory: Path, files: list[_File]) -> None:
        manifest = directory / MANIFEST
        listed: dict[str, list[dict[str, Any]]] = {}
        if manifest.exists():
            lines = manifest.read_text(encoding="utf-8", errors="replace").splitlines()
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    name = entry["file"]
                    if not isinstance(name, str) or Path(name).name != name:
                        raise ValueError(f"not a file name: {name!r}")
                except (ValueError, KeyError, TypeError) as exc:
                    self._fail("integrity", manifest, f"line {number} cannot be read: {exc}")
                    continue
                listed.setdefault(name, []).append(entry)
        present = {info.path.name for info in files}
        for name in listed:
            if name not in present:
                self._fail("integrity", directory / name, "the manifest lists it, but it is gone")
        for info in files:
            entries = listed.get(info.path.name)
            if not info.readable:
                continue
            if entries is None:
                if info.sealed:
                    self._fail("integrity", info.path, "sealed, but the manifest does not list it")
                else:
                    self.unsealed.append(info.path)
                continue
            if not info.sealed:
                self._fail(
                    "integrity",
                    info.path,
                    "the manifest lists it but its seal is gone: records were dropped from its end",
                )
            for entry in entries:
                self._manifest_line(info, entry)
            following = _next_file(info.path.name) if info.continues else None
            if following is not None and following not in present and following not in listed:
                self._fail(
                    "integrity", info.path, f"its seal says the series goes on in {following}: gone"
                )

    def _manifest_line(self, info: _File, entry: dict[str, Any]) -> None:
        said = {"sha256": info.sha256, "records": info.records, "chain": info.last_chain}
        for key, value in said.items():
            if entry.get(key) != value:
                self._fail(
                    "integrity",
                    info.path,
                    f"the manifest's {key} is {entry.get(key)!r}, the file's {value!r}",
                )

    # -- decisions -------------------------------------------------------------------------

    def _decisions(self, info: _File) -> None:
        try:
            for record in _records(info.path):
                payload = _decision_payload(record)
                if payload is not None:
                    self._decision(info, record, payload)
        except Exception:  # reported by the first pass (or the file changed since): no more
            return

    def _decision(self, info: _File, record: _Record, payload: dict[str, Any]) -> None:
        if payload.get("judged") is False:
            self.not_judged += 1
            return
        self.decisions += 1
        path = info.path
        if payload.get("version") != DECISION_VERSION:
            self._fail("decision", path, f"decision version {payload.get('version')!r}", record)
            return
        robots = payload.get("robots")
        documents = payload.get("documents") or []
        if not isinstance(robots, (dict, type(None))) or not isinstance(documents, list):
            self._fail("decision", path, "malformed decision: robots or documents", record)
            return
        if robots is not None:
            failed = len(self.failures)
            named = self._named(path, record, robots, "robots.txt")
            if len(self.failures) == failed:
                self._follows(info, record, payload, robots, named)
        for entry in documents:
            if not isinstance(entry, dict):
                self._fail("decision", path, "malformed decision: a documents entry", record)
            else:
                self._named(path, record, entry, str(entry.get("document") or "document"))

    def _named(
        self, path: Path, record: _Record, entry: dict[str, Any], what: str
    ) -> tuple[str, _Copy] | None:
        """The copy ``entry`` names (its record id and it), if it names one, is there and is
        what the decision says it read; None otherwise (said if it is not so). An entry with
        no record rests on no answer; one with no ``sha256`` on an answer's status alone."""
        rid = entry.get("record")
        if rid is None:
            return None
        found = self._copy(rid)
        if found is None:
            self._fail(
                "decision", path, f"missing copy: its {what} record {rid} is nowhere", record
            )
            return None
        rid, copy = found
        if copy.error is not None:
            self._fail("decision", path, f"its {what} copy {rid} {copy.error}", record)
            return None
        said = entry.get("sha256")
        if said is None:
            return None
        if said != copy.sha256:
            self._fail(
                "decision",
                path,
                f"its {what} copy {rid} has SHA-256 {copy.sha256}, it says {said}",
                record,
            )
            return None
        return rid, copy

    def _copy(self, rid: Any) -> tuple[str, _Copy] | None:
        """The copy record ``rid`` and its id, a revisit followed to the answer it repeats."""
        for _ in range(_REVISIT_HOPS):
            copy = self.copies.get(rid) if isinstance(rid, str) else None
            if copy is None or copy.refers_to is None:
                return None if copy is None else (rid, copy)
            rid = copy.refers_to
        return None

    def _follows(
        self,
        info: _File,
        record: _Record,
        payload: dict[str, Any],
        robots: dict[str, Any],
        named: tuple[str, _Copy] | None,
    ) -> None:
        """Whether the decision follows from its robots.txt copy, re-derived today."""
        path = info.path
        decision = payload.get("decision")
        # Sent to the site: a response came, or the download failed after it went.
        downloaded = decision in ("downloaded", "failed")
        dropped = decision == "dropped" and payload.get("reason") == "disallowed"
        recorded = payload.get("allowed")
        outcome = robots.get("outcome")
        if outcome in ("allow_all", "disallow_all"):
            allowed = outcome == "allow_all"
            if (downloaded and not allowed) or (dropped and allowed):
                self._fail("decision", path, f"{decision}, but robots.txt says {outcome}", record)
            elif isinstance(recorded, bool) and recorded != allowed:
                self._fail("decision", path, f"allowed={recorded}, but it is {outcome}", record)
            return
        if outcome != "rules":
            self._fail("decision", path, f"unknown robots.txt outcome {outcome!r}", record)
            return
        if named is None:
            self._fail("decision", path, "it rests on robots.txt rules but names no copy", record)
            return
        if payload.get("query") == "hmac-sha256":
            if payload.get("query_read"):
                words = "robots.txt's answer read its query string, which the record keeps hashed"
                self.unverifiable.append(_problem("decision", path, words, record))
                return
            # Its answer does not read the query (the crawl checked): re-derived without it.
            payload = {**payload, "url": str(payload.get("url", "")).split("?", 1)[0]}
        try:
            url, tokens = payload["url"], payload["agent"]["tokens"]
            today = self._robots(*named).decide(url, tokens)
        except (KeyError, TypeError, ValueError) as exc:
            self._fail(
                "decision", path, f"cannot be re-derived: {type(exc).__name__}: {exc}", record
            )
            return
        rule = rule_fields(today.rule)
        verdict = "allows" if today.allowed else "disallows"
        said = f"today's parser {verdict} it ({_rule_words(rule)})"
        problems = []
        if downloaded and not today.allowed:
            problems.append(f"{decision}, but {said}")
        if dropped and today.allowed:
            problems.append(f"dropped as disallowed, but {said}")
        if isinstance(recorded, bool) and recorded != today.allowed and not problems:
            problems.append(f"recorded allowed={recorded}, but {said}")
        if problems:
            # Another version decided by its own parser: if the decision followed what that
            # parser answered, it is the parser that changed, not the crawl that erred.
            own = not ((downloaded and recorded is False) or (dropped and recorded is True))
            if self.software is not None and info.software != self.software and own:
                versions = f"written by {info.software}, checked with {self.software}"
                words = f"{'; '.join(problems)} ({versions})"
                self.notes.append(_problem("decision", path, words, record))
            else:
                self._fail("decision", path, "; ".join(problems), record)
        elif "rule" in payload and not _same_rule(payload["rule"], rule):
            words = f"same verdict, but it says {_rule_words(payload['rule'])}, {said}"
            self.notes.append(_problem("decision", path, words, record))

    def _robots(self, rid: str, copy: _Copy) -> RobotsTxt:
        robots = self.parsed.get(rid)
        if robots is None:
            record = _record_at(copy.file, copy.offset)
            robots = RobotsTxt.parse(_copy_of(copy.kind, record.block))
            self.parsed[rid] = robots
            if len(self.parsed) > _PARSED_KEPT:
                self.parsed.popitem(last=False)
        else:
            self.parsed.move_to_end(rid)
        return robots


def _same_rule(recorded: Any, today: dict[str, Any] | None) -> bool:
    if recorded is None or today is None:
        return recorded is None and today is None
    if not isinstance(recorded, dict):
        return False
    return all(recorded.get(key) == value for key, value in today.items())


def _problem(kind: Kind, path: Path, words: str, record: _Record | None) -> Problem:
    if record is None:
        return Problem(kind, path, words)
    return Problem(kind, path, words, record.rid, record.index, record.offset)


def _decision_payload(record: _Record) -> dict[str, Any] | None:
    """A decision record's payload, or None for any other record."""
    if record.kind != "metadata" or record.target.startswith(SEAL_URI):
        return None
    content_type = (record.header("Content-Type") or "").partition(";")[0].strip().lower()
    if content_type != "application/json":
        return None
    try:
        payload = json.loads(record.block)
    except ValueError:
        return None  # not a decision (its chain says whether it is as written)
    if isinstance(payload, dict) and "version" in payload and "decision" in payload:
        return payload
    return None

"""``RecordWriter``: one process's series of WARC 1.1 files in a record directory, written
through warcio in batches (the crawl queues records; ``flush`` writes them), each record
chained and each file sealed and listed in the directory's manifest (docs/record.md)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from io import BytesIO
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders
from warcio.utils import Digester
from warcio.warcwriter import WARCWriter

from scrapy_rep.storage.record._format import (
    CHAIN_HEADER,
    CHAIN_START,
    FILE_PREFIX,
    MANIFEST,
    SEAL_URI,
    chain_link,
    clean_url,
    warc_date,
)

__all__ = ["NEVER_RECORDED", "RecordWriter"]

logger = logging.getLogger(__name__)

#: Headers never written, in either direction: credentials and cookies.
NEVER_RECORDED = frozenset({b"set-cookie", b"cookie", b"authorization", b"proxy-authorization"})
#: A file is sealed and the next begun once it is this large.
FILE_LIMIT = 1 << 30
#: Records are written in batches of this many (or fewer, at ``flush``): at most this many
#: wait in memory. Written on the caller's thread: a writer thread contends with the reactor
#: for the GIL at every record (record on/off 0.80 with one, 0.87 without: benchmarks/README.md).
BATCH = 256


def _clean(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    return [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, value in headers
        if name.lower() not in NEVER_RECORDED
    ]


class _Writer(WARCWriter):  # type: ignore[misc]
    """warcio's writer with SHA-256 digests (its own are SHA-1)."""

    @staticmethod
    def _create_digester() -> Digester:
        return Digester("sha256")


class RecordWriter:
    """Writes this process's records into ``directory`` (made if missing). ``info``: the
    warcinfo fields each file starts with (versions, settings, User-Agent). Every method
    returns at once with the id of the record it queued; records are written in batches
    (``BATCH``, ``flush``, ``close``). One thread calls the methods (the crawl's)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        info: dict[str, Any],
        *,
        file_limit: int = FILE_LIMIT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        started = clock()
        self.run = uuid.uuid4().hex[:12]
        self._stem = f"{FILE_PREFIX}{datetime.fromtimestamp(started, timezone.utc):%Y%m%dT%H%M%S}"
        self._info = {**info, "run": self.run}
        self._file_limit = file_limit
        self._batch: list[tuple[Callable[..., None], tuple[Any, ...]]] = []
        # Version 4 and its variant kept: ids are UUIDs, unique by the count within a writer.
        self._id_stem = str(uuid.uuid4())[:24]
        self._issued = 0
        self._number = 0
        self._out: _Hashed | None = None
        self._writer: _Writer | None = None
        self._path: Path | None = None
        self._chain = CHAIN_START
        self._count = 0
        #: The files this writer sealed, in order.
        self.sealed: list[Path] = []
        #: Set when writing failed (the disk is full, the directory went away): said once.
        self.error: BaseException | None = None

    # -- what the crawl hands it ---------------------------------------------------------

    def answer(
        self,
        url: str,
        *,
        method: str,
        request_headers: Iterable[tuple[bytes, bytes]],
        status: int,
        headers: Iterable[tuple[bytes, bytes]],
        body: bytes,
        truncated: str | None,
        when: float,
    ) -> str:
        """An answer to one of scrapy-rep's fetches: a ``request`` and a ``response`` record
        (the body as received, ``truncated``: WARC-Truncated's reason if it was cut). Returns
        the response record's id."""
        answer_id, request_id = self._next_id(), self._next_id()
        sent, got = _clean(request_headers), _clean(headers)
        args = (url, method, sent, status, got, body, truncated, when, answer_id, request_id)
        self._put(self._answer, *args)
        return answer_id

    def revisit(
        self,
        url: str,
        *,
        first: tuple[str, str],
        status: int,
        headers: Iterable[tuple[bytes, bytes]],
        payload_digest: str,
        when: float,
    ) -> str:
        """An answer identical to an earlier one (``first``: its record id and WARC date): a
        ``revisit`` record (identical-payload-digest profile) with the answer's headers."""
        rid = self._next_id()
        self._put(self._revisit, url, first, status, _clean(headers), payload_digest, when, rid)
        return rid

    def no_answer(self, url: str, error: str, when: float) -> str:
        """A fetch that got no answer (timeout, DNS, reset): a ``metadata`` record."""
        payload = {"fetch": clean_url(url), "error": error}
        return self._json("metadata", url, payload, when)

    def copy(self, url: str, body: bytes, when: float, about: dict[str, Any]) -> str:
        """A copy this process did not fetch (read from the store: another process's fetch,
        or an earlier run's): a ``resource`` record of its bytes, ``about`` it in its
        ``WARC-Rep-Copy`` header (JSON)."""
        rid = self._next_id()
        extra = {"WARC-Rep-Copy": json.dumps(about, sort_keys=True)}
        self._put(self._plain, rid, "resource", url, "text/plain", body, when, extra)
        return rid

    def decision(self, url: str, payload: dict[str, Any], when: float) -> str:
        """One request's decision: a ``metadata`` record with its JSON ``payload``."""
        return self._json("metadata", url, payload, when)

    def flush(self) -> None:
        """Write what was queued (the crawl calls it every second: a record is on disk within
        a second or so; a crash loses at most that)."""
        batch, self._batch = self._batch, []
        for call, args in batch:
            self._guarded(self._record, call, args)
        if batch and self._out is not None:
            self._guarded(self._out.flush)

    def close(self) -> None:
        """Write what is queued, then seal the open file (may be called again)."""
        self.flush()
        self._guarded(self._seal, None)

    # -- writing ---------------------------------------------------------------------------

    def _json(self, kind: str, url: str, payload: dict[str, Any], when: float) -> str:
        # Serialised when its batch is written: ``payload`` is the caller's no more.
        rid = self._next_id()
        self._put(self._dumped, rid, kind, url, payload, when)
        return rid

    def _next_id(self) -> str:
        """A new WARC-Record-ID: the writer's random UUID's first 20 hex digits, then a count
        (cheaper than a ``uuid4`` per record, one per page)."""
        self._issued += 1
        return f"<urn:uuid:{self._id_stem}{self._issued:012x}>"

    def _dumped(
        self, writer: _Writer, rid: str, kind: str, url: str, payload: dict[str, Any], when: float
    ) -> None:
        body = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
        self._plain(writer, rid, kind, url, "application/json", body, when, {})

    def _put(self, call: Callable[..., None], *args: Any) -> None:
        self._batch.append((call, args))
        if len(self._batch) >= BATCH:
            self.flush()

    def _guarded(self, call: Callable[..., None], *args: Any) -> None:
        if self.error is not None:
            return
        try:
            call(*args)
        except Exception as exc:
            self.error = exc
            logger.error("The compliance record stopped: writing to %s failed: %s", self._path, exc)

    def _record(self, call: Callable[..., None], args: tuple[Any, ...]) -> None:
        """Write one queued record (``call`` with the open file's writer): a file is begun
        first if none is open, and sealed after it if it reached ``file_limit``."""
        call(self._open(), *args)
        if self._out is not None and self._out.size >= self._file_limit:
            self._seal(self._number + 1)

    def _open(self) -> _Writer:
        if self._writer is None:
            self._number += 1
            self._path = self.directory / f"{self._stem}-{self.run}-{self._number:04d}.warc.gz"
            self._out = _Hashed(open(self._path, "xb"))  # closed in _seal
            self._writer = _Writer(self._out, gzip=True, warc_version="1.1")
            self._chain, self._count = CHAIN_START, 0
            info = {**self._info, "file": self._path.name, "number": self._number}
            body = "".join(f"{name}: {value}\r\n" for name, value in info.items()).encode()
            record = self._writer.create_warc_record(
                "",
                "warcinfo",
                payload=BytesIO(body),
                length=len(body),
                warc_content_type="application/warc-fields",
                warc_headers_dict={"WARC-Filename": self._path.name},
            )
            self._write(record, body)
        return self._writer

    def _write(self, record: Any, block: bytes) -> None:
        assert self._writer is not None
        self._writer.ensure_digest(record, block=True, payload=record.http_headers is not None)
        # warcio adds Content-Type as it writes the record: the chain covers it, so set first.
        if record.content_type is not None:
            record.rec_headers.replace_header("Content-Type", record.content_type)
        headers = {name.lower(): value for name, value in record.rec_headers.headers}
        link = chain_link(self._chain, lambda name: headers.get(name.lower()), block)
        record.rec_headers.add_header(CHAIN_HEADER, link)
        self._writer.write_record(record)
        self._chain, self._count = link, self._count + 1

    def _headers(self, rid: str, when: float, extra: dict[str, str]) -> dict[str, str]:
        return {"WARC-Record-ID": rid, "WARC-Date": warc_date(when), **extra}

    def _answer(
        self,
        writer: _Writer,
        url: str,
        method: str,
        sent: list[tuple[str, str]],
        status: int,
        got: list[tuple[str, str]],
        body: bytes,
        truncated: str | None,
        when: float,
        answer_id: str,
        request_id: str,
    ) -> None:
        target = clean_url(url)
        extra = {"WARC-Truncated": truncated} if truncated else {}
        response_headers = StatusAndHeaders(f"{status} {_reason(status)}", got, "HTTP/1.1")
        response = writer.create_warc_record(
            target,
            "response",
            payload=BytesIO(body),
            length=len(body),
            http_headers=response_headers,
            warc_headers_dict={
                **self._headers(answer_id, when, extra),
                "WARC-Concurrent-To": request_id,
            },
        )
        response_headers.compute_headers_buffer()
        self._write(response, response_headers.headers_buff + body)
        parts = urlsplit(target)
        line = f"{method} {parts.path or '/'}{'?' + parts.query if parts.query else ''} HTTP/1.1"
        request_headers = StatusAndHeaders(line, sent, is_http_request=True)
        request = writer.create_warc_record(
            target,
            "request",
            payload=BytesIO(b""),
            length=0,
            http_headers=request_headers,
            warc_headers_dict={
                **self._headers(request_id, when, {}),
                "WARC-Concurrent-To": answer_id,
            },
        )
        request_headers.compute_headers_buffer()
        self._write(request, request_headers.headers_buff)

    def _revisit(
        self,
        writer: _Writer,
        url: str,
        first: tuple[str, str],
        status: int,
        got: list[tuple[str, str]],
        payload_digest: str,
        when: float,
        rid: str,
    ) -> None:
        target = clean_url(url)
        http_headers = StatusAndHeaders(f"{status} {_reason(status)}", got, "HTTP/1.1")
        record = writer.create_revisit_record(
            target,
            payload_digest,
            target,
            first[1],
            http_headers=http_headers,
            warc_headers_dict=self._headers(rid, when, {"WARC-Refers-To": first[0]}),
        )
        http_headers.compute_headers_buffer()
        self._write(record, http_headers.headers_buff)

    def _plain(
        self,
        writer: _Writer,
        rid: str,
        kind: str,
        url: str,
        content_type: str,
        body: bytes,
        when: float,
        extra: dict[str, str],
    ) -> None:
        record = writer.create_warc_record(
            clean_url(url),
            kind,
            payload=BytesIO(body),
            length=len(body),
            warc_content_type=content_type,
            warc_headers_dict=self._headers(rid, when, extra),
        )
        self._write(record, body)

    def _seal(self, following: int | None) -> None:
        """Close the open file with its seal record and list it in the manifest."""
        if self._writer is None or self._path is None or self._out is None:
            return
        when = self._clock()
        seal = {
            "version": 1,
            "file": self._path.name,
            "run": self.run,
            "records": self._count,
            "chain": self._chain,
            "continues": following is not None,
        }
        body = json.dumps(seal, sort_keys=True).encode()
        record = self._writer.create_warc_record(
            f"{SEAL_URI}:{self._path.name}",
            "metadata",
            payload=BytesIO(body),
            length=len(body),
            warc_content_type="application/json",
            warc_headers_dict=self._headers(self._next_id(), when, {}),
        )
        self._write(record, body)
        digest = self._out.close()
        line = {
            "file": self._path.name,
            "sha256": digest,
            "records": self._count,
            "chain": self._chain,
            "run": self.run,
            "sealed": warc_date(when),
        }
        # One short line, appended: the processes of a fleet sharing the directory append
        # whole lines (O_APPEND).
        with open(self.directory / MANIFEST, "a", encoding="utf-8") as manifest:
            manifest.write(json.dumps(line, sort_keys=True) + "\n")
        self.sealed.append(self._path)
        self._writer = self._out = None


class _Hashed:
    """A file being written, hashed as it is (its manifest line needs its SHA-256: not read
    back, up to ``FILE_LIMIT``, when it is sealed)."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self._digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self._digest.update(data)
        self.size += len(data)
        return self._file.write(data)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> str:
        """Close the file; its SHA-256, in hex."""
        self._file.close()
        return self._digest.hexdigest()


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"

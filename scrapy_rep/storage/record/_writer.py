"""``RecordWriter``: one process's series of WARC 1.1 files in a record directory, written
through warcio on a thread of its own (the crawl only queues records), each record chained and
each file sealed and listed in the directory's manifest (docs/record.md)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from io import BytesIO
from pathlib import Path
from typing import Any
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

__all__ = ["NEVER_RECORDED", "RecordWriter", "record_id"]

logger = logging.getLogger(__name__)

#: Headers never written, in either direction: credentials and cookies.
NEVER_RECORDED = frozenset({b"set-cookie", b"cookie", b"authorization", b"proxy-authorization"})
#: A file is sealed and the next begun once it is this large.
FILE_LIMIT = 1 << 30
#: Records waiting for the writer thread at most: beyond, the crawl waits for it (memory stays
#: bounded; at a few hundred bytes a decision, about 10 MB).
QUEUE_LIMIT = 20_000

_STOP = object()


def record_id() -> str:
    """A new WARC-Record-ID."""
    return f"<urn:uuid:{uuid.uuid4()}>"


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
    returns at once with the id of the record it queued."""

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
        self._queue: queue.Queue[Any] = queue.Queue(QUEUE_LIMIT)
        self._number = 0
        self._out: Any = None
        self._writer: _Writer | None = None
        self._path: Path | None = None
        self._chain = CHAIN_START
        self._count = 0
        #: The files this writer sealed, in order.
        self.sealed: list[Path] = []
        #: Set when writing failed (the disk is full, the directory went away): said once.
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="scrapy-rep record", daemon=True)
        self._thread.start()

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
        answer_id, request_id = record_id(), record_id()
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
        rid = record_id()
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
        rid = record_id()
        extra = {"WARC-Rep-Copy": json.dumps(about, sort_keys=True)}
        self._put(self._plain, rid, "resource", url, "text/plain", body, when, extra)
        return rid

    def decision(self, url: str, payload: dict[str, Any], when: float) -> str:
        """One request's decision: a ``metadata`` record with its JSON ``payload``."""
        return self._json("metadata", url, payload, when)

    def close(self) -> None:
        """Seal the open file and stop the thread (waits for what is queued)."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()

    # -- the thread ------------------------------------------------------------------------

    def _json(self, kind: str, url: str, payload: dict[str, Any], when: float) -> str:
        rid = record_id()
        body = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
        self._put(self._plain, rid, kind, url, "application/json", body, when, {})
        return rid

    def _put(self, call: Callable[..., None], *args: Any) -> None:
        self._queue.put((call, args))

    def _run(self) -> None:
        while (item := self._queue.get()) is not _STOP:
            call, args = item
            self._guarded(call, *args)
        self._guarded(self._seal, None)

    def _guarded(self, call: Callable[..., None], *args: Any) -> None:
        if self.error is not None:
            return
        try:
            call(*args)
        except Exception as exc:
            self.error = exc
            logger.error("The compliance record stopped: writing to %s failed: %s", self._path, exc)

    def _open(self) -> _Writer:
        if self._writer is None:
            self._number += 1
            self._path = self.directory / f"{self._stem}-{self.run}-{self._number:04d}.warc.gz"
            self._out = open(self._path, "xb")
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
        link = chain_link(self._chain, record.rec_headers.get_header, block)
        record.rec_headers.add_header(CHAIN_HEADER, link)
        self._writer.write_record(record)
        self._chain, self._count = link, self._count + 1

    def _headers(self, rid: str, when: float, extra: dict[str, str]) -> dict[str, str]:
        return {"WARC-Record-ID": rid, "WARC-Date": warc_date(when), **extra}

    def _answer(
        self,
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
        writer = self._open()
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
        self._rotate()

    def _revisit(
        self,
        url: str,
        first: tuple[str, str],
        status: int,
        got: list[tuple[str, str]],
        payload_digest: str,
        when: float,
        rid: str,
    ) -> None:
        writer = self._open()
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
        self._rotate()

    def _plain(
        self,
        rid: str,
        kind: str,
        url: str,
        content_type: str,
        body: bytes,
        when: float,
        extra: dict[str, str],
    ) -> None:
        writer = self._open()
        record = writer.create_warc_record(
            clean_url(url),
            kind,
            payload=BytesIO(body),
            length=len(body),
            warc_content_type=content_type,
            warc_headers_dict=self._headers(rid, when, extra),
        )
        self._write(record, body)
        self._rotate()

    def _rotate(self) -> None:
        if self._out is not None and self._out.tell() >= self._file_limit:
            self._seal(self._number + 1)

    def _seal(self, following: int | None) -> None:
        """Close the open file with its seal record and list it in the manifest."""
        if self._writer is None or self._path is None:
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
            warc_headers_dict=self._headers(record_id(), when, {}),
        )
        self._write(record, body)
        self._out.close()
        digest = hashlib.sha256(self._path.read_bytes()).hexdigest()
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


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"

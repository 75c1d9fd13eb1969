"""``Recorder``: what the crawl decided, handed to the compliance record (REP_RECORD,
docs/record.md). The fetcher hands it each answer to a robots.txt or usage-document fetch, the
cache each copy a state is read from, the admission each verdict (a downloaded page's bound
verdict, a drop's ``Why``); it writes them down through ``storage.record.RecordWriter`` and
reads no origin state itself."""

from __future__ import annotations

import hashlib
import hmac
import json
import platform
import time
import weakref
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit, urlunsplit

import scrapy
from scrapy.http import Request, Response
from twisted.internet import task

from scrapy_rep import __version__
from scrapy_rep.core.settings import SETTINGS
from scrapy_rep.crawl._verdict import response_rules, rests_on
from scrapy_rep.crawl.guard_middleware import is_fetch
from scrapy_rep.storage.record._format import HASHED_QUERY, clean_url, warc_date, warc_digest

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from scrapy_rep.core.clock import Clock
    from scrapy_rep.core.policy import Entry
    from scrapy_rep.crawl._cache import OriginState
    from scrapy_rep.crawl._events import Why
    from scrapy_rep.storage.record import RecordWriter

__all__ = ["Recorder", "open_recorder", "require_warcio"]

#: A page's response headers that bear on what may be done with it (SPEC E, F).
_PAGE_HEADERS = (b"X-Robots-Tag", b"Content-Usage", b"tdm-reservation", b"tdm-policy")


def require_warcio() -> None:
    """ValueError saying what to install when warcio, which the record needs, is missing."""
    try:
        import warcio  # noqa: F401
    except ImportError as exc:
        raise ValueError(
            f"REP_RECORD needs warcio ({exc}): pip install 'scrapy-rep[record]', or remove "
            "REP_RECORD"
        ) from None


def open_recorder(
    settings: BaseSettings,
    directory: str,
    query_key: str | None,
    tokens_for: Callable[[bytes | None], Sequence[str]],
    account: Callable[..., dict[str, Any]],
    judged: Callable[[Request], tuple[OriginState[Any], Any] | None],
    purposes: Sequence[str],
    scheduler: Clock,
) -> Recorder:
    """The recorder writing into ``directory`` (``require_warcio`` first)."""
    from scrapy_rep.storage.record import RecordWriter

    # What bears on decisions: every REP_* setting as the crawl reads it, and the User-Agent.
    bearing = (*SETTINGS, "ROBOTSTXT_USER_AGENT", "ROBOTSTXT_PARSER")
    chosen = {name: _shown(settings.get(name)) for name in bearing if name in settings}
    info = {
        "software": f"scrapy-rep {__version__}",
        "scrapy": scrapy.__version__,
        "python": platform.python_version(),
        "user-agent": settings.get("USER_AGENT"),
        "tokens": " ".join(tokens_for(None)),
        "settings": json.dumps(chosen, sort_keys=True),
        "format": "https://github.com/scrapy-rep/scrapy-rep/blob/main/docs/record.md",
        "query": "hmac-sha256" if query_key else "as is",
    }
    writer = RecordWriter(directory, info)
    return Recorder(writer, account, judged, purposes, scheduler, query_key=query_key)


class Recorder:
    def __init__(
        self,
        writer: RecordWriter,
        account: Callable[..., dict[str, Any]],
        judged: Callable[[Request], tuple[OriginState[Any], Any] | None],
        purposes: Sequence[str],
        scheduler: Clock,
        clock: Callable[[], float] = time.time,
        *,
        query_key: str | None = None,
    ) -> None:
        """``account(state, request, known, query_hidden=…)``: what the verdict by ``state``
        rests on and says (``Verdicts.account``); ``judged(request)``: the states the
        admission let ``request`` go with; ``scheduler``: the crawl's clock, for the writer's
        batches; ``clock``: the wall clock of the records' dates; ``query_key``: a secret, to
        keep query strings as their HMAC-SHA256. ``waited(request)``: what it waited for in
        the waiting room (set once the room exists)."""
        self.waited: Callable[[Request], tuple[str, float] | None] = lambda request: None
        self.writer = writer
        self._account = account
        self._judged = judged
        self._purposes = list(purposes)
        self._clock = clock
        self._key = None if query_key is None else query_key.encode()
        # The first record of each distinct answer (URL, status, payload digest): id, date.
        self._firsts: dict[tuple[str, int, str], tuple[str, str]] = {}
        # Copies this process did not fetch, written once: (URL, SHA-256) -> record id.
        self._copies: dict[tuple[str, str], str] = {}
        # One decision per request per run.
        self._decided: weakref.WeakSet[Request] = weakref.WeakSet()
        # Records are written in batches: at most a second late.
        self._flush = task.LoopingCall(writer.flush)
        self._flush.clock = cast(Any, scheduler)
        self._flush.start(1.0, now=False)

    # -- the fetcher's answers --------------------------------------------------------------

    def answered(self, sent: Request, raw: Response) -> str:
        """One answer to a fetch (a redirect hop too): ``raw`` as the guard got it, before
        content decoding; ``sent`` the request as it left (its headers). An answer identical
        to an earlier one (same URL, status and body) is a revisit of it."""
        now = self._clock()
        digest = warc_digest(raw.body)
        key = (raw.url, raw.status, digest)
        first = self._firsts.get(key)
        headers = _pairs(raw.headers)
        if first is not None:
            return self.writer.revisit(
                raw.url,
                first=first,
                status=raw.status,
                headers=headers,
                payload_digest=digest,
                when=now,
            )
        truncated = "length" if "download_stopped" in raw.flags else None
        rid = self.writer.answer(
            raw.url,
            method=sent.method,
            request_headers=_pairs(sent.headers),
            status=raw.status,
            headers=headers,
            body=raw.body,
            truncated=truncated,
            when=now,
        )
        self._firsts[key] = (rid, warc_date(now))
        return rid

    def failed(self, url: str, error: str) -> str:
        """A fetch of ``url`` that got no answer."""
        return self.writer.no_answer(url, error, self._clock())

    # -- the cache's copies -----------------------------------------------------------------

    def evidence(self, url: str, entry: Entry, body: bytes | None) -> dict[str, Any]:
        """What a state read from ``body`` (its good copy; None: no copy) rests on: the record
        of the answer it was read from, which the entry names (written by this process, or
        by the fleet's member or the earlier run that fetched it); for a copy whose entry
        names none (a store written without a record), a record of the copy, written once."""
        good = entry.good
        if body is None:
            served = good if good is not None and good.outcome == "no_robots" else entry
            return {"url": url, "record": served.record, "sha256": None, "status": served.status}
        sha = hashlib.sha256(body).hexdigest()
        status = good.status if good is not None else entry.status
        record = good.record if good is not None else None
        if record is None:
            record = self._copies.get((url, sha))
        if record is None:
            about = {
                "url": url,
                "fetched_at": good.fetched_at if good is not None else entry.fetched_at,
                "status": status,
                "source": "store",
            }
            record = self._copies[url, sha] = self.writer.copy(url, body, self._clock(), about)
        return {"url": url, "record": record, "sha256": sha, "status": status}

    # -- decisions --------------------------------------------------------------------------

    def downloaded(self, response: Response, request: Request, spider: Any = None) -> None:
        """``response_received``: a page the crawl downloaded (or the HTTP cache replayed)."""
        if is_fetch(request) or request in self._decided:
            return
        judged = self._judged(request)
        state, known = judged if judged is not None else (None, ())
        payload = self._payload(request, "downloaded", state, known)
        if judged is not None:
            payload["documents"] = [
                {"document": document.name, **rests_on(document_state)}
                for document, document_state in known
            ]
        payload["page"] = {
            "status": response.status,
            "headers": {
                name.decode(): [v.decode("latin-1") for v in response.headers.getlist(name)]
                for name in _PAGE_HEADERS
                if name in response.headers
            },
            "cached": "cached" in response.flags,
            "redirects": [self._url(url) for url in request.meta.get("redirect_urls", ())],
        }
        if payload["judged"]:
            # What the page itself says (X-Robots-Tag, robots meta tags), as the page level
            # reads it for the same tokens.
            tokens = payload["agent"]["tokens"]
            rules = response_rules(response, tokens, datetime.now(timezone.utc))
            payload["page"]["rules"] = rules.to_dict()
        if (waited := self.waited(request)) is not None:
            payload["waited"] = {"for": waited[0], "seconds": round(waited[1], 3)}
        self._write(request, payload)

    def dropped(self, request: Request, why: Why, *, kept: bool = False) -> None:
        """A request the crawl dropped, with why (``kept``: put aside for the job's next
        run instead)."""
        if request in self._decided:
            return
        payload = self._payload(request, "kept" if kept else "dropped", why.judged)
        payload["reason"] = why.reason
        payload["why"] = why.summary()
        self._write(request, payload)

    def failed_download(self, request: Request, error: Exception) -> None:
        """A request that left the downloader with ``error`` and no retry (a refusal by this
        crawl is recorded as a drop already)."""
        if is_fetch(request) or request in self._decided:
            return
        judged = self._judged(request)
        state, known = judged if judged is not None else (None, ())
        payload = self._payload(request, "failed", state, known)
        payload["why"] = f"{type(error).__name__}: {error}"[:500]
        self._write(request, payload)

    def close(self) -> None:
        """Write what is queued and seal the open file."""
        if self._flush.running:
            self._flush.stop()
        self.writer.close()

    def _payload(
        self, request: Request, decision: str, state: OriginState[Any] | None, known: Any = ()
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "version": 1,
            "url": self._url(request.url),
            "method": request.method,
            "decision": decision,
            "time": warc_date(self._clock()),
            "judged": not request.meta.get("dont_obey_robotstxt"),
        }
        if not payload["judged"]:
            return payload
        payload["purposes"] = self._purposes
        hidden = payload["url"] != clean_url(request.url)
        if hidden:
            payload["query"] = "hmac-sha256"
        payload.update(self._account(state, request, known, query_hidden=hidden))
        return payload

    def _url(self, url: str) -> str:
        """``url`` as the record writes it: without credentials, its query string as its
        HMAC-SHA256 under the key when there is one."""
        url = clean_url(url)
        if self._key is None:
            return url
        parts = urlsplit(url)
        if not parts.query:
            return url
        digest = hmac.new(self._key, parts.query.encode(), hashlib.sha256).hexdigest()
        query = f"{HASHED_QUERY}{digest}"
        return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))

    def _write(self, request: Request, payload: dict[str, Any]) -> None:
        self._decided.add(request)
        self.writer.decision(payload["url"], payload, self._clock())


def _pairs(headers: Any) -> list[tuple[bytes, bytes]]:
    return [(bytes(name), bytes(value)) for name, values in headers.items() for value in values]


def _shown(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_shown(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _shown(item) for key, item in value.items()}
    return str(value)

"""Real servers on 127.0.0.1 for integration tests: scripted HTTP(S), FTP, closed ports.

Everything here runs in the pytest process, in threads; the crawl itself runs in a
subprocess (see ``tests/_crawl.py``), so the servers never share a reactor with Scrapy.
``tests/`` has no ``__init__.py``: pytest puts it on ``sys.path``, so import with
``from _servers import Reply, ScriptedServer`` and ``from _crawl import run_crawl``.

Fixtures (``tests/conftest.py``): ``http_server``, ``http_server2`` (same host, another port),
``https_server``, ``server_factory`` (``server_factory(tls=False)`` → one more server, e.g. 20
origins), ``ftp_server``, ``unused_port``. All are closed at the end of the test.

HTTP / HTTPS — :class:`ScriptedServer`
---------------------------------------
``ScriptedServer.start(tls=False)`` listens on a free port of 127.0.0.1 (HTTP/1.1, keep-alive,
one thread per connection). ``tls=True`` serves HTTPS with a self-signed certificate made at
test time with ``cryptography`` for ``localhost``, ``127.0.0.1`` and ``*.test`` (Scrapy does not
verify certificates by default). Use the ``http_server`` / ``https_server`` / ``server_factory``
fixtures from ``tests/conftest.py`` rather than starting servers by hand.

    srv.origin                   "http://127.0.0.1:PORT"
    srv.url("/page/1")           absolute URL on this server
    srv.url("/x", host="xn--mller-kva.test")   same port, other host name (see IDN below)

Answers are scripted per path (exact path incl. query first, then the path without query):

    srv.route("/robots.txt", Reply(200, b"User-agent: *\\nDisallow: /private"))
    srv.route("/robots.txt", Reply(500), Reply(200, body))   # a sequence; the last one repeats
    srv.robots("User-agent: *\\nDisallow: /p")                # shortcut: 200 text/plain
    srv.route("/r", Reply.redirect("/robots2.txt"))           # 301; or a full URL (other server)
        # a Location starting with "/" is made absolute on this server; any other value is
        # sent as given (file:///…, data:…, http://[::1 …)
    srv.redirect_chain("/robots.txt", 5, final=Reply(200, body))
        # 5 redirects: /robots.txt -> /redirect/1 -> ... -> /redirect/4 -> /redirect/final;
        # target=other.url("/x") ends the chain on another server (route "/x" there yourself)

:class:`Reply` fields (all optional): ``status`` (200), ``body`` (bytes or str), ``headers``,
``gzip`` (send the body gzip-compressed with ``Content-Encoding: gzip``), ``delay`` (seconds to
wait server-side before answering), ``release`` (a ``threading.Event``: do not answer until it
is set), ``hang`` (never answer; the connection stays open until the server closes — the client
times out), ``reset`` (abort the connection with a TCP RST, no answer), ``chunk_size`` (stream
the body in chunks of that size with flushes and a send buffer of that size, recording the
bytes actually sent before the client hung up; ``chunk_delay`` paces the chunks, so a client
that stops reading early is visible in ``bytes_sent``), ``truncate_at`` (announce the full
Content-Length, send only that many body bytes, then close: a broken response).
``Reply.retry_after(429, 1)`` adds ``Retry-After``; ``Reply.text(body, ...)`` is text/plain.
A ``headers`` value may be a list: one header line per value (``{"X-Robots-Tag": ["a", "b"]}``).

Paths with no route: ``/page/...`` (and ``/`` ) answer 200 HTML whose body links to the URLs
set with ``srv.links("/page/1", [...])`` (relative or absolute); anything else is 404 —
including ``/robots.txt`` until routed. ``srv.outage(Reply(503))`` answers every ``/page/``
path (routes included) with that reply until ``srv.outage(None)``. A header value may be a
callable, asked when the answer is sent (``{"Retry-After": lambda: http_date(4)}``).

Everything the server sees is recorded as :class:`Seen` (``method``, ``path``, ``headers``
(lower-case names), ``time`` (``time.monotonic()``), and after the answer ``status``,
``bytes_sent`` (body bytes written), ``finished`` (monotonic time the answer ended or the
client went away), ``client_closed`` (the client hung up mid-body)).

    srv.requests                 list[Seen], in arrival order (a copy)
    srv.seen("/page/", prefix=True)   those whose path matches
    srv.count("/robots.txt")     how many
    srv.paths()                  list of paths, arrival order
    srv.wait_for("/robots.txt", count=1, timeout=10) -> bool          arrivals
    srv.wait_for("/robots.txt", finished=True) -> bool   answers completed (or client gone)
    srv.wait_until(predicate, timeout) -> bool   any condition over the server, re-checked on
                                                 every recorded event (threading.Condition;
                                                 no polling)
    srv.when(predicate, action, timeout) -> Trigger   run ``action`` in a thread once
        ``predicate`` holds (or after ``timeout`` anyway); ``trigger.condition_met``,
        ``trigger.fired_at``. E.g. release A's robots.txt once B served 3 pages:
        ``b.when(lambda: b.count("/page/", prefix=True) >= 3, release.set, timeout=3)``

Forward proxy — :class:`ForwardProxy`
-------------------------------------
``ForwardProxy.start(credentials=None)``: an HTTP forward proxy on 127.0.0.1 (absolute-URI
requests, as Scrapy sends ``http://`` URLs to a proxy; no CONNECT). It relays each request to
its origin, adding ``Via: 1.1 test-proxy`` (so an origin server can tell proxied requests from
direct ones), and records what it relayed in ``proxy.requests`` (``Seen.path`` is the absolute
URL). ``credentials="user:pass"``: requests without that Basic ``Proxy-Authorization`` get 407.
``proxy.fail_with(Reply(...))``: answer everything with that reply instead (the proxy's own
failure). ``proxy.proxy_url`` is the value for ``meta["proxy"]``, and
``proxy.url_with_credentials()`` the same with ``user:pass@``.

FTP — :class:`FtpServer`
------------------------
pyftpdlib in a thread, anonymous read-only on a temporary directory: ``ftp.write("robots.txt",
b"...")``, ``ftp.url("/file.txt")`` → ``ftp://127.0.0.1:PORT/file.txt``, ``ftp.retrieved`` /
``ftp.wait_for("/robots.txt")`` record RETR commands (file served or not). Fixture: ``ftp_server``.

Unreachable origins — :func:`closed_port`
-----------------------------------------
A context manager yielding a port bound on 127.0.0.1 but not listening, so connecting is
refused; the port stays reserved (no other process gets it) until the block ends.
Fixture: ``unused_port`` (an int).

IDN hosts — how the IDN test maps a host to 127.0.0.1
-----------------------------------------------------
Scrapy resolves host names through the resolver class named by its ``DNS_RESOLVER`` setting
(``TWISTED_DNS_RESOLVER`` in newer Scrapy, which deprecates the old name; the crawl subprocess
picks whichever the running Scrapy has). ``tests/_resolver.py`` has
``MappedResolver``, a subclass of Scrapy's ``CachingThreadedResolver`` that answers names from
the ``TEST_HOSTS`` setting (``{"müller.test": "127.0.0.1"}``; keys may be Unicode or punycode,
they are compared in their IDNA/punycode form, case-insensitively) and everything else as
usual. ``run_crawl(..., hosts={"müller.test": "127.0.0.1"})`` sets both settings, so
``http://müller.test:PORT/`` and ``http://xn--mller-kva.test:PORT/`` reach the local server
(Scrapy turns the Unicode URL into punycode; the server sees ``Host: xn--mller-kva.test:PORT``).
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import gzip as _gzip
import http.client
import http.server
import ipaddress
import shutil
import socket
import ssl
import struct
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urljoin, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

with warnings.catch_warnings():
    # pyftpdlib imports asyncore/asynchat, deprecated on Python 3.11 (it vendors them on 3.12+).
    warnings.simplefilter("ignore", DeprecationWarning)
    from pyftpdlib.authorizers import DummyAuthorizer  # type: ignore[import-untyped]
    from pyftpdlib.handlers import FTPHandler  # type: ignore[import-untyped]
    from pyftpdlib.servers import FTPServer  # type: ignore[import-untyped]

HOST = "127.0.0.1"


@dataclass(frozen=True)
class Reply:
    """One scripted answer. See the module docstring for the meaning of each field."""

    status: int = 200
    body: bytes | str = b""
    headers: Mapping[str, str | Sequence[str] | Callable[[], str]] = field(default_factory=dict)
    gzip: bool = False
    delay: float = 0.0
    release: threading.Event | None = None
    hang: bool = False
    reset: bool = False
    chunk_size: int | None = None
    chunk_delay: float = 0.0
    truncate_at: int | None = None

    @classmethod
    def redirect(cls, location: str, status: int = 301) -> Reply:
        return cls(status, headers={"Location": location})

    @classmethod
    def retry_after(cls, status: int, seconds: int) -> Reply:
        return cls(status, headers={"Retry-After": str(seconds)})

    @classmethod
    def text(cls, body: bytes | str, status: int = 200, **kwargs: Any) -> Reply:
        headers = {"Content-Type": "text/plain", **kwargs.pop("headers", {})}
        return cls(status, body, headers=headers, **kwargs)


@dataclass
class Seen:
    """A request as the server saw it, completed with what was sent back."""

    method: str
    path: str
    headers: dict[str, str]
    time: float
    status: int | None = None
    bytes_sent: int = 0
    finished: float | None = None
    client_closed: bool = False
    #: When the answer began to be written: the client cannot have it earlier.
    answered: float | None = None


@dataclass
class Trigger:
    """Outcome of :meth:`ScriptedServer.when`."""

    condition_met: bool = False
    fired_at: float | None = None
    fired: threading.Event = field(default_factory=threading.Event)


def html_page(title: str, links: list[str]) -> bytes:
    anchors = "".join(f'<a href="{link}">{link}</a>\n' for link in links)
    return f"<html><head><title>{title}</title></head><body>\n{anchors}</body></html>".encode()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request stderr line."""

    def do_GET(self) -> None:
        self.server.owner._handle(self)

    do_HEAD = do_GET
    do_POST = do_GET
    do_PUT = do_GET
    do_DELETE = do_GET


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128

    def __init__(self, owner: ScriptedServer, tls: ssl.SSLContext | None) -> None:
        self.owner = owner
        self.tls = tls
        super().__init__((HOST, 0), _Handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        # TLS handshake in the connection's own thread, not in the accept loop.
        if self.tls is not None:
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except (OSError, ssl.SSLError):
                return
            self.owner._track(request)
        super().finish_request(request, client_address)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.owner._track(request)
        super().process_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up mid-answer are expected; don't print tracebacks."""


class ScriptedServer:
    """A recording, scriptable HTTP or HTTPS server on 127.0.0.1 (see the module docstring)."""

    def __init__(self, tls: bool = False) -> None:
        self.tls = tls
        self.scheme = "https" if tls else "http"
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._routes: dict[str, list[Reply]] = {}
        self._outage: tuple[str, Reply] | None = None
        self._links: dict[str, list[str]] = {}
        self._seen: list[Seen] = []
        self._sockets: list[socket.socket] = []
        self._httpd = _HTTPServer(self, _server_tls_context() if tls else None)
        self.port: int = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @classmethod
    def start(cls, tls: bool = False) -> ScriptedServer:
        server = cls(tls)
        server._thread.start()
        return server

    def close(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._cond:
            sockets, self._sockets = self._sockets, []
            self._cond.notify_all()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- addresses -----------------------------------------------------------------------

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{HOST}:{self.port}"

    def url(self, path: str = "/", host: str = HOST) -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    # -- script --------------------------------------------------------------------------

    def route(self, path: str, *replies: Reply) -> None:
        """Answer ``path`` with ``replies`` in turn; the last one repeats forever."""
        if not replies:
            raise ValueError("route() needs at least one Reply")
        with self._cond:
            self._routes[path] = list(replies)

    def robots(self, body: bytes | str, **kwargs: Any) -> None:
        self.route("/robots.txt", Reply.text(body, **kwargs))

    def links(self, path: str, links: list[str]) -> None:
        """Make the default HTML page at ``path`` link to ``links``."""
        with self._cond:
            self._links[path] = list(links)

    def redirect_chain(
        self, path: str, hops: int, final: Reply, *, status: int = 301, target: str | None = None
    ) -> list[str]:
        """``path`` redirects ``hops`` times (via /redirect/1..hops) before ``final``.

        ``final`` is served at ``target`` (default ``/redirect/final``), which may be a full URL
        of another server (then route ``final`` there yourself). Returns the chain of paths."""
        chain = [f"/redirect/{i}" for i in range(1, hops)]
        last = target or "/redirect/final"
        hops_to = [*chain, last]
        self.route(path, Reply.redirect(hops_to[0], status))
        for here, there in zip(chain, hops_to[1:], strict=True):
            self.route(here, Reply.redirect(there, status))
        if target is None or target.startswith("/"):
            self.route(last, final)
        return [path, *hops_to]

    def outage(self, reply: Reply | None, prefix: str = "/page/") -> None:
        """Answer every path under ``prefix`` with ``reply`` (routes included) until called
        again with None."""
        with self._cond:
            self._outage = None if reply is None else (prefix, reply)

    def _next_reply(self, path: str) -> Reply | None:
        with self._cond:
            if self._outage is not None and path.startswith(self._outage[0]):
                return self._outage[1]
            replies = self._routes.get(path) or self._routes.get(path.split("?", 1)[0])
            if not replies:
                return None
            return replies.pop(0) if len(replies) > 1 else replies[0]

    def _default_reply(self, path: str) -> Reply:
        bare = path.split("?", 1)[0]
        if bare == "/" or bare.startswith("/page/"):
            with self._cond:
                links = self._links.get(path, self._links.get(bare, []))
            return Reply(200, html_page(bare, links), headers={"Content-Type": "text/html"})
        return Reply(404, b"not found", headers={"Content-Type": "text/plain"})

    # -- records -------------------------------------------------------------------------

    @property
    def requests(self) -> list[Seen]:
        with self._cond:
            return list(self._seen)

    def seen(self, path: str, *, prefix: bool = False) -> list[Seen]:
        with self._cond:
            return [s for s in self._seen if _matches(s.path, path, prefix)]

    def count(self, path: str, *, prefix: bool = False) -> int:
        return len(self.seen(path, prefix=prefix))

    def paths(self) -> list[str]:
        with self._cond:
            return [s.path for s in self._seen]

    def wait_until(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        """Block until ``predicate()`` is true (re-checked on every recorded event)."""
        with self._cond:
            return self._cond.wait_for(predicate, timeout)

    def wait_for(
        self,
        path: str,
        count: int = 1,
        timeout: float = 10.0,
        *,
        prefix: bool = False,
        finished: bool = False,
    ) -> bool:
        """Wait until ``count`` requests for ``path`` arrived (or were answered, ``finished``)."""

        def ready() -> bool:
            hits = [s for s in self._seen if _matches(s.path, path, prefix)]
            if finished:
                hits = [s for s in hits if s.finished is not None]
            return len(hits) >= count

        return self.wait_until(ready, timeout)

    def when(
        self, predicate: Callable[[], bool], action: Callable[[], object], timeout: float
    ) -> Trigger:
        """Run ``action`` (in a thread) once ``predicate()`` holds, or after ``timeout`` s anyway.

        ``predicate`` is re-checked on this server's events. The returned :class:`Trigger` says
        whether the condition was met (``condition_met``) and when the action ran (``fired_at``).
        Nothing runs if the server closes first."""
        trigger = Trigger()

        def run() -> None:
            met = self.wait_until(lambda: self._stopping.is_set() or predicate(), timeout)
            if self._stopping.is_set():
                return
            trigger.condition_met = met
            trigger.fired_at = time.monotonic()
            action()
            trigger.fired.set()

        threading.Thread(target=run, daemon=True).start()
        return trigger

    def notify(self) -> None:
        """Wake every waiter so it re-checks its predicate (e.g. after a crawl ended)."""
        with self._cond:
            self._cond.notify_all()

    def _record(self, seen: Seen) -> None:
        with self._cond:
            self._seen.append(seen)
            self._cond.notify_all()

    def _finish(self, seen: Seen, client_closed: bool = False) -> None:
        with self._cond:
            seen.finished = time.monotonic()
            seen.client_closed = client_closed
            self._cond.notify_all()

    def _track(self, sock: socket.socket) -> None:
        with self._cond:
            self._sockets.append(sock)
            if len(self._sockets) > 512:
                self._sockets = [s for s in self._sockets if s.fileno() != -1]

    # -- answering -----------------------------------------------------------------------

    def _arrived(self, h: _Handler) -> Seen:
        """Record the request ``h`` holds (its body read and discarded)."""
        length = int(h.headers.get("Content-Length") or 0)
        if length:
            h.rfile.read(length)
        seen = Seen(
            method=h.command,
            path=h.path,
            headers={k.lower(): v for k, v in h.headers.items()},
            time=time.monotonic(),
        )
        self._record(seen)
        return seen

    def _handle(self, h: _Handler) -> None:
        seen = self._arrived(h)
        reply = self._next_reply(h.path) or self._default_reply(h.path)
        try:
            self._answer(h, reply, seen)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            h.close_connection = True
            self._finish(seen, client_closed=True)
        else:
            self._finish(seen)

    def _answer(self, h: _Handler, reply: Reply, seen: Seen) -> None:
        if reply.delay and self._stopping.wait(reply.delay):
            return self._abort(h)
        if reply.release is not None:
            while not reply.release.wait(0.05):
                if self._stopping.is_set():
                    return self._abort(h)
        if reply.hang:
            self._stopping.wait()
            return self._abort(h)
        if reply.reset:
            return self._abort(h)
        body = reply.body.encode() if isinstance(reply.body, str) else reply.body
        headers = dict(reply.headers)
        if reply.gzip:
            body = _gzip.compress(body)
            headers["Content-Encoding"] = "gzip"
        headers.setdefault("Content-Type", "text/html")
        if headers.get("Location", "").startswith("/"):
            headers["Location"] = urljoin(self.url(seen.path), headers["Location"])
        seen.status = reply.status
        seen.answered = time.monotonic()
        h.send_response(reply.status)
        for name, value in headers.items():
            # A callable is asked at answer time (a Retry-After date relative to now); a list
            # sends one header line per value (e.g. several X-Robots-Tag).
            if callable(value):
                value = value()
            for line in [value] if isinstance(value, str) else value:
                h.send_header(name, line)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if h.command == "HEAD":
            return None
        if reply.truncate_at is not None:
            h.wfile.write(body[: reply.truncate_at])
            seen.bytes_sent = min(len(body), reply.truncate_at)
            h.wfile.flush()
            return self._abort(h, rst=False)
        step = reply.chunk_size or len(body) or 1
        if reply.chunk_size:
            # A small send buffer keeps bytes_sent close to what the client really took.
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, reply.chunk_size)
        for start in range(0, len(body), step):
            if start and reply.chunk_delay and self._stopping.wait(reply.chunk_delay):
                return self._abort(h)
            chunk = body[start : start + step]
            h.wfile.write(chunk)
            h.wfile.flush()
            seen.bytes_sent += len(chunk)
        return None

    def _abort(self, h: _Handler, rst: bool = True) -> None:
        h.close_connection = True
        conn = h.connection
        with contextlib.suppress(OSError):
            if rst:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()


class ForwardProxy(ScriptedServer):
    """An HTTP forward proxy that relays to the origin (see the module docstring)."""

    def __init__(self, credentials: str | None = None) -> None:
        super().__init__()
        self.credentials = credentials
        self._failure: Reply | None = None

    @classmethod
    def start(cls, tls: bool = False, credentials: str | None = None) -> ForwardProxy:
        proxy = cls(credentials)
        proxy._thread.start()
        return proxy

    @property
    def proxy_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def url_with_credentials(self) -> str:
        return f"http://{self.credentials}@{HOST}:{self.port}"

    def fail_with(self, reply: Reply) -> None:
        self._failure = reply

    def _handle(self, h: _Handler) -> None:
        seen = self._arrived(h)
        reply = self._failure
        if reply is None and self.credentials is not None:
            expected = "Basic " + base64.b64encode(self.credentials.encode()).decode()
            if h.headers.get("Proxy-Authorization") != expected:
                reply = Reply(407, headers={"Proxy-Authenticate": 'Basic realm="test"'})
        try:
            if reply is not None:
                self._answer(h, reply, seen)
            else:
                self._relay(h, seen)
        except OSError:
            h.close_connection = True
            self._finish(seen, client_closed=True)
        else:
            self._finish(seen)

    def _relay(self, h: _Handler, seen: Seen) -> None:
        target = urlsplit(h.path)
        conn = http.client.HTTPConnection(target.hostname or HOST, target.port or 80, timeout=30)
        headers = {
            k: v
            for k, v in h.headers.items()
            if k.lower() not in ("proxy-authorization", "proxy-connection", "connection")
        }
        headers["Via"] = "1.1 test-proxy"
        path = target.path + (f"?{target.query}" if target.query else "")
        try:
            conn.request(h.command, path or "/", headers=headers)
            answer = conn.getresponse()
            body = answer.read()
        finally:
            conn.close()
        seen.status = answer.status
        h.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("connection", "transfer-encoding", "content-length"):
                h.send_header(name, value)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)
            seen.bytes_sent = len(body)


def _matches(seen_path: str, path: str, prefix: bool) -> bool:
    return seen_path.startswith(path) if prefix else seen_path == path


# -- TLS ------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _certificate() -> tuple[bytes, bytes]:
    """A self-signed certificate (PEM) and its key (PEM), made once per process."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.DNSName("*.test"),
                    x509.IPAddress(ipaddress.ip_address(HOST)),
                ]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def _server_tls_context() -> ssl.SSLContext:
    cert_pem, key_pem = _certificate()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as tmp:
        cert_file, key_file = Path(tmp, "cert.pem"), Path(tmp, "key.pem")
        cert_file.write_bytes(cert_pem)
        key_file.write_bytes(key_pem)
        ctx.load_cert_chain(cert_file, key_file)
    return ctx


# -- FTP ------------------------------------------------------------------------------------


class _RecordingFTPHandler(FTPHandler):  # type: ignore[misc]
    owner: ClassVar[FtpServer]

    def ftp_RETR(self, file: str) -> Any:
        self.owner._record(self.fs.fs2ftp(file))
        return super().ftp_RETR(file)


class FtpServer:
    """Anonymous, read-only FTP on 127.0.0.1 serving a temporary directory."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="scrapy-rep-ftp-"))
        self._cond = threading.Condition()
        self._retrieved: list[str] = []
        self._stop = threading.Event()
        authorizer = DummyAuthorizer()
        authorizer.add_anonymous(str(self.root))
        handler: Any = type("Handler", (_RecordingFTPHandler,), {"owner": self})
        handler.authorizer = authorizer
        handler.banner = "scrapy-rep test ftpd"
        self._server = FTPServer((HOST, 0), handler)
        self.port: int = self._server.socket.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @classmethod
    def start(cls) -> FtpServer:
        server = cls()
        server._thread.start()
        return server

    def _serve(self) -> None:
        # pyftpdlib's loop is not thread-safe to stop from outside: poll a flag between turns.
        while not self._stop.is_set():
            self._server.serve_forever(timeout=0.05, blocking=False, handle_exit=False)
        self._server.close_all()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, path: str = "/") -> str:
        return f"ftp://{HOST}:{self.port}{path}"

    @property
    def origin(self) -> str:
        return f"ftp://{HOST}:{self.port}"

    def write(self, name: str, data: bytes | str) -> Path:
        target = self.root / name.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)
        return target

    @property
    def retrieved(self) -> list[str]:
        """Paths of every RETR command received (whether the file existed or not)."""
        with self._cond:
            return list(self._retrieved)

    def wait_for(self, path: str, count: int = 1, timeout: float = 10.0) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._retrieved.count(path) >= count, timeout)

    def _record(self, path: str) -> None:
        with self._cond:
            self._retrieved.append(path)
            self._cond.notify_all()


# -- other helpers ----------------------------------------------------------------------------


@contextlib.contextmanager
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections, reserved while the block runs."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, 0))
        yield sock.getsockname()[1]
    finally:
        sock.close()


__all__ = [
    "HOST",
    "FtpServer",
    "Reply",
    "ScriptedServer",
    "Seen",
    "Trigger",
    "closed_port",
    "html_page",
]

"""Broad-crawl origins: one Twisted web server on 127.0.0.1 answering thousands of sites.

``python benchmarks/_broad_server.py CONFIG.json`` where CONFIG.json is
``{"sites": {"site00001.test": ["ok", "path/to/robots.txt"], "site00002.test": ["404", null],
...}}``. Every site shares this one IP and port: the crawl resolves each host name to
127.0.0.1 (``_broad_resolver.py``), so each site is its own origin and its own download slot,
and the server tells them apart by the ``Host`` header. Kinds:

- ``ok``: ``/robots.txt`` answers the given file's bytes; ``/`` a home page linking to
  ``/page/1`` … ``/page/4``; ``/page/N`` a page linking back home.
- ``404``: no robots.txt (404); pages as ``ok``.
- ``500``, ``503``: every path answers that status, forever.

Prints one JSON line ``{"port": PORT}`` when listening, then serves until SIGTERM/SIGINT.
Twisted in its own process keeps the server off the crawl's CPU and GIL; bodies are built once.
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path
from typing import Any

from twisted.internet import reactor
from twisted.web import resource as web_resource
from twisted.web import server

PAGES_PER_SITE = 5  # the home page and /page/1 … /page/4
_TEXT = b"<p>" + b"lorem ipsum dolor sit amet " * 30 + b"</p>"
_HOME = (
    b"<html><head><title>home</title></head><body>"
    + b"".join(b'<a href="/page/%d">page %d</a>' % (n, n) for n in range(1, PAGES_PER_SITE))
    + _TEXT
    + b"</body></html>"
)
_PAGE = b'<html><head><title>page</title></head><body><a href="/">home</a>' + _TEXT + b"</body>"
_ERROR = b"<html><body><h1>Service unavailable</h1></body></html>"


class _Sites(web_resource.Resource):
    isLeaf = True

    def __init__(self, sites: dict[str, tuple[str, bytes]]) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.sites = sites

    def render_GET(self, request: Any) -> bytes:
        host = (request.getHeader(b"host") or b"").split(b":")[0].decode("ascii", "replace")
        kind, robots = self.sites.get(host.lower(), ("404", b""))
        path = request.path
        if kind in ("500", "503"):
            request.setResponseCode(int(kind))
            return _ERROR
        if path == b"/robots.txt":
            if kind == "404":
                request.setResponseCode(404)
                return b"not found"
            request.setHeader(b"Content-Type", b"text/plain")
            return robots
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        return _HOME if path == b"/" else _PAGE


class _QuietSite(server.Site):
    def log(self, request: Any) -> None:
        """No access log: it would cost more than the answer."""


def main(config_path: str) -> None:
    # Thousands of sites mean thousands of kept-alive connections: lift the soft FD limit.
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    bodies: dict[str, bytes] = {}
    sites: dict[str, tuple[str, bytes]] = {}
    for host, (kind, robots_path) in config["sites"].items():
        if robots_path and robots_path not in bodies:
            bodies[robots_path] = Path(robots_path).read_bytes()
        sites[host] = (kind, bodies[robots_path] if robots_path else b"")
    clock: Any = reactor
    listening = clock.listenTCP(
        0,
        _QuietSite(_Sites(sites)),  # type: ignore[no-untyped-call]
        backlog=1024,
        interface="127.0.0.1",
    )
    print(json.dumps({"port": listening.getHost().port}), flush=True)
    clock.run()


if __name__ == "__main__":
    main(sys.argv[1])

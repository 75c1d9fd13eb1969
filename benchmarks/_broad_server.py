"""Broad-crawl origins: one Twisted web server on 127.0.0.1 answering thousands of sites.

``python benchmarks/_broad_server.py CONFIG.json`` where CONFIG.json is
``{"sites": {"site00001.test": ["ok", "path/to/robots.txt", ["/page/1", ...]], ...}}``
(kind, the file served as robots.txt or null, the paths the home page links to). Every site
shares this one IP and port: the crawl resolves each host name to 127.0.0.1
(``_broad_resolver.py``), so each site is its own origin and its own download slot, and the
server tells them apart by the ``Host`` header. Kinds:

- ``ok``: ``/robots.txt`` answers the given file's bytes; ``/`` a home page linking to the
  site's paths; any other path a page linking back home.
- ``404``: no robots.txt (404); pages as ``ok``.
- ``robots503``: ``/robots.txt`` answers 503, forever; pages as ``ok`` (a crawler that treats
  a failing robots.txt as "allow everything" fetches them).
- ``500``, ``503``: every path answers that status, forever.

Every request except robots.txt is counted per host and request target (path and query, as
sent). ``GET /__counts`` with ``Host: bench.control`` answers the counts as JSON,
``{host: {target: n}}``, and resets them: what each crawl of a run fetched, seen by the sites.

Prints one JSON line ``{"port": PORT}`` when listening, then serves until SIGTERM/SIGINT.
Twisted in its own process keeps the server off the crawl's CPU and GIL; bodies are built once.
"""

from __future__ import annotations

import html
import json
import resource
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from twisted.internet import reactor
from twisted.web import resource as web_resource
from twisted.web import server

CONTROL = b"bench.control"
_TEXT = b"<p>" + b"lorem ipsum dolor sit amet " * 30 + b"</p>"
_PAGE = b'<html><head><title>page</title></head><body><a href="/">home</a>' + _TEXT + b"</body>"
_ERROR = b"<html><body><h1>Service unavailable</h1></body></html>"


def home_page(links: list[str]) -> bytes:
    anchors = "".join(f'<a href="{html.escape(href)}">link</a>' for href in links)
    return (
        b"<html><head><title>home</title></head><body>" + anchors.encode() + _TEXT + b"</body>"
        b"</html>"
    )


class _Sites(web_resource.Resource):
    isLeaf = True

    def __init__(self, sites: dict[str, tuple[str, bytes, bytes]]) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.sites = sites
        self.counts: defaultdict[str, defaultdict[str, int]] = defaultdict(lambda: defaultdict(int))

    def render_GET(self, request: Any) -> bytes:
        host_header = (request.getHeader(b"host") or b"").split(b":")[0]
        path = request.path
        if host_header == CONTROL and path == b"/__counts":
            body = json.dumps(self.counts).encode()
            self.counts.clear()
            request.setHeader(b"Content-Type", b"application/json")
            return body
        host = host_header.decode("ascii", "replace").lower()
        kind, robots, home = self.sites.get(host, ("404", b"", home_page([])))
        if path != b"/robots.txt":
            self.counts[host][request.uri.decode("latin-1")] += 1
        if kind in ("500", "503"):
            request.setResponseCode(int(kind))
            return _ERROR
        if path == b"/robots.txt":
            if kind in ("404", "robots503"):
                request.setResponseCode(404 if kind == "404" else 503)
                return b"not found" if kind == "404" else _ERROR
            request.setHeader(b"Content-Type", b"text/plain")
            return robots
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        return home if path == b"/" else _PAGE


class _QuietSite(server.Site):
    def log(self, request: Any) -> None:
        """No access log: it would cost more than the answer."""


def main(config_path: str) -> None:
    # Thousands of sites mean thousands of kept-alive connections: lift the soft FD limit.
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    bodies: dict[str, bytes] = {}
    sites: dict[str, tuple[str, bytes, bytes]] = {}
    for host, (kind, robots_path, links) in config["sites"].items():
        if robots_path and robots_path not in bodies:
            bodies[robots_path] = Path(robots_path).read_bytes()
        sites[host] = (kind, bodies[robots_path] if robots_path else b"", home_page(links))
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

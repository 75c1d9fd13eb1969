"""The demo site ``scrapy crawl demo`` crawls: three origins on 127.0.0.1.

Each origin is its own port (SPEC B1: scheme + host + port is the scope of a
robots.txt), served by Twisted in the crawl's own reactor:

- ``main``: a robots.txt with a group for the demo's token, one for another
  crawler and a ``*`` group, using wildcards, ``$``, an index.html allow and a
  disallowed section;
- ``docs``: only a ``*`` group, so the demo obeys it ("no group for ...; used *");
- ``plain``: no robots.txt at all (404), so everything is allowed.

``python -m example_project.demo_site`` serves it on its own for a browser.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from twisted.internet.defer import Deferred, DeferredList
from twisted.web.resource import Resource
from twisted.web.server import Request, Site

__all__ = ["ROBOTS", "DemoSite", "start"]

#: robots.txt per origin; None → 404.
ROBOTS: dict[str, bytes | None] = {
    "main": b"""\
# robots.txt of the scrapy-rep demo site (main origin)
User-agent: scrapy-rep-demo
Disallow: /private/
Allow: /private/index.html
Disallow: /*.pdf$
Disallow: /archive/*/drafts/

User-agent: otherbot
Disallow: /blog/

User-agent: *
Disallow: /
""",
    "docs": b"""\
User-agent: *
Disallow: /tmp/
""",
    "plain": None,
}

# path (with query) -> links on that page; "{docs}"/"{plain}" are the other origins.
_PAGES: dict[str, dict[str, list[str]]] = {
    "main": {
        "/": [
            "/blog/",
            "/private/",
            "/private/salaries.html",
            "/files/report.pdf",
            "/files/report.pdf?download=1",
            "/archive/2024/drafts/plan.html",
            "/archive/2024/final.html",
            "{docs}/",
            "{plain}/",
        ],
        "/blog/": ["/blog/first-post.html", "/"],
        "/blog/first-post.html": ["/blog/"],
        "/private/": ["/private/index.html", "/private/salaries.html"],
        "/private/index.html": ["/private/"],
        "/private/salaries.html": [],
        "/files/report.pdf": [],
        "/files/report.pdf?download=1": [],
        "/archive/2024/drafts/plan.html": [],
        "/archive/2024/final.html": ["/archive/2024/drafts/plan.html"],
    },
    "docs": {
        "/": ["/guide.html", "/tmp/cache.html"],
        "/guide.html": ["/"],
        "/tmp/cache.html": [],
    },
    "plain": {
        "/": ["/about.html"],
        "/about.html": ["/"],
    },
}


class _Origin(Resource):
    isLeaf = True

    def __init__(self, name: str, site: DemoSite) -> None:
        super().__init__()
        self.name = name
        self.site = site

    def render_GET(self, request: Request) -> bytes:
        uri = request.uri.decode("ascii", "replace")
        if uri == "/robots.txt":
            body = ROBOTS[self.name]
            if body is None:
                request.setResponseCode(404)
                return b"no robots.txt here"
            request.setHeader(b"content-type", b"text/plain")
            return body
        links = _PAGES[self.name].get(uri)
        if links is None:
            request.setResponseCode(404)
            return b"not found"
        request.setHeader(b"content-type", b"text/html; charset=utf-8")
        items = "".join(f'<li><a href="{self.site.expand(link)}">{link}</a></li>' for link in links)
        return f"<html><body><h1>{self.name} {uri}</h1><ul>{items}</ul></body></html>".encode()


@dataclass
class DemoSite:
    """The running demo site: ``urls`` maps an origin name to its base URL."""

    urls: dict[str, str]
    ports: list[Any]

    def expand(self, link: str) -> str:
        return link.format(**self.urls)

    @property
    def start_url(self) -> str:
        return self.urls["main"] + "/"

    def stop(self) -> Deferred[Any]:
        return DeferredList([port.stopListening() for port in self.ports])


def start(reactor: Any = None) -> DemoSite:
    """Listen on free 127.0.0.1 ports, one per origin, in the running reactor."""
    if reactor is None:
        from twisted.internet import reactor
    site = DemoSite({}, [])
    for name in ROBOTS:
        port = reactor.listenTCP(0, Site(_Origin(name, site)), interface="127.0.0.1")
        site.ports.append(port)
        site.urls[name] = f"http://127.0.0.1:{port.getHost().port}"
    return site


if __name__ == "__main__":
    from twisted.internet import reactor as _reactor

    _site = start(_reactor)
    print("\n".join(f"{name}: {url}/" for name, url in _site.urls.items()))
    _reactor.run()  # type: ignore[misc]

"""The demo site ``scrapy crawl demo`` crawls: four origins on 127.0.0.1.

Each origin is its own port (SPEC B1: scheme + host + port is the scope of a
robots.txt), served by Twisted in the crawl's own reactor. Each shows something:

- ``main``: the robots.txt in ``demo_robots.txt`` (next to ``scrapy.cfg``, so that
  ``scrapy robots --file demo_robots.txt`` can be tried on it offline): a group for
  the demo's token, one for another crawler and a ``*`` group, wildcards, ``$``, an
  index.html allow, a disallowed section and a ``Content-Usage`` line refusing
  ``train-ai`` for ``/blog/``; and ``/search.html``, whose robots meta tag says
  ``noindex, nofollow`` (SPEC D);
- ``docs``: only a ``*`` group, so the demo obeys it ("no group for ...; used *");
- ``plain``: no robots.txt at all (404), so everything is allowed; its
  ``/busy.html`` answers 503 with ``Retry-After: 2`` once, so the origin pauses (SPEC H);
- ``flaky``: its robots.txt answers 503 with ``Retry-After: 5`` once, so its
  requests are held until it is fetched again (SPEC B2).

``python -m example_project.demo_site`` serves it on its own for a browser (run in example_project/
or, through ``example_project/demo_site.py``, in the repository's root).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from twisted.internet.defer import Deferred, DeferredList
from twisted.web.resource import Resource
from twisted.web.server import Request, Site

__all__ = ["ROBOTS", "ROBOTS_FILE", "DemoSite", "start"]

#: The main origin's robots.txt, shipped with the project for ``scrapy robots --file``.
ROBOTS_FILE = Path(__file__).resolve().parent.parent / "demo_robots.txt"

#: robots.txt per origin; None → 404.
ROBOTS: dict[str, bytes | None] = {
    "main": ROBOTS_FILE.read_bytes(),
    "docs": b"""\
User-agent: *
Disallow: /tmp/
""",
    "plain": None,
    "flaky": b"""\
User-agent: *
Disallow: /admin/
""",
}

#: (origin, path) answering "503, Retry-After: <seconds>" the first time, then as usual: the
#: shortest waits scrapy-rep honours with its defaults (REP_RETRY_FAST_DELAY for robots.txt,
#: REP_PAUSE_DELAY for a page; a shorter Retry-After counts as none), to keep the demo short.
SLOW_DOWN_ONCE = {("flaky", "/robots.txt"): b"5", ("plain", "/busy.html"): b"2"}

#: (origin, path) -> the content of its ``<meta name="robots">``.
META_ROBOTS = {("main", "/search.html"): "noindex, nofollow"}

# path (with query) -> links on that page; "{docs}", "{plain}", "{flaky}" are the other origins.
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
            "/search.html",
            "{docs}/",
            "{plain}/",
            "{flaky}/",
            "{flaky}/status.html",
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
        # Linked from /search.html only, which says nofollow: a crawl never finds them.
        "/search.html": ["/search.html?page=2", "/search.html?page=3", "/calendar/2025/"],
        "/search.html?page=2": [],
        "/search.html?page=3": [],
        "/calendar/2025/": [],
    },
    "docs": {
        "/": ["/guide.html", "/tmp/cache.html"],
        "/guide.html": ["/"],
        "/tmp/cache.html": [],
    },
    "plain": {
        "/": ["/about.html", "/busy.html"],
        "/about.html": ["/"],
        "/busy.html": ["/"],
    },
    "flaky": {
        "/": ["/status.html"],
        "/status.html": ["/"],
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
        if self.site.slows_down(self.name, uri):
            request.setResponseCode(503)
            request.setHeader(b"retry-after", SLOW_DOWN_ONCE[self.name, uri])
            return b"busy: come back in a few seconds"
        if uri == "/robots.txt":
            return self._robots(request)
        links = _PAGES[self.name].get(uri)
        if links is None:
            request.setResponseCode(404)
            return b"not found"
        request.setHeader(b"content-type", b"text/html; charset=utf-8")
        return self._page(uri, links).encode()

    def _robots(self, request: Request) -> bytes:
        body = ROBOTS[self.name]
        if body is None:
            request.setResponseCode(404)
            return b"no robots.txt here"
        request.setHeader(b"content-type", b"text/plain")
        return body

    def _page(self, uri: str, links: list[str]) -> str:
        title = escape(f"{self.name} {uri}")
        robots = META_ROBOTS.get((self.name, uri))
        meta = f'<meta name="robots" content="{robots}">' if robots else ""
        items = "".join(
            f'<li><a href="{escape(self.site.expand(link))}">{escape(link)}</a></li>'
            for link in links
        )
        return (
            f"<html><head><title>{title}</title>{meta}</head>"
            f"<body><h1>{title}</h1><ul>{items}</ul></body></html>"
        )


@dataclass
class DemoSite:
    """The running demo site: ``urls`` maps an origin name to its base URL."""

    urls: dict[str, str]
    ports: list[Any]
    #: SLOW_DOWN_ONCE entries that already answered 503.
    slowed: set[tuple[str, str]] = field(default_factory=set)

    def expand(self, link: str) -> str:
        return link.format(**self.urls)

    @property
    def start_url(self) -> str:
        return self.urls["main"] + "/"

    def slows_down(self, origin: str, path: str) -> bool:
        """Must ``path`` of ``origin`` answer 503 now? Once per SLOW_DOWN_ONCE entry."""
        key = (origin, path)
        if key not in SLOW_DOWN_ONCE or key in self.slowed:
            return False
        self.slowed.add(key)
        return True

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

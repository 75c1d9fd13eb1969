"""Benchmark origins: one Twisted web server process serving many loopback origins.

``python benchmarks/_server.py CONFIG_JSON`` where CONFIG_JSON is
``{"origins": [{"ip": "127.0.0.2", "robots": "...", "robots_delay": 0.0, "page_delay": 0.0}]}``.
Each origin listens on its own loopback IP (127.0.0.0/8 is all loopback on Linux), so Scrapy
gives each its own download slot. Prints one JSON line ``{"ports": {"127.0.0.2": PORT, ...}}``
when listening, then serves until SIGTERM/SIGINT. ``/robots.txt`` answers the origin's body
after ``robots_delay`` s; every other path answers a small HTML page after ``page_delay`` s.
Twisted in its own process keeps the server off the crawl's CPU and GIL.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from twisted.internet import reactor
from twisted.web import resource, server

_PAGE = (
    b"<html><head><title>bench</title></head><body><p>"
    + b"lorem ipsum " * 40
    + b"</p></body></html>"
)


class _Origin(resource.Resource):
    isLeaf = True

    def __init__(self, robots: bytes, robots_delay: float, page_delay: float) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.robots = robots
        self.robots_delay = robots_delay
        self.page_delay = page_delay

    def render_GET(self, request: Any) -> Any:
        if request.path == b"/robots.txt":
            body, ctype, delay = self.robots, b"text/plain", self.robots_delay
        else:
            body, ctype, delay = _PAGE, b"text/html", self.page_delay
        if not delay:
            request.setHeader(b"Content-Type", ctype)
            return body
        clock: Any = reactor
        call = clock.callLater(delay, _finish, request, body, ctype)
        request.notifyFinish().addErrback(lambda _failure: call.cancel())
        return server.NOT_DONE_YET


def _finish(request: Any, body: bytes, ctype: bytes) -> None:
    request.setHeader(b"Content-Type", ctype)
    request.write(body)
    request.finish()


class _QuietSite(server.Site):
    def log(self, request: Any) -> None:
        """No access log: it would cost more than the answer."""


def main(config_json: str) -> None:
    config = json.loads(config_json)
    clock: Any = reactor
    ports = {}
    for origin in config["origins"]:
        site = _QuietSite(  # type: ignore[no-untyped-call]
            _Origin(
                origin["robots"].encode(),
                float(origin.get("robots_delay", 0)),
                float(origin.get("page_delay", 0)),
            )
        )
        listening = clock.listenTCP(0, site, backlog=512, interface=origin["ip"])
        ports[origin["ip"]] = listening.getHost().port
    print(json.dumps({"ports": ports}), flush=True)
    clock.run()


if __name__ == "__main__":
    main(sys.argv[1])

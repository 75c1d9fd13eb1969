"""A real scrapy-redis fleet: N ``scrapy crawl`` processes of one generated project, one Redis.

    site = Site.build(server_factory, origins=10, pages=20)       # a linked multi-origin site
    fleet = Fleet(tmp_path, redis_server.url, readme_block(), {"MAX_IDLE_TIME_BEFORE_CLOSE": 3})
    fleet.seed(site.seeds())                 # LPUSH into the spider's redis_key
    members = fleet.start(3)                 # 3 x `python -m scrapy crawl fleet`, User-Agent
                                             # fleet-member-N (fleet.member_of(seen));
                                             # own_queue=True: member N reads own_key(N)
    members[0].kill9()                       # SIGKILL, like an OOM kill
    results = fleet.wait(timeout=120)        # FleetResult per member that exited by itself
    site.fetched(), site.robots_fetches(), site.refetched(), site.lost()      # server-side counts

The project's ``settings.py`` is the given settings block *verbatim* (e.g. README's
scrapy-redis block, see :func:`readme_block`), then the harness's lines: the overrides a test
passes (the test Redis's URL, shorter idle times) and quiet-logging settings. Its spider is a
``scrapy_redis.spiders.RedisSpider`` reading start URLs from ``fleet:start_urls`` and following
every ``<a href>``; at close it writes its stats and responses as JSON (``FleetResult``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _servers import Reply, ScriptedServer, Seen, html_page

TESTS_DIR = Path(__file__).resolve().parent
README = TESTS_DIR.parent / "README.md"
START_KEY = "fleet:start_urls"
RULES = "User-agent: *\nDisallow: /page/private\n"

_SPIDER = """
import json

from scrapy import signals
from scrapy_redis.spiders import RedisSpider


class FleetSpider(RedisSpider):
    name = "fleet"
    redis_key = "fleet:start_urls"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen = []

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.write_result, signals.spider_closed)
        return spider

    def parse(self, response):
        self.seen.append(response.url)
        yield from response.follow_all(css="a", callback=self.parse)

    def write_result(self, spider, reason):
        stats = {k: v if isinstance(v, (int, float, str)) else str(v)
                 for k, v in self.crawler.stats.get_stats().items()}
        path = self.settings.get("FLEET_RESULT")
        with open(path, "w", encoding="utf-8") as file:
            json.dump({"reason": reason, "stats": stats, "responses": self.seen}, file)
"""

#: Lines every member gets after the block under test: quiet, fast, nothing else.
_HARNESS_SETTINGS: dict[str, Any] = {
    "SPIDER_MODULES": ["fleetproject.spiders"],
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "INFO",
    "DOWNLOAD_TIMEOUT": 15,
    "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",  # silences Scrapy 2.11's warning
}


def own_key(member: int) -> str:
    """The start URLs key of member ``member`` started with ``own_queue``."""
    return f"{START_KEY}:{member}"


def _pythonpath(project: Path) -> str:
    return os.pathsep.join(filter(None, [str(project), os.environ.get("PYTHONPATH")]))


def readme_block() -> str:
    """README's scrapy-redis settings block, as written (the python block after
    "A scrapy-redis project")."""
    text = README.read_text(encoding="utf-8")
    found = re.search(r"A scrapy-redis project.*?```python\n(.*?)```", text, re.S)
    assert found, "README.md has no scrapy-redis settings block"
    return found.group(1)


@dataclass
class FleetResult:
    exit_code: int
    reason: str | None
    stats: dict[str, Any] = field(default_factory=dict)
    responses: list[str] = field(default_factory=list)
    log: str = ""

    def stat(self, name: str) -> Any:
        return self.stats.get(name, 0)


class Member:
    """One ``scrapy crawl fleet`` process."""

    def __init__(self, name: str, directory: Path, proc: subprocess.Popen[bytes]) -> None:
        #: Also its User-Agent, so servers tell members apart (``Fleet.member_of``).
        self.name = name
        self.directory = directory
        self.proc = proc
        self.killed = False

    @property
    def log(self) -> str:
        return (self.directory / "crawl.log").read_text("utf-8", "replace")

    def kill9(self) -> None:
        self.killed = True
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def result(self) -> FleetResult:
        path = self.directory / "result.json"
        data = json.loads(path.read_text("utf-8")) if path.exists() else {}
        return FleetResult(
            exit_code=self.proc.returncode,
            reason=data.get("reason"),
            stats=data.get("stats", {}),
            responses=data.get("responses", []),
            log=self.log,
        )


class Fleet:
    def __init__(
        self,
        root: Path,
        redis_url: str,
        block: str,
        overrides: Mapping[str, Any] | None = None,
    ) -> None:
        self.root = root
        self.redis_url = redis_url
        self.members: list[Member] = []
        project = root / "project"
        package = project / "fleetproject"
        (package / "spiders").mkdir(parents=True, exist_ok=True)
        (project / "scrapy.cfg").write_text("[settings]\ndefault = fleetproject.settings\n")
        (package / "__init__.py").write_text("")
        (package / "spiders" / "__init__.py").write_text(_SPIDER)
        lines = [
            f"{name} = {value!r}" for name, value in {**overrides, **_HARNESS_SETTINGS}.items()
        ]
        (package / "settings.py").write_text(
            block + "\n# The harness's own lines\n" + "\n".join(lines)
        )
        self.project = project

    def seed(self, urls: Iterable[str], key: str = START_KEY) -> None:
        import redis

        client = redis.Redis.from_url(self.redis_url)
        try:
            client.rpush(key, *urls)
        finally:
            client.close()

    def start(self, count: int, own_queue: bool = False) -> list[Member]:
        """``own_queue``: each member reads its start URLs from ``own_key(n)`` and keeps its
        requests in a queue of its own (the dupefilter stays shared): members share the sites,
        not the work."""
        started = []
        for _ in range(count):
            n = len(self.members)
            name = f"fleet-member-{n}"
            own = ["-a", f"redis_key={own_key(n)}", "-s", f"SCHEDULER_QUEUE_KEY=fleet:requests:{n}"]
            directory = self.root / name
            directory.mkdir()
            with (directory / "crawl.log").open("wb") as log:
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "scrapy",
                        "crawl",
                        "fleet",
                        "-s",
                        f"FLEET_RESULT={directory / 'result.json'}",
                        "-s",
                        f"USER_AGENT={name}",
                        *(own if own_queue else []),
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.project,
                    # The project first; a PYTHONPATH the tests run with still applies (to
                    # run a fleet on another checkout of scrapy_rep, say).
                    env={**os.environ, "PYTHONPATH": _pythonpath(self.project)},
                )
            member = Member(name, directory, proc)
            self.members.append(member)
            started.append(member)
        return started

    def member_of(self, seen: Seen) -> Member:
        """The member that sent a request a server saw."""
        (member,) = [m for m in self.members if seen.headers.get("user-agent") == m.name]
        return member

    def wait(self, timeout: float) -> list[FleetResult]:
        """Results of every member that was not killed, once all exited; on timeout every member
        still running is killed and AssertionError says which did not end."""
        deadline = time.monotonic() + timeout
        running = []
        for member in self.members:
            try:
                member.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                running.append(member)
        for member in running:
            member.proc.kill()
            member.proc.wait()
        assert not running, (
            f"{len(running)} fleet member(s) still running after {timeout} s; last log lines:\n"
            + "\n".join(running[0].log.splitlines()[-15:])
        )
        return [m.result() for m in self.members if not m.killed]

    def redis_keys(self) -> list[str]:
        import redis

        client = redis.Redis.from_url(self.redis_url)
        try:
            return sorted(key.decode() for key in client.keys("*"))
        finally:
            client.close()


class Site:
    """``origins`` servers of ``pages`` linked pages each: /page/i links to the next three pages
    of its origin and to /page/i of the next origin; /page/0 also to /page/private (disallowed
    by robots.txt). Discovering a page many times makes the dupefilter matter. ``robots(o)``
    is origin ``o``'s robots.txt answer; pages are answered after ``page_delay`` s."""

    def __init__(self, servers: list[ScriptedServer], pages: int) -> None:
        self.servers = servers
        self.pages = pages

    @classmethod
    def build(
        cls,
        server_factory: Callable[[], ScriptedServer],
        origins: int,
        pages: int,
        robots: Callable[[int], Reply] = lambda _: Reply.text(RULES),
        page_delay: float = 0.0,
    ) -> Site:
        servers = [server_factory() for _ in range(origins)]
        for o, server in enumerate(servers):
            server.route("/robots.txt", robots(o))
            following = servers[(o + 1) % origins]
            for i in range(pages):
                links = [server.url(f"/page/{(i + k) % pages}") for k in (1, 2, 3)]
                links.append(following.url(f"/page/{i}"))
                if i == 0:
                    links.append(server.url("/page/private"))
                page = html_page(f"/page/{i}", links)
                headers = {"Content-Type": "text/html"}
                server.route(f"/page/{i}", Reply(200, page, headers=headers, delay=page_delay))
        return cls(servers, pages)

    def seeds(self) -> list[str]:
        return [server.url("/page/0") for server in self.servers]

    def allowed(self) -> list[str]:
        return [s.url(f"/page/{i}") for s in self.servers for i in range(self.pages)]

    def fetched(self) -> Counter[str]:
        """Allowed page URL → how many times a server answered it."""
        return Counter({url: self._count(url) for url in self.allowed()})

    def lost(self) -> list[str]:
        return [url for url, n in self.fetched().items() if n == 0]

    def refetched(self) -> int:
        """Fetches beyond the first of every page."""
        return sum(n - 1 for n in self.fetched().values() if n > 1)

    def robots_fetches(self) -> list[int]:
        return [server.count("/robots.txt") for server in self.servers]

    def private_fetches(self) -> int:
        return sum(server.count("/page/private") for server in self.servers)

    def _count(self, url: str) -> int:
        for server in self.servers:
            if url.startswith(server.origin + "/"):
                return server.count(url[len(server.origin) :])
        raise ValueError(url)

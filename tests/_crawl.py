"""Run one REAL Scrapy crawl (real engine, CrawlerProcess) in a subprocess and return what happened.

Each crawl runs ``tests/_crawl_main.py`` in a fresh interpreter, so it gets a fresh reactor and
works the same on every supported Scrapy (2.11.2 … 2.19); the servers from ``tests/_servers.py``
keep running in the pytest process.

    from _crawl import Interrupt, Start, run_crawl

    result = run_crawl(
        [srv.url("/page/1"), Start(srv.url("/page/2"), meta={"dont_obey_robotstxt": True})],
        {"ROBOTSTXT_OBEY": True, "DOWNLOADER_MIDDLEWARES": {...}},   # added to BASE_SETTINGS
        follow_links=False,       # follow <a href> of every HTML response (DEPTH_LIMIT etc. apply)
        follow_meta=None,         # meta for followed requests
        items=False,              # the callback yields {"url": response.url} per response
        item_meta=[],             # ... with these response.meta keys too (items=True)
        extra=[Start(url, at=1.5)],   # injected with engine.crawl() 1.5 s after spider_opened;
                                      # the spider stays open (spider_idle) until all are injected
        hosts={"müller.test": "127.0.0.1"},   # name → IP via _resolver.MappedResolver (IDN tests)
        interrupt=Interrupt(srv, "/page/", 5),  # SIGINT once srv saw 5 requests under /page/
        memory_limit=None,        # bytes: RLIMIT_AS (address space) of the crawl process, so a
                                  # runaway allocation fails (MemoryError) instead of swapping
        timeout=60,               # wall-clock limit; on expiry the crawl is killed and
                                  # CrawlTimeout (an AssertionError, with the log tail) is raised
        check=True,               # raise CrawlFailed unless the subprocess exited 0 with results
        spider="harness",         # or "errback_yields" (async errbacks yielding an item and a
                                  # request), "drop_chain" (errback chains of dropped
                                  # requests, measuring what stays alive), "sitemap"
                                  # (Scrapy's SitemapSpider) or "copied_meta" (after one
                                  # page, one request copying its meta or request), see
                                  # tests/_crawl_main.py
        sitemap_urls=[],          # the sitemap spider's sitemap_urls
        chain=None,               # the drop chains' {drops, measure_at, sample_every}
        copy=None,                # the copied_meta spider's {idiom, after, target, user_agent}
    )

Start URLs may be plain strings or :class:`Start` (``url``, ``meta``, ``dont_filter`` (default
False, so the dupefilter sees start requests like any other), ``priority``, ``at`` (extra only)).
Nothing of scrapy_rep is enabled by default: each test passes the settings it needs.
To resume a JOBDIR crawl, call ``run_crawl`` again with the same start list and JOBDIR: start
requests that were never scheduled are not in the JOBDIR (Scrapy pulls them lazily), and the
persisted dupefilter skips the ones that were.
To kill a crawl at a chosen moment (``kill -9``), start it as a :class:`RunningCrawl` and wait
for a line of its output; ``say_idle=True`` makes it print its stats on every ``spider_idle``:

    crawl = RunningCrawl.start(urls, {"JOBDIR": job}, tmp_path / "first", say_idle=True)
    crawl.idle_stats(lambda stats: stats.get("robotstxt/pause/paused", 0) >= 1, timeout=60)
    assert crawl.kill() == -signal.SIGKILL

``BASE_SETTINGS`` only makes crawls quiet and fast (no telnet or remote control, INFO logs,
DOWNLOAD_TIMEOUT 15, ROBOTSTXT_OBEY False); JOBDIR, CLOSESPIDER_* etc. are ordinary settings.

:class:`CrawlResult`:

    result.exit_code        int
    result.stats            dict (Scrapy's final stats; datetimes as str)
    result.stat("robotstxt/forbidden")   stats value or 0
    result.log              str: the crawl's whole log (stderr)
    result.responses        URLs the spider's callback got, in order (any status that reached it)
    result.response_times   seconds since spider_opened at which each of those arrived
    result.statuses         {url: status} for those
    result.errbacks         list of Errback(url, exception (class name), message, status,
                            ignore_request, same_request)
                            — IgnoreRequest from a downloader middleware, HttpError, timeouts…
                            (download error classes differ by version: newer Scrapy raises
                            DownloadFailedError / DownloadTimeoutError / ResponseDataLossError
                            where 2.11.2 has ResponseNeverReceived / TimeoutError /
                            ResponseFailed)
    result.errback_urls     their URLs
    result.reached_downloader   URLs of every request that reached the downloader (incl.
                                robots.txt fetched through the engine), from
                                ``request_reached_downloader``
    result.start_scheduled_active   per start request, the downloads in Downloader.active
                                when it was scheduled (``request_scheduled``)
    result.dropped          URLs of requests the scheduler rejected (``request_dropped``)
    result.items            items scraped (``item_scraped``), as dicts, in order
    result.close_reason     the spider's close reason ("finished", "shutdown", "closespider_…")
    result.interrupted      True when ``interrupt`` sent SIGINT
    result.cpu_time         CPU seconds the crawl process used from spider_opened to
                            spider_closed (benchmarks: robust on a busy machine)
    result.max_rss          peak resident set size of the crawl process, bytes (ru_maxrss)
    result.max_rss_at_open  the same, measured at spider_opened (the crawl's baseline)
    result.probe            the drop chains' measurements, by drop number (str); the
                            copied_meta spider's ``copied_from`` (what it copied)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _crawl_main import IDLE_LINE
from _servers import ScriptedServer

TESTS_DIR = Path(__file__).resolve().parent
MAIN = TESTS_DIR / "_crawl_main.py"

BASE_SETTINGS: dict[str, Any] = {
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "INFO",
    "DOWNLOAD_TIMEOUT": 15,
    "ROBOTSTXT_OBEY": False,
    "MEMUSAGE_ENABLED": False,
    "REMOTE_CONTROL_ENABLED": False,
}


@dataclass(frozen=True)
class Start:
    url: str
    meta: Mapping[str, Any] = field(default_factory=dict)
    dont_filter: bool = False
    priority: int = 0
    at: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "meta": dict(self.meta),
            "dont_filter": self.dont_filter,
            "priority": self.priority,
            "at": self.at,
        }


@dataclass(frozen=True)
class Interrupt:
    """Send SIGINT (Ctrl-C) once ``server`` saw ``count`` requests whose path starts with
    ``prefix``."""

    server: ScriptedServer
    prefix: str
    count: int


@dataclass(frozen=True)
class Errback:
    url: str | None
    exception: str
    message: str
    status: int | None
    ignore_request: bool = False  # the failure is an IgnoreRequest (a subclass counts)
    same_request: bool = False  # failure.request is the very Request the config made


@dataclass
class CrawlResult:
    exit_code: int
    log: str
    stats: dict[str, Any] = field(default_factory=dict)
    responses: list[str] = field(default_factory=list)
    response_times: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    errbacks: list[Errback] = field(default_factory=list)
    reached_downloader: list[str] = field(default_factory=list)
    start_scheduled_active: list[int] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    close_reason: str | None = None
    cpu_time: float | None = None
    interrupted: bool = False
    max_rss: int | None = None
    max_rss_at_open: int | None = None
    probe: dict[str, dict[str, Any]] = field(default_factory=dict)

    def stat(self, name: str, default: Any = 0) -> Any:
        return self.stats.get(name, default)

    @property
    def errback_urls(self) -> list[str]:
        return [e.url for e in self.errbacks if e.url is not None]


class CrawlFailed(AssertionError):
    pass


class CrawlTimeout(CrawlFailed):
    pass


def _as_start(item: str | Start) -> Start:
    return Start(item) if isinstance(item, str) else item


def _log_tail(log: str, lines: int = 60) -> str:
    return "\n".join(log.splitlines()[-lines:])


def run_crawl(
    start_urls: Sequence[str | Start],
    settings: Mapping[str, Any] | None = None,
    *,
    follow_links: bool = False,
    follow_meta: Mapping[str, Any] | None = None,
    items: bool = False,
    item_meta: Sequence[str] = (),
    extra: Sequence[Start] = (),
    hosts: Mapping[str, str] | None = None,
    interrupt: Interrupt | None = None,
    memory_limit: int | None = None,
    timeout: float = 60.0,
    check: bool = True,
    spider: str = "harness",
    sitemap_urls: Sequence[str] = (),
    chain: Mapping[str, Any] | None = None,
    copy: Mapping[str, Any] | None = None,
) -> CrawlResult:
    """Run a real crawl in a subprocess; see the module docstring."""
    with tempfile.TemporaryDirectory(prefix="scrapy-rep-crawl-") as tmp:
        result_path = Path(tmp, "result.json")
        log_path = Path(tmp, "crawl.log")
        config = {
            **_config(start_urls, settings, hosts),
            "spider": spider,
            "sitemap_urls": list(sitemap_urls),
            "chain": dict(chain or {}),
            "copy": dict(copy or {}),
            "follow_links": follow_links,
            "follow_meta": dict(follow_meta or {}),
            "items": items,
            "item_meta": list(item_meta),
            "extra": [e.to_json() for e in extra],
            "memory_limit": memory_limit,
            "result": str(result_path),
        }
        config_path = Path(tmp, "config.json")
        config_path.write_text(json.dumps(config), encoding="utf-8")
        with log_path.open("wb") as log_file:
            proc = subprocess.Popen(
                [sys.executable, str(MAIN), str(config_path)],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=_env(),
                cwd=tmp,
            )
            interrupted = threading.Event()
            watcher = _start_interrupt_watcher(proc, interrupt, timeout, interrupted)
            try:
                exit_code = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise CrawlTimeout(
                    f"crawl did not finish in {timeout} s; log tail:\n"
                    + _log_tail(log_path.read_text("utf-8", "replace"))
                ) from None
            finally:
                if interrupt is not None:
                    interrupt.server.notify()
                if watcher is not None:
                    watcher.join()
        log = log_path.read_text("utf-8", "replace")
        if not result_path.exists():
            if check:
                raise CrawlFailed(f"crawl exited {exit_code} without results:\n{_log_tail(log)}")
            return CrawlResult(exit_code, log, interrupted=interrupted.is_set())
        if check and exit_code != 0:
            raise CrawlFailed(f"crawl exited {exit_code}:\n{_log_tail(log)}")
        data = json.loads(result_path.read_text(encoding="utf-8"))
        return CrawlResult(
            exit_code=exit_code,
            log=log,
            stats=data["stats"],
            responses=data["responses"],
            response_times=data["response_times"],
            statuses=data["statuses"],
            errbacks=[Errback(**e) for e in data["errbacks"]],
            reached_downloader=data["reached_downloader"],
            start_scheduled_active=data["start_scheduled_active"],
            dropped=data["dropped"],
            items=data["items"],
            close_reason=data["close_reason"],
            cpu_time=data["cpu_time"],
            interrupted=interrupted.is_set(),
            max_rss=data["max_rss"],
            max_rss_at_open=data["max_rss_at_open"],
            probe=data["probe"],
        )


def _config(
    start_urls: Sequence[str | Start],
    settings: Mapping[str, Any] | None,
    hosts: Mapping[str, str] | None,
) -> dict[str, Any]:
    return {
        "settings": {**BASE_SETTINGS, **(settings or {})},
        "start": [_as_start(s).to_json() for s in start_urls],
        "hosts": dict(hosts or {}),
    }


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), *_pythonpath()])}


def _pythonpath() -> list[str]:
    existing = os.environ.get("PYTHONPATH")
    return existing.split(os.pathsep) if existing else []


class RunningCrawl:
    """A crawl like ``run_crawl``'s (the harness spider), as a process the test watches and
    kills: ``start`` it, wait for a line of its output (``wait_for_line``, no polling: a reader
    thread notifies each line), ``kill`` it. Its output goes to ``workdir/crawl.log`` too.

    ``say_idle=True``: the crawl prints ``IDLE_LINE {stats as JSON}`` on every ``spider_idle``
    (``idle_stats`` waits for one whose stats pass a test)."""

    def __init__(self, proc: subprocess.Popen[bytes], log_path: Path) -> None:
        self.proc = proc
        self.log_path = log_path
        self._lines: list[str] = []
        self._ended = False
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    def start(
        cls,
        start_urls: Sequence[str | Start],
        settings: Mapping[str, Any] | None,
        workdir: Path,
        *,
        hosts: Mapping[str, str] | None = None,
        say_idle: bool = False,
    ) -> RunningCrawl:
        workdir.mkdir(parents=True, exist_ok=True)
        config = {
            **_config(start_urls, settings, hosts),
            "say_idle": say_idle,
            "result": str(workdir / "result.json"),
        }
        config_path = workdir / "config.json"
        config_path.write_text(json.dumps(config), encoding="utf-8")
        proc = subprocess.Popen(
            [sys.executable, str(MAIN), str(config_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=_env(),
            cwd=workdir,
        )
        return cls(proc, workdir / "crawl.log")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.log_path.open("wb") as log:
            for raw in self.proc.stdout:
                log.write(raw)
                log.flush()
                with self._changed:
                    self._lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                    self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def wait_for_line(self, wanted: Callable[[str], bool], timeout: float) -> str | None:
        """The first line ``wanted`` accepts, waiting for it up to ``timeout`` seconds (None:
        not within the deadline, or the process ended without printing it)."""
        deadline = time.monotonic() + timeout
        seen = 0
        with self._changed:
            while True:
                for line in self._lines[seen:]:
                    if wanted(line):
                        return line
                seen = len(self._lines)
                left = deadline - time.monotonic()
                if left <= 0 or self._ended:
                    return None
                self._changed.wait(left)

    def idle_stats(
        self, wanted: Callable[[dict[str, Any]], bool], timeout: float
    ) -> dict[str, Any]:
        """The stats of the first ``spider_idle`` (``say_idle``) whose stats ``wanted`` accepts;
        AssertionError (with the log tail) if none comes within ``timeout`` seconds."""

        def accepted(line: str) -> bool:
            return line.startswith(IDLE_LINE + " ") and wanted(_idle_stats(line))

        line = self.wait_for_line(accepted, timeout)
        if line is None:
            raise CrawlTimeout(
                f"no such spider_idle within {timeout} s (or the crawl ended first); log tail:\n"
                + _log_tail(self.log_path.read_text("utf-8", "replace"))
            )
        return _idle_stats(line)

    def kill(self, sig: int = signal.SIGKILL) -> int:
        """Send ``sig`` (SIGKILL) and return the exit code (-sig)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout=30)
        self._reader.join(timeout=30)
        return code


def _idle_stats(line: str) -> dict[str, Any]:
    stats: dict[str, Any] = json.loads(line[len(IDLE_LINE) + 1 :])
    return stats


def _start_interrupt_watcher(
    proc: subprocess.Popen[bytes],
    interrupt: Interrupt | None,
    timeout: float,
    interrupted: threading.Event,
) -> threading.Thread | None:
    if interrupt is None:
        return None

    def reached() -> bool:
        return proc.poll() is not None or (
            interrupt.server.count(interrupt.prefix, prefix=True) >= interrupt.count
        )

    def watch() -> None:
        if interrupt.server.wait_until(reached, timeout) and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            interrupted.set()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread

"""Fixtures for the real-server harness (see tests/_servers.py and tests/_crawl.py)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import scrapy
from _redis_server import RedisServer
from _servers import FtpServer, ScriptedServer, closed_port
from packaging.version import Version

# The differential test's oracle (jwm-robotstxt, Google's robots.cc) has no wheel for Python
# 3.13 and its source build needs the network, so the `test` extra installs it only below
# 3.13. There the module is left out; anywhere else a missing oracle fails the import.
collect_ignore = (
    ["test_differential.py"]
    if sys.version_info >= (3, 13) and importlib.util.find_spec("jwm") is None
    else []
)

# Scrapy 2.14's in-process test helpers (``scrapy.utils.test.get_crawler``) refuse to run
# without an installed reactor; earlier versions need none and later ones run without one.
# There, install the reactor Scrapy's default settings name, as Scrapy's own test suite does.
if Version("2.14") <= Version(scrapy.__version__) < Version("2.15"):
    from scrapy.utils.reactor import install_reactor

    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")


@pytest.fixture
def server_factory() -> Iterator[Callable[..., ScriptedServer]]:
    """``server_factory(tls=False)`` starts another server; all are closed after the test."""
    servers: list[ScriptedServer] = []

    def start(tls: bool = False) -> ScriptedServer:
        server = ScriptedServer.start(tls=tls)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A real redis-server of the test's own, on a free 127.0.0.1 port (tests/_redis_server.py)."""
    with RedisServer.start(tmp_path / "redis") as server:
        yield server


@pytest.fixture
def http_server(server_factory: Callable[..., ScriptedServer]) -> ScriptedServer:
    return server_factory()


@pytest.fixture
def http_server2(server_factory: Callable[..., ScriptedServer]) -> ScriptedServer:
    """A second HTTP server: same host (127.0.0.1), another port."""
    return server_factory()


@pytest.fixture
def https_server(server_factory: Callable[..., ScriptedServer]) -> ScriptedServer:
    return server_factory(tls=True)


@pytest.fixture
def ftp_server() -> Iterator[FtpServer]:
    server = FtpServer.start()
    yield server
    server.close()


@pytest.fixture
def unused_port() -> Iterator[int]:
    """A 127.0.0.1 port that refuses connections for the whole test."""
    with closed_port() as port:
        yield port


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Long tests first: with pytest-xdist their minutes overlap the rest of the suite instead
    of ending it alone on one worker."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def matched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The URLs ``RobotsTxt.allowed`` matches from now on, in order (it still answers)."""
    from scrapy_rep.core.robots_file import RobotsTxt

    urls: list[str] = []
    real = RobotsTxt.allowed

    def counted(self: RobotsTxt, url: str, tokens: Any) -> bool:
        urls.append(url)
        return real(self, url, tokens)

    monkeypatch.setattr(RobotsTxt, "allowed", counted)
    return urls

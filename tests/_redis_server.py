"""A real redis-server for tests: own free 127.0.0.1 port, own temp dir, no persistence.

    with RedisServer.start(tmp_path) as server:
        server.url            # "redis://127.0.0.1:<port>/0"
        server.kill()         # SIGKILL, like a crash
        server.restart()      # same port, empty data set
        server.pause() / server.resume()   # SIGSTOP / SIGCONT: a server that stops answering

Never fakeredis: CI installs redis-server (/usr/bin/redis-server) and the tests fail without it.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    def __init__(self, directory: Path, port: int) -> None:
        self.directory = directory
        self.port = port
        self._proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def start(cls, directory: Path) -> RedisServer:
        directory.mkdir(parents=True, exist_ok=True)
        last_error: Exception | None = None
        for _ in range(5):  # another process may grab the free port before redis binds it
            server = cls(directory, free_port())
            try:
                server._launch()
            except RuntimeError as exc:
                last_error = exc
                continue
            return server
        raise RuntimeError(f"redis-server would not start: {last_error}")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _launch(self) -> None:
        log = (self.directory / "redis.log").open("ab")
        self._proc = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.directory),
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self._proc.returncode}")
            if self.ping():
                return
            time.sleep(0.02)
        self.kill()
        raise RuntimeError("redis-server did not answer PING within 10 s")

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGCONT)
            self._proc.kill()
            self._proc.wait(timeout=10)

    def restart(self) -> None:
        self.kill()
        self._launch()

    def pause(self) -> None:
        assert self._proc is not None
        self._proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self._proc is not None
        self._proc.send_signal(signal.SIGCONT)

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGCONT)
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def __enter__(self) -> RedisServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

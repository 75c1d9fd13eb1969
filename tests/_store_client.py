"""Drive a real store through its Deferred API, in a subprocess running a real Twisted reactor.

The store tests call the blocking backends directly; this covers what the middleware sees: the
Deferreds, the private thread pool, fail-fast while a store is down, and close(). A test can stop
or restart redis-server between two calls.

    with StoreClient("redis://127.0.0.1:6390/0", timeout=0.5, retry_interval=0.2) as client:
        client.call("put", "http://a", {"k": 1}, b"body")   # Reply(value, error, message, seconds)
        client.call("get", "http://a").value                 # {"meta": {"k": 1}, "body": b"body"}
        client.call("acquire_lease", "http://a", "me", 5.0).value  # True
        client.call("get", "http://a").error                 # "StoreUnavailable" while down

Run as a script, it reads one JSON call per line on stdin and answers one JSON line on stdout.
"""

from __future__ import annotations

import base64
import importlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SCRIPT = Path(__file__).resolve()


@dataclass(frozen=True)
class Reply:
    value: Any
    error: str | None
    message: str
    seconds: float


class StoreClient:
    def __init__(self, url: str, **options: float | str) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, str(_SCRIPT), url, json.dumps(options)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def call(self, method: str, *args: Any) -> Reply:
        encoded = [_encode(a) for a in args]
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps({"method": method, "args": encoded}) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        assert line, f"store client died (exit code {self._proc.wait(timeout=10)})"
        answer = json.loads(line)
        return Reply(
            _decode(answer["value"]), answer["error"], answer["message"], answer["seconds"]
        )

    def close(self) -> int:
        """Close the store (through its Deferred), stop the reactor; the subprocess's exit code."""
        if self._proc.poll() is None:
            self.call("close")
            assert self._proc.stdin is not None
            self._proc.stdin.close()
        return self._proc.wait(timeout=20)

    def __enter__(self) -> StoreClient:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc.poll() is None:
            try:
                self.close()
            finally:
                if self._proc.poll() is None:
                    self._proc.kill()
                    self._proc.wait()


def _encode(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(value).decode()}
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"bytes"}:
        return base64.b64decode(value["bytes"])
    if isinstance(value, dict):
        return {k: _decode(v) for k, v in value.items()}
    return value


def _main() -> None:
    import time

    from twisted.internet import stdio
    from twisted.internet.defer import Deferred, maybeDeferred
    from twisted.protocols.basic import LineReceiver
    from twisted.python.failure import Failure

    from scrapy_rep.storage.results import StoredRobots, open_store

    store = open_store(sys.argv[1], **json.loads(sys.argv[2]))

    class Calls(LineReceiver):
        delimiter = b"\n"

        def lineReceived(self, line: bytes) -> None:
            request = json.loads(line)
            method = request["method"]
            args = [_decode(a) for a in request["args"]]
            if method == "put":
                args = [args[0], StoredRobots(meta=args[1], body=args[2])]
            started = time.monotonic()
            d: Deferred[Any] = maybeDeferred(getattr(store, method), *args)
            d.addCallbacks(
                lambda value: self._answer(started, value, None),
                lambda failure: self._answer(started, None, failure),
            )

        def _answer(self, started: float, value: Any, failure: Failure | None) -> None:
            if isinstance(value, StoredRobots):
                value = {"meta": value.meta, "body": value.body}
            answer = {
                "value": _encode_deep(value),
                "error": None if failure is None else type(failure.value).__name__,
                "message": "" if failure is None else str(failure.value),
                "seconds": time.monotonic() - started,
            }
            self.sendLine(json.dumps(answer).encode())  # type: ignore[no-untyped-call]

        def connectionLost(self, reason: Failure | None = None) -> None:
            reactor.stop()

    reactor: Any = importlib.import_module("twisted.internet.reactor")
    stdio.StandardIO(Calls())  # type: ignore[no-untyped-call]
    reactor.run()


def _encode_deep(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _encode_deep(v) for k, v in value.items()}
    return _encode(value)


if __name__ == "__main__":
    _main()

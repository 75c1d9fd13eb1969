"""A real crawl with JOBDIR, killed with SIGKILL while it holds requests, then resumed."""

from __future__ import annotations

import signal
from pathlib import Path

from _crawl import run_crawl
from _servers import Reply, ScriptedServer
from test_middleware_basic import settings
from test_multiprocess_redis import spawn_crawl


def test_kill_9_while_holding_then_resume_fetches_every_held_request(
    http_server: ScriptedServer, http_server2: ScriptedServer, tmp_path: Path
) -> None:
    pending, known = http_server, http_server2
    # The first robots.txt request never gets an answer (the process dies waiting); the next does.
    pending.route("/robots.txt", Reply(hang=True), Reply.text("User-agent: *\nDisallow: /page/2\n"))
    known.robots("User-agent: *\nDisallow:\n")
    job = settings(JOBDIR=str(tmp_path / "job"), REP_STORE="memory://")
    held = [pending.url(f"/page/{i}") for i in range(1, 4)]
    crawl = spawn_crawl([*held, known.url("/page/0")], job, tmp_path / "first")
    try:
        # Start requests are taken in order: once known's page is asked for, all three of
        # pending's were held, and its robots.txt is on its way.
        assert known.wait_for("/page/0", timeout=60)
        assert pending.wait_for("/robots.txt", timeout=60)
        crawl.send_signal(signal.SIGKILL)
        assert crawl.wait(timeout=30) == -signal.SIGKILL
    finally:
        if crawl.poll() is None:
            crawl.kill()
            crawl.wait()
    assert pending.count("/page/", prefix=True) == 0

    # Resumed with no start requests at all: only the JOBDIR can bring them back.
    second = run_crawl([], job)
    assert pending.count("/page/1") == 1
    assert pending.count("/page/3") == 1
    assert pending.count("/page/2") == 0
    assert sorted(second.responses) == [pending.url("/page/1"), pending.url("/page/3")]
    assert second.stat("robotstxt/forbidden_before_schedule") == 1

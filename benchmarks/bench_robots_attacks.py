"""Peak RSS of a crawl whose site attacks it through robots.txt.

    python benchmarks/bench_robots_attacks.py [--old SRC] [--memory-limit MIB] [--timeout S]

Each attack is one real crawl (``tests/_crawl.py``, add-on enabled, defaults) of three pages
of a local server whose /robots.txt redirects to a local resource or sends a compression
bomb. Prints, per attack: the crawl's peak RSS and its baseline (at spider_opened), whether
which of /page/private and /page/early were not fetched (the attacker's local rules
disallow /page/private; a bomb disallows /page/early before the 512,000-byte cut and
/page/private after it), and the log line saying what happened.
``--old SRC`` runs the crawls with the ``scrapy_rep`` package found in SRC instead (e.g.
``git archive 67f4464 scrapy_rep | tar -x -C /tmp/old``), to measure before a change.
Crawls run under an address-space limit (default 2048 MiB), so a runaway allocation ends in
MemoryError rather than swapping; a hang is killed after ``--timeout`` seconds.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

import _crawl  # noqa: E402
from _bombs import CODINGS, bomb  # noqa: E402
from _servers import Reply, ScriptedServer  # noqa: E402

# ROBOTSTXT_OBEY: the harness sets it to False at project priority, above the add-on.
SETTINGS = {"ADDONS": {"scrapy_rep.Addon": 0}, "ROBOTSTXT_OBEY": True, "USER_AGENT": "TestBot/1.0"}
RULES = "User-agent: *\nDisallow: /page/private\n"


def attacks(tmp: Path) -> dict[str, Callable[[], Reply]]:
    rules = tmp / "rules.txt"
    rules.write_text(RULES)
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    found: dict[str, Callable[[], Reply]] = {
        "file: (local rules)": lambda: Reply.redirect(rules.as_uri()),
        "data: URI": lambda: Reply.redirect("data:text/plain,User-agent:%20*%0ADisallow:%20/"),
        "file: FIFO": lambda: Reply.redirect(fifo.as_uri()),
        "file:///dev/zero": lambda: Reply.redirect("file:///dev/zero"),
        "javascript:": lambda: Reply.redirect("javascript:alert(1)"),
        "http://[::1 (bad IPv6)": lambda: Reply.redirect("http://[::1/robots.txt"),
    }
    for coding in CODINGS:
        header = "deflate" if coding == "raw-deflate" else coding
        found[f"{coding} bomb ({len(bomb(coding)):,} B)"] = lambda c=coding, h=header: Reply.text(
            bomb(c), headers={"Content-Encoding": h}
        )
    return found


def wrapper(tmp: Path, old: Path) -> Path:
    """A crawl entry point that imports scrapy_rep from ``old`` first."""
    path = tmp / "old_main.py"
    path.write_text(
        "import runpy, sys\n"
        f"sys.path.insert(0, {str(old)!r})\n"
        f"sys.path.insert(0, {str(TESTS)!r})\n"
        f"sys.argv = [{str(_crawl.MAIN)!r}, *sys.argv[1:]]\n"
        f"runpy.run_path({str(_crawl.MAIN)!r}, run_name='__main__')\n"
    )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, help="directory holding an older scrapy_rep")
    parser.add_argument("--memory-limit", type=int, default=2048, help="MiB of address space")
    parser.add_argument("--timeout", type=float, default=40.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        if args.old is not None:
            _crawl.MAIN = wrapper(tmp, args.old.resolve())
        print(f"{'attack':<30} {'peak RSS':>9} {'baseline':>9}  {'not fetched':<14} outcome")
        for attack, answer in attacks(tmp).items():
            with ScriptedServer.start() as server:
                server.route("/robots.txt", answer())
                urls = [server.url(p) for p in ("/page/public", "/page/private", "/page/early")]
                print(f"{attack:<30} " + run(server, urls, args), flush=True)


def run(server: ScriptedServer, urls: list[str], args: argparse.Namespace) -> str:
    try:
        result = _crawl.run_crawl(
            urls,
            SETTINGS,
            memory_limit=args.memory_limit << 20,
            timeout=args.timeout,
            check=False,
        )
    except _crawl.CrawlTimeout:
        return f"{'-':>9} {'-':>9}  {'-':<14} not finished in {args.timeout:g} s (killed)"
    if result.max_rss is None or result.max_rss_at_open is None:
        return f"{'-':>9} {'-':>9}  {'-':<14} crawl died (exit {result.exit_code})"
    blocked = [p for p in ("private", "early") if server.count(f"/page/{p}") == 0]
    memory_error = "MemoryError" in result.log
    line = _outcome(result.log)
    return (
        f"{result.max_rss >> 20:>6} MiB {result.max_rss_at_open >> 20:>5} MiB  "
        f"{','.join(blocked) or '-':<14} {'MemoryError; ' if memory_error else ''}{line}"
    )


def _outcome(log: str) -> str:
    for pattern in (r"robots\.txt at \S+: (.*)", r"robots\.txt of \S+: (.*)"):
        match = re.search(pattern, log)
        if match:
            return match.group(1)[:110]
    return "(no robots.txt line in the log)"


if __name__ == "__main__":
    main()

"""How often each parser agrees with Google's robots.txt library.

Runs every (token, URL) check of the conformance data copied in
tests/data/conformance (Google's answers for the protego corpus, Google's
own test suite and robotstxt-spec-test) through scrapy_rep, Protego
(Scrapy's default), robotspy and urllib.robotparser, and prints the
agreement rate of each. Run from the repository root:

    python benchmarks/bench_conformance.py
"""

from __future__ import annotations

import gzip
import json
import sys
import tarfile
import urllib.robotparser
from collections.abc import Callable, Iterator
from pathlib import Path

from scrapy_rep import RobotsTxt

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "conformance"

Checker = Callable[[bytes], Callable[[str, str], bool]]


def _scrapy_rep(body: bytes) -> Callable[[str, str], bool]:
    return RobotsTxt.parse(body).allowed


def _protego(body: bytes) -> Callable[[str, str], bool]:
    from protego import Protego

    # As Scrapy's ProtegoRobotParser decodes it.
    parsed = Protego.parse(body.decode("utf-8-sig", errors="ignore"))
    return lambda url, token: bool(parsed.can_fetch(url, token))


def _robotspy(body: bytes) -> Callable[[str, str], bool]:
    import robots

    parser = robots.RobotsParser.from_string(body.decode("utf-8", errors="ignore"))
    return lambda url, token: bool(parser.can_fetch(token, url))


def _urllib(body: bytes) -> Callable[[str, str], bool]:
    parser = urllib.robotparser.RobotFileParser()
    parser.parse(body.decode("utf-8", errors="ignore").splitlines())
    return lambda url, token: parser.can_fetch(token, url)


PARSERS: dict[str, Checker] = {
    "scrapy_rep": _scrapy_rep,
    "protego": _protego,
    "robotspy": _robotspy,
    "urllib.robotparser": _urllib,
}


def _suites() -> Iterator[tuple[str, bytes, list[tuple[str, str, bool]]]]:
    for name in ("google-test-suite.json", "spec-test.json"):
        for case in json.loads((DATA / name).read_text("utf-8"))["cases"]:
            body = (
                bytes.fromhex(case["robotstxt_hex"])
                if case.get("robotstxt") is None
                else case["robotstxt"].encode("utf-8")
            )
            yield name, body, [(case["user_agent"], case["url"], case["allowed"])]
    with tarfile.open(DATA / "protego-corpus.tar.xz") as archive:
        files = {
            m.name: archive.extractfile(m).read()  # type: ignore[union-attr]
            for m in archive.getmembers()
            if m.isfile()
        }
    with gzip.open(DATA / "corpus-dev.jsonl.gz", "rt", encoding="utf-8") as lines:
        for raw in lines:
            entry = json.loads(raw)
            checks = [(t, u, a) for t, u, a in entry["checks"]]
            yield "corpus-dev", files[entry["file"]][:512_000], checks


def main() -> int:
    totals: dict[str, dict[str, list[int]]] = {}
    for suite, body, checks in _suites():
        for name, build in PARSERS.items():
            agree_total = totals.setdefault(name, {}).setdefault(suite, [0, 0, 0])
            try:
                allowed = build(body)
            except Exception:
                agree_total[2] += len(checks)
                agree_total[1] += len(checks)
                continue
            for token, url, expected in checks:
                agree_total[1] += 1
                try:
                    agree_total[0] += allowed(url, token) is expected
                except Exception:
                    agree_total[2] += 1
    suites = ["google-test-suite.json", "spec-test.json", "corpus-dev"]
    print(f"Python {sys.version.split()[0]}; agreement with Google's robots.txt library")
    print(f"{'parser':<20}" + "".join(f"{s:>28}" for s in suites))
    for name, per_suite in totals.items():
        cells = []
        for suite in suites:
            agree, total, errors = per_suite[suite]
            cell = f"{agree}/{total} ({100 * agree / total:.1f}%)"
            if errors:
                cell += f" {errors} err"
            cells.append(f"{cell:>28}")
        print(f"{name:<20}" + "".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())

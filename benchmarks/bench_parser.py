"""Speed and memory of scrapy_rep's parser and matcher against its peers, in one process.

Peers: Protego (Scrapy's default ROBOTSTXT_PARSER), robotspy and urllib.robotparser, fed as
Scrapy feeds them (the body decoded as UTF-8, undecodable bytes dropped; decoding is part of
their parse time). scrapy_rep takes the bytes. Run from the repository root:

    python benchmarks/bench_parser.py [--corpus DIR] [--quick]

The corpus defaults to ../shared/corpus beside the repository. Rows:

- allowed() per call: URLs derived from each file's own rules (wildcards filled, suffixes
  added) plus random paths, seeded; each parser parses each file once and answers a few
  warm-up calls first. Two medians: over files of the mean time per call, and over every
  (file, URL) check of its own mean time.
- parse per file: best of a few runs per file, median over the corpus. "parse + 1st check"
  adds the first allowed() call, since scrapy_rep builds its indexes lazily (what a broad
  crawl pays once per site); "parse + 16 checks" a fresh parse and all of the file's 16 URLs
  (a site crawled a little). Both are best of a few runs per file too.
- build: "pure" or "compiled" (the mypyc build, ``SCRAPY_REP_COMPILE=1 pip install .``), as
  imported; run the script once in each environment to compare them.
- a synthetic 500 KiB robots.txt with ~20,000 rules: allowed() per call (median over URLs).
- worst case: a wildcard pattern ``/*a*a...*a*b`` against a path of 'a's (no match), one warm
  check (scrapy_rep: best of 10, sizes interleaved), at 4 KB, 8 KB and 16 KB; "x2 size" is
  the time ratio when both sizes double (~2 is linear, ~4 quadratic). Peers run this in a
  subprocess with a time limit.
- hostile lines: parsing ~480 KiB of 16 KB colon-less lines made to make a backtracking
  regex quadratic (scrapy_rep: best of 3; peers once, in a subprocess with a time limit).
- memory: bytes retained by one parsed file (tracemalloc), mean over files, after parse and
  after parse + one check.

``--usage`` measures scrapy_rep alone instead: what usage preference lines cost. Each file is
parsed as it is and with a Content-Signal and two Content-Usage lines in its first ``*`` group
(``with_usage_lines``), the two interleaved, best of a few runs each; medians over the corpus,
and "parse + 1st usage()" (a fresh parse and one ``RobotsTxt.usage`` call, which compiles the
group's usage lines).

Peers that raise on a file are counted, not fatal: the failures are printed.
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib.metadata
import platform
import random
import re
import statistics
import subprocess
import sys
import time
import tracemalloc
import urllib.parse
import urllib.robotparser
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scrapy_rep import RobotsTxt

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus"
HOST = "https://www.example.com"
TOKENS = ("benchbot", "googlebot")  # a crawler of its own (usually the * group), and one named
PEER_TIMEOUT = 20.0  # seconds for one peer on one worst-case check

Parsed = Any
Check = Callable[[str, str], Any]  # (url, token) -> allowed


def _decoded(body: bytes) -> str:
    # As Scrapy's ProtegoRobotParser and PythonRobotParser decode a body.
    return body.decode("utf-8", errors="ignore")


def _parse_scrapy_rep(body: bytes) -> Parsed:
    return RobotsTxt.parse(body)


def _parse_protego(body: bytes) -> Parsed:
    from protego import Protego

    return Protego.parse(_decoded(body))


def _parse_robotspy(body: bytes) -> Parsed:
    import robots

    return robots.RobotsParser.from_string(_decoded(body))


def _parse_urllib(body: bytes) -> Parsed:
    parser = urllib.robotparser.RobotFileParser()
    parser.parse(_decoded(body).splitlines())
    return parser


def _check_url_first(parsed: Parsed) -> Check:
    return parsed.allowed if isinstance(parsed, RobotsTxt) else parsed.can_fetch


def _check_token_first(parsed: Parsed) -> Check:
    can_fetch = parsed.can_fetch
    return lambda url, token: can_fetch(token, url)


@dataclass(frozen=True)
class Peer:
    name: str
    parse: Callable[[bytes], Parsed]
    checker: Callable[[Parsed], Check]
    url_first: bool  # check(url, token) natively; else the pairs are passed swapped


PEERS = (
    Peer("scrapy_rep", _parse_scrapy_rep, _check_url_first, True),
    Peer("protego", _parse_protego, _check_url_first, True),
    Peer("robotspy", _parse_robotspy, _check_token_first, False),
    Peer("urllib", _parse_urllib, _check_token_first, False),
)
BY_NAME = {peer.name: peer for peer in PEERS}


@dataclass
class Failures:
    by_peer: dict[str, dict[str, int]] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)

    def add(self, peer: str, what: str, where: str, error: BaseException) -> None:
        counts = self.by_peer.setdefault(peer, {})
        counts[what] = counts.get(what, 0) + 1
        self.examples.setdefault(f"{peer} {what}", f"{where}: {type(error).__name__}: {error}")


@contextmanager
def _no_gc() -> Iterator[None]:
    """Keep the cyclic GC out of the timings; the caller collects between batches."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


# ---------------------------------------------------------------------------------------------
# Inputs

_RULE_VALUE = re.compile(rb"^[ \t]*(?:dis)?allow[ \t]*:[ \t]*([^\s#]+)", re.I | re.M)
_WORDS = ("shop", "blog", "news", "search", "user", "item", "page", "api", "static", "en", "p")
_SAFE = "/%?=&;:@!$'()*+,~-._"


def _segment(rng: random.Random) -> str:
    word = rng.choice(_WORDS)
    return f"{word}-{rng.randrange(1000)}" if rng.random() < 0.5 else word


def _random_path(rng: random.Random) -> str:
    path = "/" + "/".join(_segment(rng) for _ in range(rng.randrange(0, 4)))
    if rng.random() < 0.3:
        path += ".html"
    if rng.random() < 0.2:
        path += f"?id={rng.randrange(10**6)}&sort=asc"
    return path


def _path_from_rule(value: str, rng: random.Random) -> str:
    value = value[:-1] if value.endswith("$") else value
    path = "".join(_segment(rng) if part == "*" else part for part in re.split(r"(\*)", value))
    if rng.random() < 0.5:
        path += _segment(rng)
    return path if path.startswith("/") else "/" + path


def corpus_urls(body: bytes, rng: random.Random, count: int = 16) -> list[str]:
    """Request URLs a crawler would plausibly ask about for this file."""
    values = [
        urllib.parse.quote(v.decode("utf-8", errors="ignore"), safe=_SAFE)
        for v in _RULE_VALUE.findall(body)
    ]
    from_rules = rng.sample(values, min(len(values), count // 2 + count // 4))
    paths = [_path_from_rule(v, rng) for v in from_rules]
    paths += [_random_path(rng) for _ in range(count - len(paths))]
    return [HOST + p for p in paths]


def synthetic_robots(rng: random.Random, limit: int = 511_000) -> tuple[bytes, list[str]]:
    """A ~500 KiB robots.txt of ~20,000 rules of realistic shapes, and URLs to check on it."""
    short = ("en", "de", "tag", "cat", "img", "doc", "api", "u", "p", "s", "shop", "news")
    lines = ["User-agent: *"]
    size = len(lines[0]) + 1
    paths: list[str] = []
    while True:
        section = f"/{rng.choice(short)}{rng.randrange(100)}"
        if rng.random() < 0.7:
            path = f"{section}/{rng.choice(short)}-{rng.randrange(10**4)}"
        else:
            path = f"{section}/{rng.choice(short)}{rng.randrange(100)}/{rng.randrange(10**3)}"
        roll = rng.random()
        if roll < 0.04:
            pattern = f"{section}/*/{rng.randrange(10**3)}"
        elif roll < 0.06:
            pattern = f"/*.{rng.choice(('pdf', 'zip', 'json', 'php'))}$"
        elif roll < 0.08:
            pattern = f"{path}$"
        else:
            pattern = path
        line = f"{'Allow' if rng.random() < 0.1 else 'Disallow'}: {pattern}"
        if size + len(line) + 1 > limit:
            break
        lines.append(line)
        size += len(line) + 1
        paths.append(path)
    urls = [HOST + p + rng.choice(("", "/x", "?q=1")) for p in rng.sample(paths, 300)]
    urls += [HOST + _random_path(rng) for _ in range(300)]
    rng.shuffle(urls)
    return ("\n".join(lines) + "\n").encode(), urls


def hostile_lines(lines: int = 30, width: int = 16_000) -> bytes:
    """~480 KiB of colon-less lines whose two runs of text can both take a \\v: a regex that
    lets both take it backtracks quadratically on each line (scrapy_rep's parser did, before)."""
    line = b"a b" + b"\x0b" * width + b" c\n"
    return b"User-agent: *\n" + line * lines


#: What ``with_usage_lines`` adds: Cloudflare's managed signal and the IETF draft's example rules.
USAGE_LINES = (
    b"Content-Signal: search=yes, ai-train=no, use=reference\n"
    b"Content-Usage: train-ai=n\n"
    b"Content-Usage: /ai-ok/ train-ai=y\n"
)
_GLOBAL_AGENT = re.compile(rb"^[ \t]*user-agent[ \t]*:[ \t]*\*[ \t]*\r?$", re.I | re.M)
_BOM = b"\xef\xbb\xbf"


def with_usage_lines(body: bytes) -> bytes:
    """``body`` with ``USAGE_LINES`` right after its first ``User-agent: *`` line, or, without
    one, after a ``User-agent: *`` line and before an ``Allow: /`` prepended to it (the shape of
    Cloudflare's managed block)."""
    found = _GLOBAL_AGENT.search(body)
    if found is None:
        bom = _BOM if body.startswith(_BOM) else b""
        return bom + b"User-agent: *\n" + USAGE_LINES + b"Allow: /\n\n" + body[len(bom) :]
    end = found.end()
    if body[end : end + 1] == b"\n":
        return body[: end + 1] + USAGE_LINES + body[end + 1 :]
    return body[:end] + b"\n" + USAGE_LINES + body[end:]


def worst_case(size: int) -> tuple[bytes, str]:
    """A ``size``-byte pattern ``/*a*a...*a*b`` and a ``size``-byte path of 'a's."""
    pattern = "/" + "*a" * ((size - 3) // 2) + "*b"
    body = f"User-agent: *\nDisallow: {pattern}\n".encode()
    return body, HOST + "/" + "a" * (size - 1)


# ---------------------------------------------------------------------------------------------
# Measurements


def _timer_overhead_ns(reps: int) -> float:
    """What timing ``reps`` calls of nothing costs: subtracted from every per-check time."""
    samples = []
    for _ in range(201):
        start = time.perf_counter_ns()
        for _ in range(reps):
            pass
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples)


def time_per_check(
    check: Check, pairs: list[tuple[str, str]], reps: int, overhead: float
) -> list[float]:
    """Mean ns per call of ``check`` for each of ``pairs``, after one warm-up round."""
    for a, b in pairs:
        check(a, b)
    times = []
    for a, b in pairs:
        start = time.perf_counter_ns()
        for _ in range(reps):
            check(a, b)
        times.append(max(0.0, time.perf_counter_ns() - start - overhead) / reps)
    return times


def _best_ns(func: Callable[[], object], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter_ns()
        func()
        best = min(best, time.perf_counter_ns() - start)
    return best


def _pairs(peer: Peer, urls: list[str], token: str) -> list[tuple[str, str]]:
    return [(u, token) if peer.url_first else (token, u) for u in urls]


@dataclass
class CorpusResult:
    allowed_ns: dict[str, list[float]]  # per file: mean over its checks
    check_ns: dict[str, list[float]]  # per (file, URL) check
    parse_ns: dict[str, list[float]]
    first_ns: dict[str, list[float]]
    sixteen_ns: dict[str, list[float]]


def _parse_and_check(peer: Peer, body: bytes, pairs: list[tuple[str, str]]) -> None:
    """A fresh parse, then ``pairs`` checked in order."""
    check = peer.checker(peer.parse(body))
    for a, b in pairs:
        check(a, b)


def run_corpus(
    files: list[tuple[str, bytes]], failures: Failures, parse_reps: int, call_reps: int
) -> CorpusResult:
    rng = random.Random(20261122)
    allowed: dict[str, list[float]] = {p.name: [] for p in PEERS}
    checks: dict[str, list[float]] = {p.name: [] for p in PEERS}
    overhead = _timer_overhead_ns(call_reps)
    parse: dict[str, list[float]] = {p.name: [] for p in PEERS}
    first: dict[str, list[float]] = {p.name: [] for p in PEERS}
    sixteen: dict[str, list[float]] = {p.name: [] for p in PEERS}
    for index, (name, body) in enumerate(files):
        if index % 256 == 255:
            gc.collect()
        urls = corpus_urls(body, rng)
        token = TOKENS[index % len(TOKENS)]
        row_allowed: dict[str, list[float]] = {}
        row_parse: dict[str, float] = {}
        row_first: dict[str, float] = {}
        row_sixteen: dict[str, float] = {}
        for peer in PEERS:
            try:
                row_parse[peer.name] = _best_ns(functools.partial(peer.parse, body), parse_reps)
                # A fresh parse for the first check: scrapy_rep indexes lazily.
                pairs = _pairs(peer, urls, token)
                row_first[peer.name] = _best_ns(
                    functools.partial(_parse_and_check, peer, body, pairs[:1]), parse_reps
                )
                row_sixteen[peer.name] = _best_ns(
                    functools.partial(_parse_and_check, peer, body, pairs[:16]), parse_reps
                )
                check = peer.checker(peer.parse(body))
            except Exception as error:
                failures.add(peer.name, "parse", name, error)
                continue
            try:
                row_allowed[peer.name] = time_per_check(
                    check, _pairs(peer, urls, token), call_reps, overhead
                )
            except Exception as error:
                failures.add(peer.name, "allowed", name, error)
        # Medians over the files every parser handled, so the ratios compare like with like.
        if len(row_parse) == len(PEERS):
            for peer_name, value in row_parse.items():
                parse[peer_name].append(value)
                first[peer_name].append(row_first[peer_name])
                sixteen[peer_name].append(row_sixteen[peer_name])
        if len(row_allowed) == len(PEERS):
            for peer_name, times in row_allowed.items():
                allowed[peer_name].append(statistics.fmean(times))
                checks[peer_name].extend(times)
    return CorpusResult(allowed, checks, parse, first, sixteen)


def run_synthetic(body: bytes, urls: list[str], quick: bool) -> dict[str, float]:
    """Median ns per allowed() call on the big synthetic file, per parser."""
    result: dict[str, float] = {}
    for peer in PEERS:
        parsed = peer.parse(body)
        check = peer.checker(parsed)
        fast = peer.name == "scrapy_rep"
        sample = urls if fast else urls[: 20 if quick else 60]
        pairs = _pairs(peer, sample, TOKENS[0])
        reps = 20 if fast else 2
        with _no_gc():
            per_url = time_per_check(check, pairs, reps, _timer_overhead_ns(reps))
        result[peer.name] = statistics.median(per_url)
    return result


def _worst_check_ns(peer: Peer, size: int) -> float:
    body, url = worst_case(size)
    check = peer.checker(peer.parse(body))
    check(*_pairs(peer, [HOST + "/warm"], TOKENS[0])[0])  # build lazy state off the clock
    pair = _pairs(peer, [url], TOKENS[0])[0]
    start = time.perf_counter_ns()
    if check(*pair) is not True:
        raise AssertionError(f"{peer.name}: the worst-case path should be allowed")
    return time.perf_counter_ns() - start


def _hostile_parse_ns(peer: Peer) -> float:
    body = hostile_lines()
    start = time.perf_counter_ns()
    peer.parse(body)
    return time.perf_counter_ns() - start


def _in_subprocess(
    option: str, peer: Peer, argument: str, failures: Failures, what: str
) -> float | None:
    """``--<option> PEER ARGUMENT`` run in a child with a time limit: ns, or None on failure.

    A peer may backtrack for ages inside re, which no signal interrupts.
    """
    command = [sys.executable, __file__, f"--{option}", peer.name, argument]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=PEER_TIMEOUT, check=True
        )
        return float(done.stdout.split()[-1])
    except subprocess.TimeoutExpired as error:
        failures.add(peer.name, f"{what} over {PEER_TIMEOUT:.0f} s", argument, error)
    except subprocess.CalledProcessError as error:
        error_tail = (error.stderr or "").strip().splitlines()[-1:]
        failures.add(peer.name, what, argument, RuntimeError(error_tail))
    return None


def run_hostile_parse(failures: Failures) -> dict[str, float | None]:
    """ns to parse ``hostile_lines()``: scrapy_rep best of 3 here, peers once in a child."""
    result: dict[str, float | None] = {}
    for peer in PEERS:
        if peer.name == "scrapy_rep":
            result[peer.name] = min(_hostile_parse_ns(peer) for _ in range(3))
        else:
            result[peer.name] = _in_subprocess("hostile-peer", peer, "parse", failures, "parse")
    return result


def run_worst(sizes: tuple[int, ...], failures: Failures) -> dict[str, list[float | None]]:
    """ns for one warm worst-case check at each size; None = failed or over the time limit."""
    result: dict[str, list[float | None]] = {}
    # scrapy_rep in this process: sizes interleaved over 10 rounds, best per size, so that a
    # slow moment of a shared machine cannot fall on one size only.
    best = dict.fromkeys(sizes, float("inf"))
    for _ in range(10):
        for size in sizes:
            best[size] = min(best[size], _worst_check_ns(PEERS[0], size))
    for peer in PEERS:
        times: list[float | None] = []
        for size in sizes:
            if times and times[-1] is None:
                times.append(None)  # it only gets worse
                continue
            if peer.name == "scrapy_rep":
                times.append(best[size])
                continue
            times.append(_in_subprocess("worst-peer", peer, str(size), failures, "worst case"))
        result[peer.name] = times
    return result


@dataclass
class UsageResult:
    parse_ns: list[float]  # per file, as it is
    with_lines_ns: list[float]  # per file, with USAGE_LINES
    usage_ns: list[float]  # per file with USAGE_LINES: a fresh parse and one usage() call


def _parse_and_usage(body: bytes, url: str) -> None:
    RobotsTxt.parse(body).usage(url, TOKENS[0])


def run_usage(files: list[tuple[str, bytes]], reps: int) -> UsageResult:
    """scrapy_rep's parse per file with and without usage lines, interleaved (``--usage``)."""
    result = UsageResult([], [], [])
    for index, (_name, body) in enumerate(files):
        if index % 256 == 255:
            gc.collect()
        lines = with_usage_lines(body)
        url = HOST + "/ai-ok/page"
        best = [float("inf")] * 3
        # One round of each in turn, so a slow moment of the machine hits both alike.
        for _ in range(reps):
            best[0] = min(best[0], _best_ns(functools.partial(RobotsTxt.parse, body), 1))
            best[1] = min(best[1], _best_ns(functools.partial(RobotsTxt.parse, lines), 1))
            best[2] = min(best[2], _best_ns(functools.partial(_parse_and_usage, lines, url), 1))
        result.parse_ns.append(best[0])
        result.with_lines_ns.append(best[1])
        result.usage_ns.append(best[2])
    return result


def print_usage(result: UsageResult) -> None:
    without = statistics.median(result.parse_ns)
    with_lines = statistics.median(result.with_lines_ns)
    ratios = [b / a for a, b in zip(result.parse_ns, result.with_lines_ns, strict=True) if a]
    print(f"{'parse, corpus':<40}{_fmt_ns(without):>12}")
    print(f"{'parse, corpus + usage lines':<40}{_fmt_ns(with_lines):>12}")
    print(f"{'  ratio of the medians':<40}{with_lines / without:>12.3f}")
    print(f"{'  median of the per-file ratios':<40}{statistics.median(ratios):>12.3f}")
    first_usage = statistics.median(result.usage_ns)
    print(f"{'parse + 1st usage(), + usage lines':<40}{_fmt_ns(first_usage):>12}")


def run_memory(files: list[tuple[str, bytes]], failures: Failures) -> dict[str, tuple[int, int]]:
    """Mean bytes retained per file (after parse, after parse + one check), per parser."""
    result: dict[str, tuple[int, int]] = {}
    rng = random.Random(7)
    urls = [HOST + _random_path(rng) for _ in range(len(files))]
    for peer in PEERS:
        # Warm module-level caches (re, imports) so they are not charged to the first file.
        peer.checker(peer.parse(files[0][1]))(*_pairs(peer, urls[:1], TOKENS[0])[0])
        parsed_total = checked_total = counted = 0
        # With the GC off, everything a file allocates stays in generation 0, so a cheap
        # gen-0 collection frees exactly its cyclic garbage.
        tracemalloc.start()
        try:
            gc.disable()
            for (name, body), url in zip(files, urls, strict=True):
                base = tracemalloc.get_traced_memory()[0]
                try:
                    parsed = peer.parse(body)
                    gc.collect(0)
                    after_parse = tracemalloc.get_traced_memory()[0]
                    peer.checker(parsed)(*_pairs(peer, [url], TOKENS[0])[0])
                except Exception as error:
                    failures.add(peer.name, "memory", name, error)
                    continue
                gc.collect(0)
                after_check = tracemalloc.get_traced_memory()[0]
                parsed_total += after_parse - base
                checked_total += after_check - base
                counted += 1
                del parsed
        finally:
            gc.enable()
            tracemalloc.stop()
        result[peer.name] = (parsed_total // max(counted, 1), checked_total // max(counted, 1))
    return result


# ---------------------------------------------------------------------------------------------
# Output


def _fmt_ns(ns: float | None) -> str:
    if ns is None:
        return "n/a"
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1_000:.1f} µs"
    if ns < 1_000_000_000:
        return f"{ns / 1_000_000:.1f} ms"
    return f"{ns / 1_000_000_000:.2f} s"


def _fmt_bytes(n: float | None) -> str:
    if n is None:
        return "n/a"
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n:.0f} B"


def _row(label: str, values: Mapping[str, float | None], fmt: Callable[[float | None], str]) -> str:
    base = values.get("scrapy_rep")
    cells = []
    for peer in PEERS:
        value = values.get(peer.name)
        text = fmt(value)
        if peer.name != "scrapy_rep" and value is not None and base:
            text += f" ({value / base:.1f}x)"
        cells.append(f"{text:>20}")
    return f"{label:<28}" + "".join(cells)


def _environment() -> str:
    versions = []
    for dist in ("scrapy-rep", "protego", "robotspy"):
        try:
            versions.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{dist} (not installed)")
    import scrapy_rep.core.matcher

    compiled = not (scrapy_rep.core.matcher.__file__ or "").endswith(".py")
    return (
        f"scrapy_rep build: {'compiled (mypyc)' if compiled else 'pure Python'}\n"
        f"Python {platform.python_version()} ({platform.python_implementation()}) on "
        f"{platform.platform()}, {platform.processor() or platform.machine()}\n"
        + ", ".join(versions)
        + f", urllib.robotparser (stdlib {platform.python_version()})"
    )


def load_corpus(root: Path, stride: int) -> list[tuple[str, bytes]]:
    paths = sorted(p for p in root.rglob("*") if p.is_file() and p.parent != root)
    return [(str(p.relative_to(root)), p.read_bytes()) for p in paths[::stride]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--quick", action="store_true", help="a sample of the corpus, fewer runs")
    parser.add_argument(
        "--usage",
        action="store_true",
        help="only scrapy_rep's parse with and without usage preference lines",
    )
    parser.add_argument("--worst-peer", nargs=2, metavar=("PEER", "SIZE"), help=argparse.SUPPRESS)
    parser.add_argument("--hostile-peer", nargs=2, metavar=("PEER", "_"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worst_peer:
        print(_worst_check_ns(BY_NAME[args.worst_peer[0]], int(args.worst_peer[1])))
        return 0
    if args.hostile_peer:
        print(_hostile_parse_ns(BY_NAME[args.hostile_peer[0]]))
        return 0

    started = time.perf_counter()
    quick = args.quick
    files = load_corpus(args.corpus, stride=8 if quick else 1)
    if not files:
        parser.error(f"no files under {args.corpus}")
    memory_files = files[:: 2 if quick else 1]
    print(_environment())
    if args.usage:
        print(f"corpus: {args.corpus} — {len(files)} files" + (" (--quick)" if quick else ""))
        with _no_gc():
            usage = run_usage(files, reps=3 if quick else 5)
        print()
        print_usage(usage)
        print(f"total {time.perf_counter() - started:.0f} s")
        return 0
    print(
        f"corpus: {args.corpus} — {len(files)} files for speed, {len(memory_files)} for memory"
        + (" (--quick)" if quick else "")
    )

    failures = Failures()
    with _no_gc():
        corpus = run_corpus(
            files, failures, parse_reps=2 if quick else 3, call_reps=2 if quick else 4
        )
    body, urls = synthetic_robots(random.Random(500))
    synthetic = run_synthetic(body, urls, quick)
    sizes = (4096, 8192, 16384)
    worst = run_worst(sizes, failures)
    hostile = run_hostile_parse(failures)
    memory = run_memory(memory_files, failures)

    def median(values: dict[str, list[float]]) -> dict[str, float | None]:
        return {k: statistics.median(v) if v else None for k, v in values.items()}

    def scaling(times: list[float | None]) -> float | None:
        small, big = times[-2], times[-1]
        return big / small if small and big else None

    rules = RobotsTxt.parse(body).rule_count
    print()
    print(f"{'':<28}" + "".join(f"{peer.name:>20}" for peer in PEERS))
    counted = len(corpus.allowed_ns["scrapy_rep"])
    print(_row(f"allowed(), per file ({counted})", median(corpus.allowed_ns), _fmt_ns))
    counted = len(corpus.check_ns["scrapy_rep"])
    print(_row(f"allowed(), per check ({counted})", median(corpus.check_ns), _fmt_ns))
    print(_row("parse, corpus", median(corpus.parse_ns), _fmt_ns))
    print(_row("parse + 1st check, corpus", median(corpus.first_ns), _fmt_ns))
    print(_row("parse + 16 checks, corpus", median(corpus.sixteen_ns), _fmt_ns))
    print(_row(f"allowed(), {len(body) // 1024} KiB/{rules} rules", synthetic, _fmt_ns))
    for size, label in zip(sizes, ("4 KB", "8 KB", "16 KB"), strict=True):
        at = {k: v[sizes.index(size)] for k, v in worst.items()}
        print(_row(f"worst case {label}", at, _fmt_ns))
    print(
        f"{'worst case x2 size (8->16)':<28}"
        + "".join(
            f"{(f'x{r:.1f}' if (r := scaling(worst[p.name])) is not None else 'n/a'):>20}"
            for p in PEERS
        )
    )
    print(_row(f"parse, {len(hostile_lines()) // 1024} KiB hostile lines", hostile, _fmt_ns))
    print(_row("memory/file, parsed", {k: v[0] for k, v in memory.items()}, _fmt_bytes))
    print(_row("memory/file, +1 check", {k: v[1] for k, v in memory.items()}, _fmt_bytes))
    print("(ratios: peer / scrapy_rep; > 1 means scrapy_rep is faster or smaller)")
    print()
    if failures.by_peer:
        print("failures (not fatal):")
        for peer_name, counts in failures.by_peer.items():
            print(f"  {peer_name}: " + ", ".join(f"{what} {n}" for what, n in counts.items()))
        for key, example in failures.examples.items():
            print(f"  e.g. {key}: {example[:160]}")
    else:
        print("failures: none")
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

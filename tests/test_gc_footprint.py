"""What a broad crawl keeps per site is invisible to the cyclic GC: a parsed robots.txt (after
the crawler's checks) and a memory-store entry add a few GC-tracked objects each, however many
rules the file has. Every full collection walks every tracked object, and a 10,000-site crawl
keeps one parsed file and one store entry per site (README, Benchmarks)."""

from __future__ import annotations

import gc
from collections.abc import Callable

from scrapy_rep import RobotsTxt
from scrapy_rep.core.policy import Entry, Fetch, Limits, record
from scrapy_rep.storage.results import MemoryStore, StoredRobots

TOKENS = ("mybot", "scrapy")


def tracked_growth(build: Callable[[], object]) -> int:
    """How many more objects the GC tracks while what ``build`` returns is alive."""
    build()  # caches and interned names first
    gc.collect()
    before = len(gc.get_objects())
    kept = build()
    # A collection untracks the tuples and dicts that hold only untracked objects; a nested
    # one only once its contents are (a level per collection at worst: the indexes nest 4).
    for _ in range(5):
        gc.collect()
    growth = len(gc.get_objects()) - before
    del kept
    return growth


def asked(body: bytes) -> RobotsTxt:
    """``body`` parsed and asked about as a crawl does: enough checks to build its indexes."""
    robots = RobotsTxt.parse(body)
    for path in ("/", "/page/1", "/page/2", "/a/b?c=d", "/x.pdf"):
        robots.allowed("https://example.com" + path, TOKENS)
        robots.allowed("https://example.com" + path, None)
    return robots


def many_rules(groups: int, rules: int) -> bytes:
    lines = []
    for g in range(groups):
        lines.append(f"User-agent: {'*' if g == 0 else f'bot{g}'}")
        lines.append("User-agent: scrapy" if g == 1 else "User-agent: other")
        for r in range(rules):
            lines.append(f"Disallow: /dir{g}/{r}/")
            lines.append(f"Allow: /dir{g}/{r}/*.html$")
            lines.append(f"Disallow: /*?q{r}=*&sort=")
    return "\n".join(lines).encode()


def test_a_parsed_file_keeps_a_few_tracked_objects_per_group_whatever_its_rules() -> None:
    small = tracked_growth(lambda: asked(many_rules(groups=3, rules=1)))
    large = tracked_growth(lambda: asked(many_rules(groups=3, rules=2_000)))
    # RobotsTxt, its lists, three Groups, the two RuleSets asked and their indexes' few
    # containers: the rules themselves (and their index nodes) are tuples of strings and
    # numbers, which the GC stops tracking. (6,000 rules kept them all tracked: 10,233.)
    assert large <= 40, large
    assert large <= max(small, 0) + 30, (small, large)


def test_a_memory_store_entry_keeps_no_tracked_object() -> None:
    fetch = Fetch("ok", 200, redirects=("https://example.com/robots.txt",))
    entry = record(None, fetch, 0, Limits())
    meta = entry.to_meta()
    body = b"User-agent: *\nDisallow: /private/\n" * 50

    def filled() -> MemoryStore:
        store = MemoryStore(clock=lambda: 0.0)
        for i in range(1_000):
            store.put(f"https://site{i}.example", StoredRobots(meta, body))
        return store

    # The store itself, its dicts and its bounded mapping: a few objects, none per entry.
    assert tracked_growth(filled) <= 10
    store = filled()
    read: list[StoredRobots | None] = []
    store.get("https://site7.example").addCallback(read.append)
    assert read == [StoredRobots(meta, body)]
    assert read[0] is not None and Entry.from_meta(read[0].meta) == entry

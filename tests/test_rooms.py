"""Where things may be read: the admission's inputs only in the decision module, origin state
only in the admission, the room and their owners, Scrapy's internals only in ``_compat``.

The decision (``crawl/_admission.py``) is the one place that tests a per-origin condition: a
robots.txt state's serving kind, the pause table, the probe mark and a resolver's ``state()``
are read there and by their owners (``_cache``, ``_resolver``, ``_pauses``), by the judge the
decision asks (``_verdict``) and by the log's words (``_events``), nowhere else. Every private
Scrapy name (and every internal one without an underscore) is reached through ``_compat``, each
function of which says the Scrapy releases its branches are for.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import scrapy

import scrapy_rep
from scrapy_rep.crawl import _compat

PACKAGE = Path(scrapy_rep.__file__).parent
MODULES = sorted(PACKAGE.rglob("*.py"))

#: The admission's inputs, and who may read them besides the decision module.
DECISION_INPUTS = {
    "a state's serving kind": re.compile(r"serving\.kind"),
    "the pause table": re.compile(r"\.paused\b(?!\()"),
    "the probe mark": re.compile(r"\bPROBE_META\b"),
    "a resolver's state()": re.compile(r"resolver\.state\("),
}
OWNERS = {"_admission", "_cache", "_resolver", "_pauses", "_verdict", "_events"}

#: Who reads origin state (robots.txt, usage documents, pauses, tokens, download slots): the
#: admission, the room (the holds and the slot waits), the caches, the resolvers and the pauses
#: that own it, the judge the admission asks (``_verdict``), and ``_compat`` (Scrapy's slot).
#: The other modules are handed what they need; the pure core and the storage backends, which
#: define the rules and keep the bytes, are not the crawl's state readers.
STATE_OWNERS = {
    "_admission",
    "_room",
    "_cache",
    "_resolver",
    "_pauses",
    "_verdict",
    "_compat",
}
STATE_MARKS = {"ADMITTED", "PROBE_META", "SEEN_META", "DONT_PAUSE_META"}
STATE_CALLS = {"peek", "state", "why", "unclaim"}
SLOT_LIMITS = {"delay", "concurrency", "jitter"}
#: The statuses that say "slow down" (``core.policy.SLOW_DOWN``).
SLOW_DOWN_STATUSES = {429, 503}

#: Scrapy internals that have no underscore: the downloader's and the engine's bookkeeping.
INTERNALS = {"active", "slots", "queue", "nextcall", "enqueue_scrape", "df", "transferring"}


def _source(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("what", sorted(DECISION_INPUTS))
def test_the_admissions_inputs_are_read_by_the_decision_and_their_owners_only(what: str) -> None:
    pattern = DECISION_INPUTS[what]
    readers = sorted(
        str(path.relative_to(PACKAGE))
        for path in MODULES
        if path.stem not in OWNERS and pattern.search(_source(path))
    )
    assert readers == [], f"{what} read outside the decision module"


def _state_reads(source: str) -> list[str]:
    """What ``source`` reads of origin state: a meta mark named, ``.peek(``, ``.state(``,
    ``.why(``, ``.unclaim(`` called, ``.paused`` read, a slot's ``delay`` / ``concurrency`` /
    ``jitter`` (of anything named ``*slot*``), a status 429 or 503 written."""
    tree = ast.parse(source)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in STATE_MARKS:
            found.append(node.id)
        elif isinstance(node, ast.alias) and node.name in STATE_MARKS:
            found.append(node.name)
        elif isinstance(node, ast.Attribute):
            owner = node.value
            while isinstance(owner, ast.Subscript):  # ``slots[key].delay``
                owner = owner.value
            named = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
            if node.attr in STATE_MARKS:
                found.append(node.attr)
            elif node.attr in STATE_CALLS and id(node) in called:
                found.append(f".{node.attr}(")
            elif node.attr == "paused" and id(node) not in called:
                found.append(".paused")
            elif node.attr in SLOT_LIMITS and "slot" in named.lower():
                found.append(f"slot.{node.attr}")
        elif (
            isinstance(node, ast.Constant)
            and type(node.value) is int
            and node.value in SLOW_DOWN_STATUSES
        ):
            found.append(str(node.value))
    return found


def test_origin_state_is_read_by_the_admission_the_room_and_its_owners_only() -> None:
    readers = {}
    for path in MODULES:
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in ("core", "storage") or path.stem in STATE_OWNERS:
            continue
        found = _state_reads(_source(path))
        if found:
            readers[str(relative)] = sorted(set(found))
    assert readers == {}


#: A planted module for each thing the check looks for.
PLANTED = {
    "ADMITTED": "from scrapy_rep.crawl._admission import ADMITTED\n",
    "PROBE_META": "probe = request.meta.get(PROBE_META)\n",
    "SEEN_META": "request.meta[_room.SEEN_META] = mark\n",
    "DONT_PAUSE_META": "exempt = DONT_PAUSE_META in request.meta\n",
    ".peek(": "state = self._resolver.peek(origin)\n",
    ".state(": "state = resolver.state(origin, now, request)\n",
    ".why(": "paused = self._pauses.why(origin)\n",
    ".unclaim(": "self._resolver.unclaim(origin)\n",
    ".paused": "if key in admission.paused:\n    pass\n",
    "slot.delay": "slot.delay = 0.0\n",
    "slot.concurrency": "limit = self._slot.concurrency\n",
    "slot.jitter": "engine.downloader.slots[key].jitter = 0\n",
    "429": "busy = response.status == 429\n",
    "503": "busy = status in (500, 503)\n",
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_the_origin_state_check_finds_each_read_in_a_planted_module(name: str) -> None:
    assert name in _state_reads(PLANTED[name])
    # Calling a method named ``paused``, or another object's ``delay``, is no read of state.
    assert _state_reads("admission.paused(origin, request, now)\nconfig.delay = 1\n") == []


#: The reasons a waiting request is let go for (``DropReason``): decided by the admission
#: (``Admission.given_up``, ``timed_out``, ``closing``), which the room asks on its tick and at
#: the close. ``_events`` words and counts them, ``_drops`` delivers them, ``exceptions`` names
#: them; ``_compat`` reads Scrapy's own ``closing`` attribute.
WAIT_REASONS = {"gave_up", "pause_gave_up", "hold_timeout", "closing"}
REASON_OWNERS = {"_admission", "_events", "_drops", "exceptions", "_compat"}


def _wait_reasons(source: str) -> list[str]:
    """The waiting requests' drop reasons ``source`` writes (as string constants)."""
    return [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and node.value in WAIT_REASONS
    ]


def test_the_admission_decides_why_a_waiting_request_is_let_go() -> None:
    writers = {
        str(path.relative_to(PACKAGE)): sorted(set(found))
        for path in MODULES
        if path.parent.name == "crawl"
        and path.stem not in REASON_OWNERS
        and (found := _wait_reasons(_source(path)))
    }
    assert writers == {}


@pytest.mark.parametrize(
    "planted",
    [
        'self._stop_waiting(origin, expired, [], why, "hold_timeout")\n',
        'return "gave_up", why\n',
        'if reason == "pause_gave_up":\n    count()\n',
        'Why("closing", message, origin)\n',
    ],
)
def test_the_reason_check_finds_a_reason_written_in_a_planted_module(planted: str) -> None:
    assert _wait_reasons(planted)


def _scrapy_private_names() -> set[str]:
    """Every ``_name`` Scrapy defines: its private methods, attributes and module names."""
    names: set[str] = set()
    for path in Path(scrapy.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(_source(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.Name):
                names.add(node.id)
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def _own_names() -> set[str]:
    """Every ``_name`` scrapy_rep defines itself (its own privates may share a Scrapy name)."""
    names: set[str] = set()
    for path in MODULES:
        for node in ast.walk(ast.parse(_source(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def test_scrapys_private_and_internal_names_are_reached_through_compat_only() -> None:
    private = _scrapy_private_names() - _own_names()
    found = []
    for path in MODULES:
        if path.stem == "_compat":
            continue
        tree = ast.parse(_source(path))
        # Called, an internal's name is someone else's method (a DelayedCall's ``active()``).
        called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("scrapy."):
                found += [(path.name, a.name) for a in node.names if a.name.startswith("_")]
            elif isinstance(node, ast.Attribute):
                owner = node.value
                if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                    continue
                internal = node.attr in INTERNALS and id(node) not in called
                if node.attr in private or internal:
                    found.append((path.name, node.attr))
    assert found == []


def test_the_compat_check_sees_what_compat_uses() -> None:
    # The check above would find these if they were used elsewhere: it is not vacuous.
    private = _scrapy_private_names() - _own_names()
    source = _source(Path(_compat.__file__))
    used = {name for name in private if re.search(rf"\.{name}\b|[\"']{name}[\"']", source)}
    assert used  # a private name of the running Scrapy (``_slot``, ``_get_slot_key``…)
    assert all(re.search(rf"\.{name}\b", source) for name in ("active", "nextcall"))


def test_every_compat_function_says_which_scrapy_releases_it_is_for() -> None:
    undated = []
    for name in _compat.__all__:
        found = getattr(_compat, name)
        if not callable(found):
            continue
        doc = found.__doc__ or ""
        if not re.search(r"Scrapy (>= )?2\.\d+|[Ee]very version", doc):
            undated.append(name)
    assert undated == []

"""Helpers the crawl's parts share have one definition each, checked by name over
the modules' source (``ast``): the others import it and define no copy of their own."""

from __future__ import annotations

import ast
import logging
from collections import Counter
from pathlib import Path

import pytest
from test_crawl_parts import Stats
from twisted.python.failure import Failure

import scrapy_rep.crawl
from scrapy_rep.crawl import _events, _fetch, _verdict
from scrapy_rep.crawl._events import Events, logger

CRAWL = Path(scrapy_rep.crawl.__file__).parent


def _defined(module: str) -> set[str]:
    """Names ``module`` of scrapy_rep.crawl defines at its top level or in its classes."""
    tree = ast.parse((CRAWL / f"{module}.py").read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(target.id for target in targets if isinstance(target, ast.Name))
    return names


def _imported(module: str) -> dict[str, str]:
    """Name -> module of each ``from scrapy_rep.crawl.X import name`` in ``module``."""
    tree = ast.parse((CRAWL / f"{module}.py").read_text(encoding="utf-8"))
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.update((alias.name, node.module) for alias in node.names)
    return found


# (name, the module defining it, the modules using it)
ONE_DEFINITION = [
    ("Known", _verdict, ["_admission"]),
    ("header_values", _fetch, ["_page_answers"]),
    ("withdraw", _events, ["_resolver", "_pauses"]),
    ("guarded", _events, ["_resolver", "_pauses"]),
]
# The copies they replaced: defined nowhere any more.
COPIES = ["_headers", "_withdraw", "_guard"]


@pytest.mark.parametrize(("name", "home", "users"), ONE_DEFINITION)
def test_a_shared_helper_is_defined_once_and_imported(
    name: str, home: object, users: list[str]
) -> None:
    home_name = getattr(home, "__name__", "")
    assert hasattr(home, name)
    modules = sorted(path.stem for path in CRAWL.glob("*.py"))
    defining = [module for module in modules if name in _defined(module)]
    assert defining == [home_name.rsplit(".", 1)[1]]
    for user in users:
        assert _imported(user).get(name) == home_name, user


def test_the_copies_are_gone() -> None:
    counts = Counter(
        name for path in CRAWL.glob("*.py") for name in _defined(path.stem) if name in COPIES
    )
    assert counts == Counter()


def test_a_failed_resolution_names_its_document(caplog: pytest.LogCaptureFixture) -> None:
    events = Events(Stats(), lambda: None)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        failure = Failure()
    with caplog.at_level(logging.DEBUG, logger=logger.name):
        events.resolve_failed("tdmrep.json", "http://example.com", failure, first=True)
        events.resolve_failed("tdmrep.json", "http://example.com", failure, first=False)
    lines = [record.getMessage() for record in caplog.records]
    assert lines[0] == (
        "Resolving tdmrep.json of http://example.com failed (retried, backing off): boom"
    )
    assert lines[1] == "Resolving tdmrep.json of http://example.com failed again"
    assert "robots.txt" not in " ".join(lines)

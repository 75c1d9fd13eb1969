"""No warning is silenced in the package or the example project: a deprecation scrapy-rep
causes must be fixed, not filtered (tests/test_example_project.py runs the demo and
``scrapy robots`` with ScrapyDeprecationWarning as an error and counts every warning)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: Whatever changes Python's warning filters (``-W`` aside, which a user chooses).
FILTERS = re.compile(r"\b(?:filterwarnings|simplefilter|catch_warnings|resetwarnings)\b")


@pytest.mark.parametrize("tree", ["scrapy_rep", "example_project"])
def test_no_warning_filter_in(tree: str) -> None:
    root = REPO / tree
    sources = [
        path
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.suffix in (".py", ".pyi", ".cfg", ".toml", ".ini", ".txt")
    ]
    assert any(path.suffix == ".py" for path in sources)
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sources
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if FILTERS.search(line)
    ]
    assert found == []

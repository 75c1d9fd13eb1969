"""The pure core imports neither Scrapy nor Twisted, checked where it counts: in a fresh
interpreter (the import contracts of ``tox -e lint`` check the same statically)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import scrapy_rep.core


def test_the_core_imports_neither_scrapy_nor_twisted() -> None:
    modules = sorted(
        f"scrapy_rep.core.{info.name}" for info in pkgutil.iter_modules(scrapy_rep.core.__path__)
    )
    assert "scrapy_rep.core.parser" in modules and "scrapy_rep.core.explain" in modules
    code = (
        f"import sys, {', '.join(modules)}; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('scrapy', 'twisted')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"

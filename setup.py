"""The optional compiled build: ``SCRAPY_REP_COMPILE=1 pip install .`` compiles the
pure core's modules, unchanged, with mypyc, the way charset-normalizer does. Without the variable
(the default, and what README's install says) nothing is compiled. If compiling fails, the build
says so and the package installs pure: the .py modules are always shipped."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

#: The pure core: no Scrapy imports, fully typed (mypy strict), the hot path of every check.
COMPILED = ["core/parser.py", "core/matcher.py", "core/robots_file.py", "core/tokens.py"]


class _OptionalBuildExt(build_ext):
    """build_ext that leaves the pure package in place when the compiler fails."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # any compiler or linker failure
            for output in self.get_outputs():
                Path(output).unlink(missing_ok=True)
            print(f"scrapy-rep: compiling failed ({exc}); installing pure Python", file=sys.stderr)


def _ext_modules() -> list[Any]:
    if os.environ.get("SCRAPY_REP_COMPILE") != "1":
        return []
    try:
        from mypyc.build import mypycify

        # Modules reached through scrapy_rep/__init__ (the Scrapy glue) are read, not
        # checked: Scrapy is not in the build environment.
        sources = [f"scrapy_rep/{name}" for name in COMPILED]
        return list(
            mypycify(["--follow-imports=silent", *sources], opt_level="3", group_name="scrapy_rep")
        )
    except (Exception, SystemExit) as exc:  # mypyc missing, or its type check fails (exits)
        print(f"scrapy-rep: mypyc unavailable ({exc}); installing pure Python", file=sys.stderr)
        return []


setup(ext_modules=_ext_modules(), cmdclass={"build_ext": _OptionalBuildExt})

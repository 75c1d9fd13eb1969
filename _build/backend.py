"""setuptools' build backend, asking for mypy (which brings mypyc) only when the compiled
build is asked for with ``SCRAPY_REP_COMPILE=1``: a default install needs neither mypy nor a
C compiler (see setup.py)."""

from __future__ import annotations

import os
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (the PEP 517 hooks not overridden here)

#: The mypy that compiles the same modules mypy checks (tox's typing env pins it too).
MYPYC = "mypy>=1.11"


def _compile_requires() -> list[str]:
    return [MYPYC] if os.environ.get("SCRAPY_REP_COMPILE") == "1" else []


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _setuptools.get_requires_for_build_wheel(config_settings) + _compile_requires()


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _setuptools.get_requires_for_build_editable(config_settings) + _compile_requires()

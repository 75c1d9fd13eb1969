"""``python -m example_project.demo_site`` run from the repository's root.

There ``example_project`` is this folder (it has no ``__init__.py``), not the Scrapy project's
package inside it, which the same command finds when run in this folder, next to scrapy.cfg:
this runs that package's module as if it had.
"""

from __future__ import annotations

import runpy
from pathlib import Path

if __name__ == "__main__":
    runpy.run_path(
        str(Path(__file__).resolve().parent / "example_project" / "demo_site.py"),
        run_name="__main__",
    )

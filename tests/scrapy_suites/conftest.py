"""Scrapy's own robots.txt test modules, run against scrapy-rep's parts.

Each ``v2_NN`` folder holds the two modules from the Scrapy sdist of one tested
version, adapted where marked ``scrapy-rep:``. The running Scrapy decides which
copy is collected, by the middleware API it tests: 2.19.0's where scrapy-rep's
``process_request`` is ``async def`` (``_compat.ASYNC_MIDDLEWARE``: Scrapy 2.14 on),
2.11.2's (synchronous ``process_request``) before.
"""

from __future__ import annotations

import pytest

from scrapy_rep.crawl._compat import ASYNC_MIDDLEWARE

collect_ignore = ["v2_11" if ASYNC_MIDDLEWARE else "v2_19"]


def pytest_configure(config: pytest.Config) -> None:
    # Scrapy's marker for tests that need an asyncio loop; every coroutine_test has one here.
    config.addinivalue_line("markers", "only_asyncio: the test needs an asyncio event loop")

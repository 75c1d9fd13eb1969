"""DNS for the broad-crawl benchmark: ``siteNNNNN.test`` is 127.0.0.1, ``nxdomainNNNNN.test``
does not exist.

The crawl (``_broad_crawl.py``, ``benchmarks/`` on ``sys.path``) enables it with
``DNS_RESOLVER`` (Scrapy < 2.14) or ``TWISTED_DNS_RESOLVER`` (Scrapy >= 2.14) =
``"_broad_resolver.SiteResolver"``. Thousands of sites then share one local server while each
keeps its own host name, hence its own origin and download slot. A failing name fails at once
with Twisted's ``DNSLookupError``, as a real NXDOMAIN does, without asking the system resolver
(no network here). Other names go to Scrapy's resolver unchanged.
"""

from __future__ import annotations

import re
from typing import Any

from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer
from twisted.internet.error import DNSLookupError

LIVE = re.compile(r"site\d+\.test\.?", re.IGNORECASE)
NXDOMAIN = re.compile(r"nxdomain\d+\.test\.?", re.IGNORECASE)


class SiteResolver(CachingThreadedResolver):
    def getHostByName(self, name: str, timeout: Any = ()) -> Any:
        if LIVE.fullmatch(name):
            return defer.succeed("127.0.0.1")
        if NXDOMAIN.fullmatch(name):
            return defer.fail(DNSLookupError(name))
        return super().getHostByName(name, timeout)

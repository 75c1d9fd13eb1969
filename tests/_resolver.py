"""A real Scrapy DNS resolver that maps chosen host names to fixed IPs (for IDN tests).

Enable it in a crawl with (``run_crawl(..., hosts=...)`` in ``tests/_crawl.py`` does this; the
crawl subprocess runs with ``tests/`` on ``sys.path``, as pytest does, hence the module name)::

    DNS_RESOLVER = "_resolver.MappedResolver"          # Scrapy < 2.14
    TWISTED_DNS_RESOLVER = "_resolver.MappedResolver"  # Scrapy >= 2.14 (DNS_RESOLVER deprecated)
    TEST_HOSTS = {"müller.test": "127.0.0.1"}

Keys are compared in IDNA (punycode) form, lower-cased, without a trailing dot, so
``müller.test``, ``MÜLLER.test`` and ``xn--mller-kva.test`` are one entry. Other names go to
Scrapy's ``CachingThreadedResolver`` unchanged. Scrapy builds the resolver with
``from_crawler(crawler, reactor=...)`` and calls ``install_on_reactor()``; Twisted then uses it
for TCP connects (FTP) and, wrapped as a name resolver, for HTTP(S) endpoints.
"""

from __future__ import annotations

from typing import Any

from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer

SETTING = "TEST_HOSTS"


def idna_key(name: str | bytes) -> str:
    text = name.decode("ascii", "replace") if isinstance(name, bytes) else name
    text = text.rstrip(".").lower()
    try:
        return text.encode("idna").decode("ascii")
    except UnicodeError:
        return text


class MappedResolver(CachingThreadedResolver):
    hosts: dict[str, str]

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> MappedResolver:
        resolver: MappedResolver = super().from_crawler(crawler, reactor)
        mapping = crawler.settings.getdict(SETTING)
        resolver.hosts = {idna_key(name): str(ip) for name, ip in mapping.items()}
        return resolver

    def getHostByName(self, name: str, timeout: Any = ()) -> Any:
        ip = self.hosts.get(idna_key(name))
        if ip is not None:
            return defer.succeed(ip)
        return super().getHostByName(name, timeout)

"""Whose answer is it: the site's, or the proxy's own failure (scrapy_rep.core.proxy)."""

from __future__ import annotations

import pytest

from scrapy_rep.core.proxy import proxy_failure, proxy_name


@pytest.mark.parametrize(
    ("status", "fields", "failure"),
    [
        (407, [], "the proxy asks for credentials (HTTP 407)"),
        (
            502,
            ["ExampleCDN; error=connection_refused"],
            "proxy error connection_refused (HTTP 502, Proxy-Status)",
        ),
        (404, ['p; error="dns_timeout"'], "proxy error dns_timeout (HTTP 404, Proxy-Status)"),
        # The second hop failed, the first only relayed.
        (
            503,
            ["edge, inner; error=http_request_error"],
            "proxy error http_request_error (HTTP 503, Proxy-Status)",
        ),
        # Not a valid Structured Field (a space in a token), still a proxy's error.
        (429, ["My Proxy; error=too_many"], "proxy error too_many (HTTP 429, Proxy-Status)"),
    ],
)
def test_the_proxys_own_failures(status: int, fields: list[str], failure: str) -> None:
    assert proxy_failure(status, fields) == failure


@pytest.mark.parametrize(
    ("status", "fields"),
    [
        (404, []),
        (503, []),
        # A proxy that relayed the site's own 503 says so without an error.
        (503, ["ExampleCDN; received-status=503"]),
        (200, ["ExampleCDN"]),
    ],
)
def test_the_sites_own_answers(status: int, fields: list[str]) -> None:
    assert proxy_failure(status, fields) is None


@pytest.mark.parametrize(
    ("proxy", "name"),
    [
        ("http://user:secret@proxy.test:3128", "http://proxy.test:3128"),
        ("https://proxy.test", "https://proxy.test"),
        ("proxy.test:8080", "http://proxy.test:8080"),
        ("http://a:b@c@proxy.test:1", "http://proxy.test:1"),
    ],
)
def test_a_proxy_is_named_without_its_credentials(proxy: str, name: str) -> None:
    assert proxy_name(proxy) == name

"""SPEC B1: origins (pure)."""

from __future__ import annotations

import pytest

from scrapy_rep.core.origin import origin, robots_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://a.example/x", "http://a.example"),
        ("https://a.example/x?y#z", "https://a.example"),
        ("https://a.example:443/x", "https://a.example"),
        ("http://a.example:80/", "http://a.example"),
        ("https://a.example:8181/x", "https://a.example:8181"),
        ("http://a.example:443/", "http://a.example:443"),
        ("HTTP://A.Example/x", "http://a.example"),
        ("http://müller.eu/", "http://xn--mller-kva.eu"),
        ("http://MÜLLER.eu/", "http://xn--mller-kva.eu"),
        ("http://xn--mller-kva.eu/", "http://xn--mller-kva.eu"),
        ("http://192.168.0.1:8080/", "http://192.168.0.1:8080"),
        ("http://[::1]:8080/x", "http://[::1]:8080"),
        ("http://[::1]/x", "http://[::1]"),
        ("ftp://files.example/pub/a.txt", "ftp://files.example"),
        ("ftp://files.example:21/a", "ftp://files.example"),
        ("http://user:pw@a.example/", "http://a.example"),
        ("http://a.example./x", "http://a.example"),
    ],
)
def test_origin(url: str, expected: str) -> None:
    assert origin(url) == expected


@pytest.mark.parametrize(
    "url",
    ["data:text/plain,hi", "file:///etc/passwd", "s3://bucket/key", "http:///x", "http://a:99999/"],
)
def test_no_origin(url: str) -> None:
    assert origin(url) is None


def test_http_and_https_differ() -> None:
    assert origin("http://a.example/") != origin("https://a.example/")


def test_robots_url() -> None:
    assert robots_url("https://a.example:8181") == "https://a.example:8181/robots.txt"

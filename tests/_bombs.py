"""Compressed robots.txt bodies for the security tests and benchmarks/bench_robots_attacks.py.

``bomb(coding)`` decodes to hundreds of MiB: EARLY (a rule), NUL bytes, LATE (a rule after
the 512,000-byte cut). ``encoded(coding, body)`` compresses a small body. Codings: gzip,
deflate (zlib), raw-deflate (sent as "deflate"), br, zstd. Bombs are made once per process.
"""

from __future__ import annotations

import functools
import gzip
import zlib
from collections.abc import Callable

import brotli
import zstandard

__all__ = ["CODINGS", "EARLY", "LATE", "bomb", "encoded"]

CODINGS = ["gzip", "deflate", "raw-deflate", "br", "zstd"]

EARLY = b"User-agent: *\nDisallow: /page/early\n"
LATE = b"\nDisallow: /page/private\n"
MIB = 1 << 20


def _stream(compress: Callable[[bytes], bytes], flush: Callable[[], bytes], mib: int) -> bytes:
    """EARLY, ``mib`` MiB of NUL bytes, LATE: compressed without holding the whole in memory."""
    zeros = bytes(MIB)
    parts = [compress(EARLY), *(compress(zeros) for _ in range(mib)), compress(LATE), flush()]
    return b"".join(parts)


@functools.cache
def bomb(coding: str) -> bytes:
    """A body decoding to hundreds of MiB (the raw download stops after 500 KiB, so gzip
    and deflate bombs are sized under that)."""
    if coding in ("gzip", "deflate", "raw-deflate"):
        wbits = {"gzip": 31, "deflate": 15, "raw-deflate": -15}[coding]
        z = zlib.compressobj(9, zlib.DEFLATED, wbits)
        return _stream(z.compress, z.flush, 400)
    if coding == "br":
        b = brotli.Compressor(quality=5)
        return _stream(b.process, b.finish, 1024)
    c = zstandard.ZstdCompressor(level=3).compressobj()
    return _stream(c.compress, c.flush, 1024)


def encoded(coding: str, body: bytes) -> bytes:
    if coding == "gzip":
        return gzip.compress(body)
    if coding == "deflate":
        return zlib.compress(body)
    if coding == "raw-deflate":
        z = zlib.compressobj(9, zlib.DEFLATED, -15)
        return z.compress(body) + z.flush()
    if coding == "br":
        return bytes(brotli.compress(body))
    return bytes(zstandard.ZstdCompressor().compress(body))

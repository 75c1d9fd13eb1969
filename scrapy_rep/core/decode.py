"""Content-Encoding decoding with an output bound (SPEC B4): no Scrapy, no I/O.

``decode(body, codings, limit)`` undoes the HTTP content-codings of a response
body and returns at most ``limit`` bytes of the result, with ``truncated`` set
when there was more. Memory stays within ``limit`` plus one decoder block
whatever the compression ratio: every decoder is asked for a bounded amount of
output at a time (zlib ``max_length``, brotli ``output_buffer_limit``, zstd
``max_length`` / ``stream_reader.read(n)``), never for "everything".

An input that ends early (a download stopped after 500 KiB) decodes to what it
holds; data that is not what its coding says raises ``DecodeError``.

``ACCEPT_ENCODING`` names what can be decoded this way with the libraries
installed: gzip and deflate always; br with brotli >= 1.2 (older brotli has no
output bound); zstd with ``compression.zstd`` (Python 3.14), ``backports.zstd``
or ``zstandard``.
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable
from typing import Any

__all__ = ["ACCEPT_ENCODING", "MAX_CODINGS", "DecodeError", "decode", "split_codings"]

#: More codings than this on one response is not a real server: refuse it.
MAX_CODINGS = 4


class DecodeError(ValueError):
    """The body cannot be decoded as its Content-Encoding says."""


_Decoder = Callable[[bytes, int], tuple[bytes, bool]]


def _zlib(data: bytes, wbits: int, limit: int, *, members: bool) -> tuple[bytes, bool]:
    """Up to ``limit`` bytes of a zlib/gzip/raw-deflate stream, and whether more follow."""
    out = bytearray()
    while True:
        decompressor = zlib.decompressobj(wbits)
        try:
            out += decompressor.decompress(data, limit + 1 - len(out))
        except zlib.error as exc:
            raise DecodeError(str(exc)) from None
        if len(out) > limit:
            return bytes(out[:limit]), True
        data = decompressor.unused_data
        # Several gzip members in a row are one body (RFC 1952); anything else
        # after the end of the stream is ignored, as browsers do.
        if not (members and decompressor.eof and data[:2] == b"\x1f\x8b"):
            return bytes(out), False


def _gunzip(data: bytes, limit: int) -> tuple[bytes, bool]:
    return _zlib(data, 16 + zlib.MAX_WBITS, limit, members=True)


def _inflate(data: bytes, limit: int) -> tuple[bytes, bool]:
    # "deflate" is zlib-wrapped (RFC 9110), but some servers send raw deflate.
    try:
        return _zlib(data, zlib.MAX_WBITS, limit, members=False)
    except DecodeError:
        return _zlib(data, -zlib.MAX_WBITS, limit, members=False)


def _module(*names: str) -> Any:
    """The first of ``names`` that can be imported (optional libraries), or None."""
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _brotli_decoder() -> _Decoder | None:
    brotli = _module("brotli", "brotlicffi")
    if brotli is None:
        return None
    try:
        brotli.Decompressor().process(b"", output_buffer_limit=1)
    except (TypeError, AttributeError):
        return None  # brotli < 1.2: no output bound, so no br at all

    def unbrotli(data: bytes, limit: int) -> tuple[bytes, bool]:
        decompressor = brotli.Decompressor()
        out = bytearray()
        try:
            # The limit is a hint (brotli rounds it up to its block size):
            # each call still returns a bounded amount.
            chunk = decompressor.process(data, output_buffer_limit=limit + 1)
            while chunk:
                out += chunk
                if len(out) > limit:
                    return bytes(out[:limit]), True
                if decompressor.is_finished():
                    break
                chunk = decompressor.process(b"", output_buffer_limit=limit + 1 - len(out))
        except brotli.error as exc:
            raise DecodeError(str(exc)) from None
        return bytes(out), False

    return unbrotli


def _zstd_decoder() -> _Decoder | None:
    module = _module("compression.zstd", "backports.zstd")
    if module is not None:
        return _stdlib_zstd(module)
    zstandard = _module("zstandard")
    if zstandard is None:
        return None

    def unzstd(data: bytes, limit: int) -> tuple[bytes, bool]:
        reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
        try:
            out = reader.read(limit + 1)
        except zstandard.ZstdError as exc:
            raise DecodeError(str(exc)) from None
        return (out[:limit], True) if len(out) > limit else (out, False)

    return unzstd


def _stdlib_zstd(module: Any) -> _Decoder:
    def unzstd(data: bytes, limit: int) -> tuple[bytes, bool]:
        out = bytearray()
        try:
            while True:
                decompressor = module.ZstdDecompressor()
                out += decompressor.decompress(data, limit + 1 - len(out))
                while not decompressor.eof and not decompressor.needs_input and len(out) <= limit:
                    out += decompressor.decompress(b"", limit + 1 - len(out))
                if len(out) > limit:
                    return bytes(out[:limit]), True
                data = decompressor.unused_data if decompressor.eof else b""
                if not data:  # the end, or input that stopped early
                    return bytes(out), False
        except module.ZstdError as exc:
            raise DecodeError(str(exc)) from None

    return unzstd


def _decoders() -> dict[bytes, _Decoder]:
    decoders: dict[bytes, _Decoder] = {b"gzip": _gunzip, b"x-gzip": _gunzip, b"deflate": _inflate}
    brotli_ = _brotli_decoder()
    if brotli_ is not None:
        decoders[b"br"] = brotli_
    zstd = _zstd_decoder()
    if zstd is not None:
        decoders[b"zstd"] = zstd
    return decoders


_DECODERS = _decoders()

#: The Accept-Encoding value for requests whose body goes through ``decode``.
ACCEPT_ENCODING = b", ".join(c for c in (b"gzip", b"deflate", b"br", b"zstd") if c in _DECODERS)


def split_codings(values: list[bytes]) -> list[bytes]:
    """The codings of (possibly several) Content-Encoding headers, in the order applied."""
    codings = [c.strip().lower() for value in values for c in value.split(b",")]
    return [c for c in codings if c and c != b"identity"]


def decode(body: bytes, codings: list[bytes], limit: int) -> tuple[bytes, bool]:
    """Undo ``codings`` (as ``split_codings`` gives them); at most ``limit`` bytes out.

    Returns ``(body, truncated)``. Raises ``DecodeError`` for a coding that
    cannot be decoded with a bound, too many codings, or corrupt data.
    """
    if len(codings) > MAX_CODINGS:
        raise DecodeError(f"{len(codings)} content-codings (at most {MAX_CODINGS} are decoded)")
    truncated = False
    # The last coding listed was applied last: undo it first.
    for coding in reversed(codings):
        decoder = _DECODERS.get(coding)
        if decoder is None:
            raise DecodeError(f"content-coding {coding.decode('latin-1')!r} is not supported")
        body, more = decoder(body, limit)
        truncated = truncated or more
    return body, truncated

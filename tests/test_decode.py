"""``scrapy_rep.core.decode``: content-codings undone with an output bound (SPEC B4).

Pure code: bodies built here, decoded in-process. The crawl-level tests (bombs through a
real server, peak RSS) are in test_security.py.
"""

from __future__ import annotations

import gzip
import tracemalloc
import zlib

import pytest
from _bombs import CODINGS, bomb, encoded

from scrapy_rep.core.decode import ACCEPT_ENCODING, MAX_CODINGS, DecodeError, decode, split_codings

LIMIT = 512_000
TEXT = b"User-agent: *\nDisallow: /private\n" * 100


def coding_name(coding: str) -> bytes:
    return b"deflate" if coding == "raw-deflate" else coding.encode()


@pytest.mark.parametrize("coding", CODINGS)
def test_small_body_decodes_whole(coding: str) -> None:
    assert decode(encoded(coding, TEXT), [coding_name(coding)], LIMIT) == (TEXT, False)


@pytest.mark.parametrize("coding", CODINGS)
def test_bomb_is_cut_at_the_limit_with_bounded_memory(coding: str) -> None:
    data = bomb(coding)
    tracemalloc.start()
    try:
        body, truncated = decode(data, [coding_name(coding)], LIMIT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert truncated
    assert len(body) == LIMIT
    assert body.startswith(b"User-agent: *\nDisallow: /page/early\n\0")
    # The output bound plus a few decoder blocks, never the hundreds of MiB it holds.
    assert peak < 8 * LIMIT


@pytest.mark.parametrize("coding", CODINGS)
def test_input_that_stops_early_decodes_to_what_it_holds(coding: str) -> None:
    whole = encoded(coding, TEXT * 20)
    body, truncated = decode(whole[: len(whole) // 2], [coding_name(coding)], LIMIT)
    assert not truncated  # the download stop says so, not the decoder
    assert (TEXT * 20).startswith(body)


def test_exactly_the_limit_is_not_truncated() -> None:
    data = b"a" * LIMIT
    assert decode(gzip.compress(data), [b"gzip"], LIMIT) == (data, False)
    body, truncated = decode(gzip.compress(data + b"b"), [b"gzip"], LIMIT)
    assert (body, truncated) == (data, True)


def test_gzip_members_in_a_row_are_one_body() -> None:
    assert decode(gzip.compress(b"one\n") + gzip.compress(b"two\n"), [b"gzip"], LIMIT) == (
        b"one\ntwo\n",
        False,
    )


def test_trailing_garbage_after_the_stream_is_ignored() -> None:
    assert decode(zlib.compress(TEXT) + b"junk", [b"deflate"], LIMIT) == (TEXT, False)


def test_codings_are_undone_last_first() -> None:
    data = zlib.compress(gzip.compress(TEXT))
    assert decode(data, split_codings([b"gzip, deflate"]), LIMIT) == (TEXT, False)
    assert decode(data, split_codings([b"gzip", b"Deflate"]), LIMIT) == (TEXT, False)


def test_identity_and_empty_codings_are_dropped() -> None:
    assert split_codings([b" identity , ", b"GZIP"]) == [b"gzip"]


@pytest.mark.parametrize(
    ("data", "codings", "message"),
    [
        (b"not gzip", [b"gzip"], "incorrect header check"),
        (b"\xff" * 20, [b"deflate"], "invalid"),
        (b"\xff" * 20, [b"br"], None),
        (b"\xff" * 20, [b"zstd"], None),
        (TEXT, [b"compress"], "'compress' is not supported"),
        (TEXT, [b"gzip"] * (MAX_CODINGS + 1), "at most"),
    ],
)
def test_undecodable_body_raises_decode_error(
    data: bytes, codings: list[bytes], message: str | None
) -> None:
    with pytest.raises(DecodeError, match=message):
        decode(data, codings, LIMIT)


def test_accept_encoding_names_what_is_decodable_here() -> None:
    # brotli >= 1.2 and zstandard come with the test extra.
    assert ACCEPT_ENCODING == b"gzip, deflate, br, zstd"

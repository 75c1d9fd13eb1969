"""The line parser: robots.txt bytes → typed records (SPEC A1, A2).

It knows nothing about groups or matching; ``robotstxt.py`` consumes the
records. Every Google-specific quirk of reading a line lives here, commented
with the rule it follows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from enum import IntEnum
from typing import NamedTuple

#: SPEC A1: only the first 500 KiB count, even if that cuts a line.
MAX_BODY_BYTES = 512_000
#: SPEC A1: Google's line buffer keeps 2083 * 8 - 1 bytes of a line.
MAX_LINE_BYTES = 16_663

_BOM = b"\xef\xbb\xbf"
# SPEC A2: without a colon, exactly two runs of non-blank text separated by
# spaces/tabs make a key and a value ("disallow /x"); the line is already trimmed.
_NO_COLON = re.compile(rb"([^ \t]+)[ \t]+([^ \t]+)")


class Key(IntEnum):
    USER_AGENT = 1
    ALLOW = 2
    DISALLOW = 3
    SITEMAP = 4
    UNKNOWN = 5


class Record(NamedTuple):
    line: int
    key: Key
    name: bytes  # the key as written, trimmed (meaningful for UNKNOWN keys)
    value: bytes


# SPEC A2: keys are recognised case-insensitively by prefix, typos included,
# so "Disallowed:" is a disallow and "User-agents:" a user-agent.
_KEY_PREFIXES: tuple[tuple[tuple[bytes, ...], Key], ...] = (
    ((b"user-agent", b"useragent", b"user agent"), Key.USER_AGENT),
    ((b"allow",), Key.ALLOW),
    ((b"disallow", b"dissallow", b"dissalow", b"disalow", b"diasllow", b"disallaw"), Key.DISALLOW),
    ((b"sitemap", b"site-map"), Key.SITEMAP),
)


def classify_key(name: bytes) -> Key:
    lowered = name.lower()
    for prefixes, key in _KEY_PREFIXES:
        if lowered.startswith(prefixes):
            return key
    return Key.UNKNOWN


def prepare_body(body: bytes | bytearray | memoryview | str) -> bytes:
    """The bytes that count: the first 500 KiB, without a leading (partial) BOM."""
    if isinstance(body, str):
        # surrogatepass: any str converts, and a str decoded from UTF-8 gives its bytes back.
        body = body.encode("utf-8", "surrogatepass")
    data = bytes(body[:MAX_BODY_BYTES])
    # SPEC A1: a BOM, or the first one or two bytes of one, is skipped only at
    # the very start; elsewhere it is data.
    if data[:1] == b"\xef":
        if data[:3] == _BOM:
            return data[3:]
        return data[2:] if data[:2] == _BOM[:2] else data[1:]
    return data


def parse_lines(body: bytes | bytearray | memoryview | str) -> Iterator[Record]:
    """Yield one record per meaningful line, numbered as Google numbers them."""
    # bytes.splitlines() ends lines at CR, LF and CRLF (a CRLF is one line end),
    # exactly SPEC A1; unlike str.splitlines it ignores \v, \f and Unicode breaks.
    for number, line in enumerate(prepare_body(body).splitlines(), 1):
        if len(line) > MAX_LINE_BYTES:
            line = line[:MAX_LINE_BYTES]
        # SPEC A1: a NUL ends the line's content (Google keeps lines as C strings).
        nul = line.find(b"\x00")
        if nul >= 0:
            line = line[:nul]
        # SPEC A2: a comment starts at the first '#', even inside a path.
        hash_ = line.find(b"#")
        if hash_ >= 0:
            line = line[:hash_]
        line = line.strip()
        if not line:
            continue
        colon = line.find(b":")
        if colon >= 0:
            name = line[:colon].strip()
            value = line[colon + 1 :].strip()
        else:
            match = _NO_COLON.fullmatch(line)
            if match is None:
                continue
            name = match.group(1).strip()
            value = match.group(2).strip()
        if not name:
            continue
        yield Record(number, classify_key(name), name, value)

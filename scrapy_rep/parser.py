"""The line parser: robots.txt bytes → typed records (SPEC A1, A2).

It knows nothing about groups or matching; ``robotstxt.py`` consumes the
records. Every Google-specific quirk of reading a line lives here, commented
with the rule it follows.
"""

from __future__ import annotations

import re
from enum import IntEnum

#: SPEC A1: only the first 500 KiB count, even if that cuts a line.
MAX_BODY_BYTES = 512_000
#: SPEC A1: Google's line buffer keeps 2083 * 8 - 1 bytes of a line.
MAX_LINE_BYTES = 16_663

_BOM = b"\xef\xbb\xbf"
# SPEC A2, one match per line of a body whose lines each start after an LF
# and hold no NUL (matching from that LF lets the regex engine skip from line
# to line, and findall then yields line N as its N-th tuple):
# - a comment starts at the first '#', even inside a path;
# - the key ends at the first ':' before the comment (groups 1, 2);
# - without a colon, exactly two runs of text separated by spaces/tabs make a
#   key and a value ("disallow /x" works, "disallow /x /y" does not), with any
#   ASCII whitespace trimmed around the line (groups 3, 4);
# - any other line matches with empty groups and is skipped.
# Keys and values are trimmed of ASCII whitespace afterwards.
_LINE = re.compile(
    rb"\n(?:([^:#\n]*):([^#\n]*)"
    rb"|[ \t\x0b\x0c\r]*([^ \t:#\n]+)[ \t]+([^ \t:#\n]+)[ \t\x0b\x0c\r]*(?=[#\n]|\Z))?"
    rb"[^\n]*"
)


class Key(IntEnum):
    USER_AGENT = 1
    ALLOW = 2
    DISALLOW = 3
    SITEMAP = 4
    UNKNOWN = 5


#: (line number, key, the key as written and trimmed, the trimmed value). A
#: plain tuple: building a NamedTuple per line would double the parse time.
Record = tuple[int, Key, bytes, bytes]


# SPEC A2: keys are recognised case-insensitively by prefix, typos included,
# so "Disallowed:" is a disallow and "User-agents:" a user-agent.
_KEY_PREFIXES: tuple[tuple[tuple[bytes, ...], Key], ...] = (
    ((b"user-agent", b"useragent", b"user agent"), Key.USER_AGENT),
    ((b"allow",), Key.ALLOW),
    ((b"disallow", b"dissallow", b"dissalow", b"disalow", b"diasllow", b"disallaw"), Key.DISALLOW),
    ((b"sitemap", b"site-map"), Key.SITEMAP),
)


# The spellings real files use, for a dict hit before the prefix checks.
_COMMON_KEYS = {
    name: key
    for key, names in (
        (Key.USER_AGENT, (b"User-agent", b"User-Agent", b"user-agent", b"USER-AGENT")),
        (Key.ALLOW, (b"Allow", b"allow", b"ALLOW")),
        (Key.DISALLOW, (b"Disallow", b"disallow", b"DISALLOW")),
        (Key.SITEMAP, (b"Sitemap", b"sitemap", b"SITEMAP")),
    )
    for name in names
}


def classify_key(name: bytes) -> Key:
    common = _COMMON_KEYS.get(name)
    if common is not None:
        return common
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


def _normalise_lines(data: bytes) -> bytes:
    """One LF per line end, lines cut at NUL and at 16,663 bytes (SPEC A1)."""
    # CR, LF and CRLF each end a line (a CRLF once): as one LF each, line
    # numbers stay Google's.
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    # Only a body this long can hold a line over the limit.
    if b"\x00" in data or len(data) > MAX_LINE_BYTES:
        lines = data.split(b"\n")
        for i, line in enumerate(lines):
            if len(line) > MAX_LINE_BYTES:
                line = line[:MAX_LINE_BYTES]
            # A NUL ends the line's content (Google keeps lines as C strings).
            if b"\x00" in line:
                line = line[: line.find(b"\x00")]
            lines[i] = line
        data = b"\n".join(lines)
    return data


def parse_lines(body: bytes | bytearray | memoryview | str) -> list[Record]:
    """One record per meaningful line, numbered as Google numbers them."""
    records: list[Record] = []
    append = records.append
    common = _COMMON_KEYS.get
    number = 0
    for name, value, bare_name, bare_value in _LINE.findall(
        b"\n" + _normalise_lines(prepare_body(body))
    ):
        number += 1
        if not name:
            # SPEC A2: Google strips every ASCII whitespace byte from the line's
            # ends, \v and \f included, before looking for the space/tab
            # separator: a "value" made only of \v/\f ("Disallow \f") leaves
            # no separator, and the line is ignored, not an empty directive.
            if not bare_name or not bare_value.strip():
                continue
            name, value = bare_name, bare_value
        name = name.strip()
        if name:
            append((number, common(name) or classify_key(name), name, value.strip()))
    return records

"""The line parser: robots.txt bytes → typed records (SPEC A1, A2).

It knows nothing about groups or matching; ``robotstxt.py`` consumes the
records. Every Google-specific quirk of reading a line lives here, commented
with the rule it follows.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

#: SPEC A1: only the first 500 KiB count, even if that cuts a line.
MAX_BODY_BYTES = 512_000
#: SPEC A1: Google's line buffer keeps 2083 * 8 - 1 bytes of a line.
MAX_LINE_BYTES = 16_663

_BOM = b"\xef\xbb\xbf"
#: What Google trims around keys and values: ASCII whitespace (CR and LF end
#: lines first). A bare str.strip() would also trim \x1c-\x1f, \x85 and \xa0.
WHITESPACE = " \t\x0b\x0c"


class Key(IntEnum):
    USER_AGENT = 1
    ALLOW = 2
    DISALLOW = 3
    SITEMAP = 4
    UNKNOWN = 5
    CONTENT_USAGE = 6
    CONTENT_SIGNAL = 7


#: A line other than allow/disallow: (line number, key, the key as written,
#: the value), key and value trimmed, as Latin-1 text (one character per byte:
#: ``.encode("latin-1")`` gives the bytes back). Plain tuples: building a
#: NamedTuple per line would double the parse time.
Record = tuple[int, Key, str, str]
#: An allow/disallow line: (allow, the value, line number), the fields of
#: ``matcher.Rule`` (before the value's SPEC A5 normalisation).
RuleRecord = tuple[bool, str, int]


class Lines(NamedTuple):
    """What ``parse_lines`` reads from a body, in line order."""

    rules: list[RuleRecord]  # every allow/disallow line
    others: list[Record]  # every other meaningful line
    #: No byte >= 0x80 and no '%' in the body: every value is already what
    #: SPEC A5 normalises it to, and needs no second look.
    plain: bool


# SPEC A2: keys are recognised case-insensitively by prefix, typos included,
# so "Disallowed:" is a disallow and "User-agents:" a user-agent.
_KEY_PREFIXES: tuple[tuple[tuple[str, ...], Key], ...] = (
    (("user-agent", "useragent", "user agent"), Key.USER_AGENT),
    (("allow",), Key.ALLOW),
    (("disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"), Key.DISALLOW),
    (("sitemap", "site-map"), Key.SITEMAP),
)


# SPEC E1: usage preference lines, recognised by their exact name in any case, as Google's
# reporting parser lists them ("known, unused": no effect on allow/disallow).
_EXACT_KEYS = {"content-usage": Key.CONTENT_USAGE, "content-signal": Key.CONTENT_SIGNAL}


# The spellings real files use, for a dict hit before the prefix checks.
_COMMON_KEYS = {
    name: key
    for key, names in (
        (Key.USER_AGENT, ("User-agent", "User-Agent", "user-agent", "USER-AGENT")),
        (Key.ALLOW, ("Allow", "allow", "ALLOW")),
        (Key.DISALLOW, ("Disallow", "disallow", "DISALLOW")),
        (Key.SITEMAP, ("Sitemap", "sitemap", "SITEMAP")),
        (Key.CONTENT_USAGE, ("Content-Usage", "Content-usage")),
        (Key.CONTENT_SIGNAL, ("Content-Signal", "Content-signal")),
    )
    for name in names
}


_ALLOW, _DISALLOW = Key.ALLOW, Key.DISALLOW
# The usual spellings of the rule keys, as written (untrimmed), to whether
# they allow: most lines of a file take this one lookup and no more.
_RULE_KEYS = {
    name: key is _ALLOW for name, key in _COMMON_KEYS.items() if key in (_ALLOW, _DISALLOW)
}


def classify_key(name: str) -> Key:
    common = _COMMON_KEYS.get(name)
    if common is not None:
        return common
    # Latin-1 letters lower to Latin-1 letters: only ASCII ones can reach a prefix.
    lowered = name.lower()
    for prefixes, key in _KEY_PREFIXES:
        if lowered.startswith(prefixes):
            return key
    return _EXACT_KEYS.get(lowered, Key.UNKNOWN)


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


def parse_lines(body: bytes | bytearray | memoryview | str) -> Lines:
    """The meaningful lines of ``body``, numbered as Google numbers them.

    Allow and disallow lines, most of a file, come apart from the others: a
    reader of groups walks the few others and takes a group's rules as one
    slice (see ``robotstxt.Group``).
    """
    rules: list[RuleRecord] = []
    others: list[Record] = []
    add_rule = rules.append
    add_other = others.append
    rule_key = _RULE_KEYS.get
    common = _COMMON_KEYS.get
    whitespace = WHITESPACE
    data = _normalise_lines(prepare_body(body))
    # Latin-1: one character per byte, so every byte survives and a value needs
    # no decoding of its own (see Record).
    for number, line in enumerate(data.decode("latin-1").split("\n"), 1):
        # SPEC A2: a comment starts at the first '#', even inside a path.
        if "#" in line:
            line = line[: line.find("#")]
        # SPEC A2: the key ends at the first ':'; key and value are trimmed
        # of ASCII whitespace.
        name, colon, value = line.partition(":")
        if colon:
            allow = rule_key(name)
            if allow is not None:
                add_rule((allow, value.strip(whitespace), number))
                continue
        elif line:
            # SPEC A2: without a colon, exactly two runs of text separated by
            # spaces/tabs make a key and a value ("disallow /x" works,
            # "disallow /x /y" does not). Google strips every ASCII whitespace
            # byte from the line's ends first, \v and \f included: a "value"
            # made only of \v/\f ("Disallow \f") leaves no separator, and the
            # line is ignored, not an empty directive. (No regex: one with
            # two runs that may both take \v made a 16 KB line cost a second.)
            name, space, value = line.strip(whitespace).replace("\t", " ").partition(" ")
            value = value.lstrip(" ")
            if not space or " " in value:
                continue
        else:
            continue
        name = name.strip(whitespace)
        if name:
            key = common(name) or classify_key(name)
            if key is _DISALLOW or key is _ALLOW:
                add_rule((key is _ALLOW, value.strip(whitespace), number))
            else:
                add_other((number, key, name, value.strip(whitespace)))
    return Lines(rules, others, data.isascii() and b"%" not in data)

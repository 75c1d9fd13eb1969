"""RFC 9651 (Structured Field Values for HTTP) Dictionary and List parsers: strict, linear,
no I/O.

Usage preferences are RFC 9651 Dictionaries (SPEC E3); ``Proxy-Status`` (RFC 9209), which
says whether an answer is a proxy's own, is a List. A Dictionary may hold any Item, and a value
the RFC rejects must make the whole parse fail (vocab-08 §6.5.1: "If the parsing of the
Dictionary fails, preferences are unknown"), so every Item type is read exactly as RFC 9651
§4.2 says. Not a dependency: SPEC E3 says why.

Each step is one anchored regex with disjoint alternatives or a fixed-length check, so the
work is linear in the input; nothing recurses (an Inner List holds Items only) and nothing
raises: a failure is ``None``.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable
from decimal import Decimal

__all__ = ["Date", "DisplayString", "Member", "Token", "parse_dictionary", "parse_list"]


class Token(str):
    """A Token (RFC 9651 §3.3.4), told apart from a String (a plain ``str``)."""

    __slots__ = ()


class DisplayString(str):
    """A Display String (RFC 9651 §3.3.8), decoded."""

    __slots__ = ()


class Date(int):
    """A Date (RFC 9651 §3.3.7): seconds since the Unix epoch."""

    __slots__ = ()


BareItem = int | Decimal | str | bytes | bool
Parameters = dict[str, BareItem]
Item = tuple[BareItem, Parameters]
#: A Dictionary member: an Item, or an Inner List (its Items and its own Parameters).
Member = Item | tuple[list[Item], Parameters]

# RFC 9651 §4.2.3.3: key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" ).
_KEY = re.compile(r"[a-z*][a-z0-9_.*-]*")
# §4.2.6: ( ALPHA / "*" ) then tchar / ":" / "/".
_TOKEN = re.compile(r"[A-Za-z*][!#$%&'*+.^_`|~0-9A-Za-z:/-]*")
# §4.2.4: digits, at most one '.' (the limits are checked after the match).
_NUMBER = re.compile(r"-?([0-9]+)(\.[0-9]*)?")
# §4.2.5: printable ASCII; '\' escapes only '"' and '\'.
_STRING = re.compile(r'"((?:[ !#-\[\]-~]|\\["\\])*)"')
_ESCAPE = re.compile(r'\\(["\\])')
# §4.2.7: base64 characters between two colons.
_BYTES = re.compile(r":([A-Za-z0-9+/=]*):")
# §4.2.10: printable ASCII but '%' and '"', or '%' and two lower-case hex digits.
_DISPLAY = re.compile(r'%"((?:[ !#$&-~]|%[0-9a-f]{2})*)"')
_PERCENT = re.compile(r"%([0-9a-f]{2})")
_OWS = re.compile(r"[ \t]*")
_SP = re.compile(r" *")


class _Fail(Exception):
    """Parsing failed (caught in ``parse_dictionary``, never escapes)."""


class _Reader:
    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip(self, spaces: re.Pattern[str]) -> None:
        self.pos = spaces.match(self.text, self.pos).end()  # type: ignore[union-attr]  # * matches

    def take(self, pattern: re.Pattern[str]) -> re.Match[str]:
        match = pattern.match(self.text, self.pos)
        if match is None:
            raise _Fail
        self.pos = match.end()
        return match

    def peek(self) -> str:
        return self.text[self.pos : self.pos + 1]

    def key(self) -> str:
        return self.take(_KEY).group()

    def parameters(self) -> Parameters:
        # §4.2.3.2: ';' key ['=' bare item], a later duplicate overwriting the value.
        params: Parameters = {}
        while self.peek() == ";":
            self.pos += 1
            self.skip(_SP)
            name = self.key()
            value: BareItem = True
            if self.peek() == "=":
                self.pos += 1
                value = self.bare_item()
            params[name] = value
        return params

    def item(self) -> Item:
        value = self.bare_item()
        return value, self.parameters()

    def member(self) -> Member:
        # §4.2.1.1 / §4.2.1.2: an Inner List is '(' Items separated by SP ')' Parameters.
        if self.peek() != "(":
            return self.item()
        self.pos += 1
        items: list[Item] = []
        while True:
            self.skip(_SP)
            if self.peek() == ")":
                self.pos += 1
                return items, self.parameters()
            items.append(self.item())
            if self.peek() not in (" ", ")"):
                raise _Fail  # also the end of the input: the list is never closed

    def bare_item(self) -> BareItem:
        # §4.2.3.1: the first character says the type.
        first = self.peek()
        if first == "-" or first.isdigit():
            return self.number()
        if first == '"':
            return _ESCAPE.sub(r"\1", self.take(_STRING).group(1))
        if first == "*" or (first.isascii() and first.isalpha()):
            return Token(self.take(_TOKEN).group())
        if first == ":":
            return _base64(self.take(_BYTES).group(1))
        if first == "?":
            flag = self.text[self.pos + 1 : self.pos + 2]
            if flag not in ("0", "1"):
                raise _Fail
            self.pos += 2
            return flag == "1"
        if first == "@":
            # §4.2.9: an Integer, not a Decimal.
            self.pos += 1
            date = self.number()
            if isinstance(date, Decimal):
                raise _Fail
            return Date(date)
        if first == "%":
            return _display(self.take(_DISPLAY).group(1))
        raise _Fail

    def number(self) -> int | Decimal:
        # §4.2.4: an Integer has at most 15 digits; a Decimal at most 12 before the '.' and
        # 1 to 3 after it.
        match = self.take(_NUMBER)
        whole, fraction = match.group(1), match.group(2)
        if fraction is None:
            if len(whole) > 15:
                raise _Fail
            return int(match.group())
        if len(whole) > 12 or not 2 <= len(fraction) <= 4:
            raise _Fail
        return Decimal(match.group())


def _base64(content: str) -> bytes:
    # §4.2.7: padding may be missing ("parsers SHOULD NOT fail"); anything else malformed
    # fails. binascii stops quietly at an inner '=', so that is refused first.
    content = content.rstrip("=")
    if "=" in content or len(content) % 4 == 1:
        raise _Fail
    try:
        return binascii.a2b_base64(content + "=" * (-len(content) % 4))
    except binascii.Error:
        raise _Fail from None


def _display(content: str) -> DisplayString:
    # §4.2.10: percent-escaped bytes, then strict UTF-8.
    raw = _PERCENT.sub(lambda m: chr(int(m.group(1), 16)), content).encode("latin-1")
    try:
        return DisplayString(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise _Fail from None


def parse_dictionary(text: str) -> dict[str, Member] | None:
    """``text`` parsed as an RFC 9651 Dictionary (§4.2, §4.2.2), or None when that fails.

    ``text`` is the field value as Latin-1 or ASCII text (one character per byte): a
    character outside ASCII fails (§4.2 step 1). Members keep their first position and their
    last value (§4.2.2: a later duplicate key overwrites).
    """
    members: dict[str, Member] = {}

    def member(reader: _Reader) -> None:
        name = reader.key()
        if reader.peek() == "=":
            reader.pos += 1
            members[name] = reader.member()
        else:
            # A bare key is Boolean true, with Parameters.
            members[name] = (True, reader.parameters())

    return members if _read_members(text, member) else None


def parse_list(text: str) -> list[Member] | None:
    """``text`` parsed as an RFC 9651 List (§4.2, §4.2.1), or None when that fails; the same
    input rules as ``parse_dictionary``."""
    members: list[Member] = []
    return members if _read_members(text, lambda reader: members.append(reader.member())) else None


def _read_members(text: str, read: Callable[[_Reader], None]) -> bool:
    """Read the comma-separated members of a List or Dictionary, each with ``read`` (which
    keeps it: a Dictionary keeps one value per key, however often a hostile field repeats it);
    False when the field does not parse."""
    if not text.isascii():
        return False
    reader = _Reader(text)
    try:
        # §4.2: leading and trailing SP are discarded; anything else left over fails.
        reader.skip(_SP)
        while reader.pos < len(text):
            read(reader)
            reader.skip(_OWS)
            if reader.pos == len(text):
                break
            if reader.peek() != ",":
                raise _Fail
            reader.pos += 1
            reader.skip(_OWS)
            if reader.pos == len(text):
                raise _Fail  # a trailing comma
    except _Fail:
        return False
    return True

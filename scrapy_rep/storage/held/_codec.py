"""A request as JSON, for a shared store: ``request.to_dict()`` with tagged bytes, tuples, dicts.

Never pickle: what a fleet reads back from Redis is JSON, and the request class named in it
must already be imported and be a ``scrapy.Request`` subclass (no import, no other callable is
ever called with data from the store). A request whose dict holds anything else (a set, a
datetime, an object in ``meta``) raises ``TypeError`` in :func:`dumps`; the caller keeps it in
memory.
"""

from __future__ import annotations

import base64
import json
import sys
from typing import TYPE_CHECKING, Any

from scrapy.http import Request
from scrapy.utils.request import request_from_dict

if TYPE_CHECKING:
    from scrapy import Spider


def dumps(request: Request, spider: Spider | None, seq: int) -> bytes:
    """``request`` (and its sequence number) as JSON bytes; TypeError when not representable."""
    fields = request.to_dict(spider=spider)
    return json.dumps({"s": seq, "r": _encode(fields)}, separators=(",", ":")).encode()


def loads(data: bytes, spider: Spider | None) -> tuple[int, Request]:
    """The sequence number and request; ValueError (or TypeError/KeyError) when unreadable."""
    item = json.loads(data)
    fields = _decode(item["r"])
    if not isinstance(fields, dict) or not isinstance(item["s"], int):
        raise ValueError("not a serialised request")
    name = fields.get("_class")
    if name is not None:
        _check_class(name)
    return item["s"], request_from_dict(fields, spider=spider)


def _check_class(name: object) -> None:
    module_name, _, attribute = str(name).rpartition(".")
    module = sys.modules.get(module_name)
    cls = getattr(module, attribute, None) if module is not None else None
    if not (isinstance(cls, type) and issubclass(cls, Request)):
        raise ValueError(f"{name!r} is not an imported scrapy.Request class")


def _encode(value: Any) -> Any:
    # Every container is tagged, so decoding never guesses: {"b"} bytes, {"t"} tuple,
    # {"d"} dict with str keys, {"m"} dict with other keys (headers have bytes keys).
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, bytes):
        return {"b": base64.b64encode(value).decode("ascii")}
    if isinstance(value, list):
        return [_encode(item) for item in value]
    if isinstance(value, tuple):
        return {"t": [_encode(item) for item in value]}
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value):
            return {"d": {key: _encode(item) for key, item in value.items()}}
        return {"m": [[_encode(key), _encode(item)] for key, item in value.items()]}
    raise TypeError(f"{type(value).__name__} cannot be stored as JSON")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    ((tag, inner),) = value.items()
    if tag == "b":
        return base64.b64decode(inner, validate=True)
    if tag == "t":
        return tuple(_decode(item) for item in inner)
    if tag == "d":
        return {key: _decode(item) for key, item in inner.items()}
    if tag == "m":
        return {_decode(key): _decode(item) for key, item in inner}
    raise ValueError(f"unknown tag {tag!r}")

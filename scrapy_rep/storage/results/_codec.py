"""How persistent stores write an entry: JSON meta + raw body + format version; never pickle."""

from __future__ import annotations

import json
import logging
from typing import Any

from scrapy_rep.core.policy import FORMAT_VERSION
from scrapy_rep.storage.results._base import StoredRobots

logger = logging.getLogger(__name__)

__all__ = ["decode", "encode_meta"]


def encode_meta(meta: dict[str, Any]) -> str:
    return json.dumps(meta, separators=(",", ":"), sort_keys=True)


def decode(
    version: object, meta: str | bytes, body: bytes | None, origin: str
) -> StoredRobots | None:
    """The entry, or None when it was written by another format version or is unreadable."""
    if version != FORMAT_VERSION:
        logger.debug("Ignoring stored robots.txt of %s: format version %r", origin, version)
        return None
    try:
        decoded = json.loads(meta)
    except ValueError:
        decoded = None
    if not isinstance(decoded, dict):
        logger.debug("Ignoring stored robots.txt of %s: unreadable meta", origin)
        return None
    return StoredRobots(meta=decoded, body=body)

"""How persistent stores write an entry: JSON meta + raw body + format version; never pickle."""

from __future__ import annotations

import json
import logging
from typing import Any

from scrapy_rep.store._base import FORMAT_VERSION, StoredRobots

logger = logging.getLogger(__name__)

#: Key prefix (REP_STORE_PREFIX) so several projects can share one Redis database or SQLite file.
DEFAULT_PREFIX = "scrapy-rep:"
#: Seconds a store call may wait (REP_STORE_TIMEOUT): Redis socket timeouts, SQLite busy timeout.
DEFAULT_TIMEOUT = 2.0
#: Seconds an entry is kept after its last write: longer than the 30 days a last good copy may
#: serve (SPEC B3), so nothing the middleware could still use disappears, yet entries expire.
DEFAULT_ENTRY_TTL = 40 * 24 * 3600.0


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

"""What a compliance record's files hold and how their chain is computed (docs/record.md):
shared by the writer and the checker, so that both read one definition."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from scrapy_rep.core.matcher import Rule

__all__ = [
    "CHAINED",
    "CHAIN_HEADER",
    "CHAIN_START",
    "DECISION_VERSION",
    "FILE_PREFIX",
    "HASHED_QUERY",
    "MANIFEST",
    "SEAL_URI",
    "chain_link",
    "clean_url",
    "rule_fields",
    "warc_date",
    "warc_digest",
]

#: Each file's name starts so (then the run's start, its id and the file's number).
FILE_PREFIX = "rep-"
#: The directory's manifest: one JSON line per sealed file (appended when it is sealed).
MANIFEST = "manifest.jsonl"
#: The WARC header of each record that carries the chain's value after it.
CHAIN_HEADER = "WARC-Rep-Chain"
#: The chain's value before a file's first record.
CHAIN_START = hashlib.sha256(b"scrapy-rep record chain 1").hexdigest()
#: WARC-Target-URI of each file's closing seal record.
SEAL_URI = "urn:x-scrapy-rep:seal"
#: A query string the record keeps as its HMAC-SHA256 (REP_RECORD_QUERY_KEY) reads so, then
#: the digest in hex.
HASHED_QUERY = "hmac-sha256="
#: The version of a decision record's JSON payload (``payload["version"]``).
DECISION_VERSION = 1

#: The WARC headers the chain covers, in this order (an absent one counts as empty). With the
#: block's own SHA-256 they are what a record says: an edit of any of them, or of the block
#: with its WARC digests recomputed, changes the chain from that record on.
CHAINED = (
    "WARC-Type",
    "WARC-Record-ID",
    "WARC-Date",
    "WARC-Target-URI",
    "WARC-Refers-To",
    "WARC-Refers-To-Target-URI",
    "WARC-Concurrent-To",
    "WARC-Truncated",
    "WARC-Profile",
    "WARC-Block-Digest",
    "WARC-Payload-Digest",
    "Content-Type",
)


def chain_link(previous: str, header: Callable[[str], str | None], block: bytes) -> str:
    """The chain's value after a record: SHA-256 over the value before it, the ``CHAINED``
    headers (``header(name)``: a record's value, or None) and the SHA-256 of its block."""
    digest = hashlib.sha256(previous.encode("ascii"))
    for name in CHAINED:
        digest.update(f"\n{name}: {header(name) or ''}".encode())
    digest.update(b"\n")
    digest.update(hashlib.sha256(block).digest())
    return digest.hexdigest()


def warc_digest(data: bytes) -> str:
    """``data``'s WARC digest as warcio writes it: ``sha256:`` and base32."""
    return "sha256:" + base64.b32encode(hashlib.sha256(data).digest()).decode("ascii")


def warc_date(epoch: float) -> str:
    """``epoch`` as a WARC 1.1 date, to the microsecond."""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def clean_url(url: str) -> str:
    """``url`` without credentials in it (``user:password@``): never written."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def rule_fields(rule: Rule | None) -> dict[str, Any] | None:
    """A deciding rule as a decision's ``rule`` field says it (None: no rule matched)."""
    return (
        None if rule is None else {"allow": rule.allow, "pattern": rule.pattern, "line": rule.line}
    )

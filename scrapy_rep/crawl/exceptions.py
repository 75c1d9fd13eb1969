"""``scrapy_rep.RequestDropped``: what a request's errback receives when scrapy-rep drops it.

A subclass of Scrapy's ``IgnoreRequest``, so an errback written for Scrapy's own robots.txt
middleware (``failure.check(IgnoreRequest)``) works unchanged; the message says why in words
("Forbidden by robots.txt" for a Disallow, as Scrapy's), and ``reason`` says it as a code.
"""

from __future__ import annotations

from typing import Literal

from scrapy.exceptions import IgnoreRequest

__all__ = ["DropReason", "RequestDropped"]

#: ``disallowed``: a robots.txt rule; ``usage``: a usage preference refuses the declared purpose;
#: ``gave_up``: the crawl stopped waiting for an origin whose robots.txt keeps failing
#: (REP_GIVE_UP_AFTER); ``pause_gave_up``: for an origin whose pages kept asking to slow down
#: (paused longer than REP_PAUSE_GIVE_UP_AFTER); ``hold_timeout``: held
#: longer than REP_HOLD_TIMEOUT; ``crawl_delay``: the origin asks for a Crawl-delay above
#: REP_CRAWL_DELAY_MAX and REP_CRAWL_DELAY_ABOVE_MAX is "skip"; ``closing``: the crawl closed
#: while it waited (held requests get no errback then, as requests left in Scrapy's scheduler;
#: an ``engine.download`` caller, or a request waiting at the final gate, fails with it).
DropReason = Literal[
    "disallowed", "usage", "gave_up", "pause_gave_up", "hold_timeout", "crawl_delay", "closing"
]


class RequestDropped(IgnoreRequest):
    """A request scrapy-rep did not download. ``str(exc)`` says why; ``reason`` is one of
    ``DropReason``; ``origin`` is the request's origin (scheme://host[:port])."""

    def __init__(self, message: str, *, reason: DropReason, origin: str | None = None) -> None:
        super().__init__(message)
        self.reason: DropReason = reason
        self.origin = origin

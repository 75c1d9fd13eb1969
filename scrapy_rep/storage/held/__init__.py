"""Where requests held for an origin's robots.txt live until they are released.

- :class:`MemoryHeld`: this process's memory (no JOBDIR, no shared store).
- :class:`JobdirHeld`: ``<JOBDIR>/robotstxt-held.sqlite3``; every held request is on disk from
  the moment ``add`` returns until ``take`` removes it, so ``kill -9`` loses none.
- :class:`RedisHeld`: a fleet's Redis under ``REP_STORE_PREFIX``, per owner with a heartbeat;
  a live process adopts the requests of an owner whose heartbeat lapsed.
"""

from scrapy_rep.storage.held._base import HeldRequests
from scrapy_rep.storage.held._jobdir import JobdirHeld
from scrapy_rep.storage.held._memory import MemoryHeld
from scrapy_rep.storage.held._open import open_held
from scrapy_rep.storage.held._redis import RedisHeld

__all__ = ["HeldRequests", "JobdirHeld", "MemoryHeld", "RedisHeld", "open_held"]

"""Where robots.txt results (and pauses, SPEC H) live between fetches: memory, SQLite or Redis."""

from scrapy_rep.storage.results._base import RobotsStore, StoredPause, StoredRobots
from scrapy_rep.storage.results._memory import MemoryStore
from scrapy_rep.storage.results._open import open_store

__all__ = ["MemoryStore", "RobotsStore", "StoredPause", "StoredRobots", "open_store"]

"""Where robots.txt results live between fetches: memory, SQLite or Redis."""

from scrapy_rep.storage.results._base import RobotsStore, StoredRobots
from scrapy_rep.storage.results._memory import MemoryStore
from scrapy_rep.storage.results._open import open_store

__all__ = ["MemoryStore", "RobotsStore", "StoredRobots", "open_store"]

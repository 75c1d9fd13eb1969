"""Where robots.txt results live between fetches: memory, SQLite or Redis."""

from scrapy_rep.store._base import RobotsStore, StoredRobots, open_store
from scrapy_rep.store._memory import MemoryStore

__all__ = ["MemoryStore", "RobotsStore", "StoredRobots", "open_store"]

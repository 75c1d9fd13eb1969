"""Persistence: robots.txt results (``results``: memory, SQLite, Redis) and requests held for
robots.txt (``held``: memory, JOBDIR, Redis). Depends on ``core``, never on ``crawl``."""

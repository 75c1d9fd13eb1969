"""The JOBDIR ``HoldJournal``: requests held when the crawl stopped, in one file, resumed next run.

Written atomically (a temporary file renamed over the old one), so a crash while writing
leaves the previous file or none, never half of one. Read guarded: a torn or foreign file is
a WARNING naming the file and what was lost, and is moved aside so it fails no later start.
Requests are pickled as Scrapy's own disk queues pickle them (``Request.to_dict``); the file
is this job's own, like those queues.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.utils.request import request_from_dict

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.http import Request

    from scrapy_rep._events import Events

__all__ = ["HELD_FILE", "JobdirJournal"]

#: File in JOBDIR holding the requests held when the crawl stopped.
HELD_FILE = "robotstxt-held.pickle"


class JobdirJournal:
    def __init__(self, jobdir: str, spider: Callable[[], Spider | None], events: Events) -> None:
        self.path = Path(jobdir) / HELD_FILE
        self.location = str(self.path)
        self._spider = spider
        self._events = events

    def save(self, requests: list[Request]) -> list[Request]:
        saved: list[bytes] = []
        lost: list[Request] = []
        for request in requests:
            try:
                saved.append(pickle.dumps(request.to_dict(spider=self._spider()), protocol=4))
            except Exception as exc:  # as Scrapy's disk queues: not serialisable
                lost.append(request)
                self._events.not_saved(request, exc)
        if saved:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_name(self.path.name + ".tmp")
            with temporary.open("wb") as file:
                pickle.dump(saved, file, protocol=4)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        return lost

    def restore(self) -> list[Request]:
        if not self.path.exists():
            return []
        try:
            with self.path.open("rb") as file:
                saved = pickle.load(file)  # our own JOBDIR file, as Scrapy's disk queues
            if not isinstance(saved, list):
                raise TypeError(f"a {type(saved).__name__}, not a list of requests")
        except Exception as exc:
            aside = self.path.with_name(self.path.name + ".unreadable")
            os.replace(self.path, aside)
            self._events.unreadable_file(self.path, exc, aside)
            return []
        self.path.unlink()
        requests = []
        for data in saved:
            try:
                requests.append(request_from_dict(pickle.loads(data), spider=self._spider()))
            except Exception as exc:  # e.g. its callback no longer exists on the spider
                self._events.not_restored(exc)
        return requests

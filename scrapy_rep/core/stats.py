"""Every stat name scrapy-rep counts (README "Stats"), for the crawl and the stores alike.

Under Scrapy's ``robotstxt/`` prefix (the first names are those Scrapy's own middleware uses),
``tdmrep/`` for tdmrep.json fetches (the same names as robots.txt fetches) and ``robotspage/``
for the page level. Names only: who counts what is said where it is counted.
"""

from __future__ import annotations

__all__ = [
    "CRAWL_DELAY_APPLIED",
    "CRAWL_DELAY_CLAMPED",
    "CRAWL_DELAY_IGNORED",
    "CRAWL_DELAY_SKIPPED",
    "FORBIDDEN",
    "FORBIDDEN_BEFORE_DOWNLOAD",
    "FORBIDDEN_BEFORE_SCHEDULE",
    "FORBIDDEN_DUPLICATE",
    "GAVE_UP",
    "HELD",
    "HELD_ADOPTED",
    "HELD_DROPPED",
    "HELD_DROPPED_ON_CLOSE",
    "HELD_FILE_CORRUPT",
    "HELD_KEPT",
    "HELD_NOT_DURABLE",
    "HELD_PERSISTED",
    "HELD_REFILED",
    "HELD_RESTORED",
    "HELD_UNREADABLE",
    "HELD_UNSERIALIZABLE",
    "INTERNAL_ERROR",
    "PAGE_ITEMS_DROPPED",
    "PAGE_ITEMS_MARKED",
    "PAGE_ITEMS_UNMARKED",
    "PAGE_ITEMS_USAGE_DROPPED",
    "PAGE_ITEMS_USAGE_MARKED",
    "PAGE_NOFOLLOW",
    "PAGE_NOINDEX",
    "PAGE_REQUESTS_NOFOLLOW",
    "PAGE_REQUESTS_REL_NOFOLLOW",
    "PAGE_USAGE_REFUSED",
    "PAUSED",
    "PAUSE_EXTENDED",
    "PAUSE_FOLLOWED",
    "PAUSE_GAVE_UP",
    "PAUSE_PASSED",
    "PAUSE_PROBES",
    "PAUSE_RESENT",
    "PAUSE_RESUMED",
    "RECOVERED",
    "REFRESH",
    "REJUDGED",
    "RELEASED",
    "RELEASE_FAILED",
    "RESCHEDULED",
    "ROBOTSTXT_FETCH",
    "SCHEME_REFUSED",
    "SLOT_FLEET_LOCAL",
    "SLOT_WAITED",
    "SLOT_WAITING_MAX",
    "STALE_SERVED",
    "STORE_ERROR",
    "STORE_HIT",
    "TDMREP_FETCH",
    "UNREACHABLE",
    "USAGE_FORBIDDEN",
    "FetchStats",
]


class FetchStats:
    """The stats of one kind of fetched file, under its prefix: ``robotstxt/request_count``,
    ``tdmrep/request_count``…"""

    def __init__(self, prefix: str) -> None:
        self.request_count = f"{prefix}/request_count"
        self.response_count = f"{prefix}/response_count"
        #: ``…/<status>``
        self.response_status_count = f"{prefix}/response_status_count"
        #: ``…/<class '…'>``, keyed exactly as Scrapy's own middleware does.
        self.exception_count = f"{prefix}/exception_count"
        self.redirect_count = f"{prefix}/redirect_count"
        #: Chains cut after 5 redirects.
        self.redirect_limit = f"{prefix}/redirect_limit"
        #: Redirects not followed (a scheme other than http(s), a target that cannot be parsed).
        self.redirect_refused = f"{prefix}/redirect_refused"
        #: Bodies cut at 500 KiB downloaded or 512,000 bytes decoded.
        self.truncated = f"{prefix}/truncated"
        #: Refetches of a document known before (its copy expired).
        self.refresh = f"{prefix}/refresh"
        #: Results read from the store (fetched by another process, or an earlier run).
        self.store_hit = f"{prefix}/store_hit"
        #: Fetches that got no answer one way (through a proxy, or directly), tried at once
        #: the way another waiting request goes (a failing route is not a failing site).
        self.other_way = f"{prefix}/other_way"


#: robots.txt fetches: the first names are those Scrapy's own middleware uses.
ROBOTSTXT_FETCH = FetchStats("robotstxt")
#: tdmrep.json fetches (only with a purpose a TDM reservation speaks for).
TDMREP_FETCH = FetchStats("tdmrep")
#: A robots.txt request another middleware turned into a non-http(s)/ftp URL, refused.
SCHEME_REFUSED = "robotstxt/scheme_refused"

# -- decisions ------------------------------------------------------------------------------
#: Every request dropped because robots.txt disallows it, as Scrapy's middleware counts them;
#: the two below say where (a request is counted in FORBIDDEN and in one of them).
FORBIDDEN = "robotstxt/forbidden"
FORBIDDEN_BEFORE_SCHEDULE = "robotstxt/forbidden_before_schedule"
FORBIDDEN_BEFORE_DOWNLOAD = "robotstxt/forbidden_before_download"
#: A disallowed request seen again (same fingerprint): dropped without a second count or log
#: line, as the dupefilter would have dropped it before Scrapy's own middleware saw it.
FORBIDDEN_DUPLICATE = "robotstxt/forbidden_duplicate"
#: Requests dropped because their usage preferences refuse the declared purpose
#: (REP_USAGE_PURPOSES); ``…/<label>`` says which label refused.
USAGE_FORBIDDEN = "robotstxt/usage_forbidden"
CRAWL_DELAY_APPLIED = "robotstxt/crawl_delay_applied"
#: Origins whose Crawl-delay was above REP_CRAWL_DELAY_MAX, clamped to it; requests dropped
#: because their origin's was (REP_CRAWL_DELAY_ABOVE_MAX = "skip"); origins whose Crawl-delay
#: was not applied (REP_CRAWL_DELAY = False).
CRAWL_DELAY_CLAMPED = "robotstxt/crawl_delay_clamped"
CRAWL_DELAY_SKIPPED = "robotstxt/crawl_delay_skipped"
CRAWL_DELAY_IGNORED = "robotstxt/crawl_delay_ignored"
#: Requests sent back to the gate from the downloader (their origin became unknown or
#: unreachable after the gate allowed them).
RESCHEDULED = "robotstxt/rescheduled"
#: Requests judged again before download because the verdict they carried was not given to
#: them in this process (restored from JOBDIR, queued by another process of a fleet, or a copy
#: of another request's meta), or their URL or User-Agent changed after it was given.
REJUDGED = "robotstxt/rejudged"
#: Requests that waited for a place in their download slot, off the downloader's places
#: (Scrapy >= 2.14 would have started them over the slot's concurrency, Scrapy < 2.14 queued
#: them in ``Downloader.active``); the most waiting at once.
SLOT_WAITED = "robotstxt/slot/waited"
SLOT_WAITING_MAX = "robotstxt/slot/waiting_max"
#: Places a fleet process took in a download slot on its own, its share of the slot's limits,
#: while Redis did not answer.
SLOT_FLEET_LOCAL = "robotstxt/slot/fleet_local"

# -- origins --------------------------------------------------------------------------------
UNREACHABLE = "robotstxt/unreachable"
RECOVERED = "robotstxt/recovered"
STALE_SERVED = "robotstxt/stale_served"
REFRESH = ROBOTSTXT_FETCH.refresh
#: Origins the crawl stopped waiting for because robots.txt failed REP_GIVE_UP_AFTER times in a
#: row (a pause given up is ``PAUSE_GAVE_UP``).
GAVE_UP = "robotstxt/gave_up"
STORE_HIT = ROBOTSTXT_FETCH.store_hit
#: Store calls that failed: the robots.txt store, and Redis for held requests.
STORE_ERROR = "robotstxt/store_error"
#: Errors of scrapy-rep's own (or of a middleware) while handling a site's answer or
#: resolving an origin: each counts as that origin's failure, so it is backed off and given up.
INTERNAL_ERROR = "robotstxt/internal_error"

# -- pauses: origins whose pages said "slow down" (SPEC H) ------------------------------------
#: Origins paused by this process (a 503, a 429, or several pages answering 5xx in a row).
PAUSED = "robotstxt/pause/paused"
#: Pauses made longer: the probe was answered "slow down" again, or got no answer.
PAUSE_EXTENDED = "robotstxt/pause/extended"
#: Pauses another fleet process (or an earlier run of the job) found, followed here.
PAUSE_FOLLOWED = "robotstxt/pause/followed"
PAUSE_RESUMED = "robotstxt/pause/resumed"
#: Origins the crawl stopped waiting for because they stayed paused for longer than
#: REP_PAUSE_GIVE_UP_AFTER (their requests dropped with the reason ``pause_gave_up``).
PAUSE_GAVE_UP = "robotstxt/pause/gave_up"
#: Requests sent as the one probe when a pause was over.
PAUSE_PROBES = "robotstxt/pause/probes"
#: Requests sent again after a pause, by the status that paused them (``…/<status>``): the one
#: that got the answer (RetryMiddleware does not retry it) and those waiting in its slot.
PAUSE_RESENT = "robotstxt/pause/resent"
#: Answers of a paused origin given to the spider as they are (it handles the status itself:
#: ``handle_httpstatus_list``, ``dont_retry``).
PAUSE_PASSED = "robotstxt/pause/passed_to_spider"

# -- held requests (each counted once in HELD, and once by its fate) --------------------------
HELD = "robotstxt/held"
RELEASED = "robotstxt/released"
RELEASE_FAILED = "robotstxt/release_failed"
HELD_DROPPED = "robotstxt/held_dropped"
HELD_DROPPED_ON_CLOSE = "robotstxt/held_dropped_on_close"
HELD_PERSISTED = "robotstxt/held_persisted"
#: Held requests the crawl stopped waiting for (REP_HOLD_TIMEOUT, REP_GIVE_UP_AFTER), left in
#: JOBDIR or Redis for the job's next run instead of being dropped.
HELD_KEPT = "robotstxt/held_kept_for_next_run"
HELD_RESTORED = "robotstxt/held_restored"
#: Restored or adopted held requests the dupefilter had seen but no longer knew (a JOBDIR job
#: killed before Scrapy flushed ``requests.seen``, another process's): filed with it again.
HELD_REFILED = "robotstxt/held_refiled"
#: Requests a stopped or dead fleet process held, adopted by this one (Redis).
HELD_ADOPTED = "robotstxt/held_adopted"
#: Held requests kept in this process's memory only: not JSON-storable or Redis down.
HELD_NOT_DURABLE = "robotstxt/held_not_durable"
#: Held requests kept in this process's memory only: not picklable into JOBDIR.
HELD_UNSERIALIZABLE = "robotstxt/held_unserializable"
HELD_UNREADABLE = "robotstxt/held_unreadable"
#: A JOBDIR held-requests file moved aside as corrupt.
HELD_FILE_CORRUPT = "robotstxt/held_file_corrupt"

# -- the page level (robots meta tags, X-Robots-Tag, a page's usage preferences) --------------
PAGE_NOFOLLOW = "robotspage/pages/nofollow"
PAGE_NOINDEX = "robotspage/pages/noindex"
PAGE_USAGE_REFUSED = "robotspage/pages/usage_refused"
PAGE_REQUESTS_NOFOLLOW = "robotspage/requests/nofollow"
PAGE_REQUESTS_REL_NOFOLLOW = "robotspage/requests/rel_nofollow"
PAGE_ITEMS_MARKED = "robotspage/items/marked"
PAGE_ITEMS_UNMARKED = "robotspage/items/unmarked"
PAGE_ITEMS_DROPPED = "robotspage/items/dropped"
PAGE_ITEMS_USAGE_MARKED = "robotspage/items/usage_marked"
PAGE_ITEMS_USAGE_DROPPED = "robotspage/items/usage_dropped"

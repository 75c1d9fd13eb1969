"""What the robots.txt middleware tells the user about origins and held requests: its log
lines, in one place.

The middleware, the resolver, the holds and the verdicts call these methods ("a request was
held", "robots.txt became unreachable") and never format such a message themselves; the
other components write their own few lines (the guard, the page level, the fetcher's refused
redirect, tdmrep.json, the stores). Stat names are those of ``scrapy_rep.core.stats``, the one
module naming every stat; the names the parts count through ``Events.count`` are imported
here for them.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from scrapy_rep.core.explain_text import duration
from scrapy_rep.core.policy import fast_retry, give_up_at
from scrapy_rep.core.seen import BoundedSet
from scrapy_rep.core.stats import (
    CRAWL_DELAY_CLAMPED,
    CRAWL_DELAY_IGNORED,
    CRAWL_DELAY_SKIPPED,
    FORBIDDEN,
    FORBIDDEN_BEFORE_DOWNLOAD,
    FORBIDDEN_BEFORE_SCHEDULE,
    GAVE_UP,
    HELD_DROPPED,
    HELD_DROPPED_ON_CLOSE,
    HELD_KEPT,
    HELD_PERSISTED,
    HELD_RESTORED,
    INTERNAL_ERROR,
    PAUSE_FOLLOWED,
    PAUSE_GAVE_UP,
    PAUSE_RESUMED,
    RECOVERED,
    RELEASE_FAILED,
    SCHEME_REFUSED,
    STALE_SERVED,
    UNREACHABLE,
    USAGE_FORBIDDEN,
)
from scrapy_rep.crawl.exceptions import DropReason, RequestDropped
from scrapy_rep.storage.outage import Outage

if TYPE_CHECKING:
    from scrapy.http import Request
    from twisted.internet.defer import Deferred
    from twisted.python.failure import Failure

    from scrapy_rep.core.policy import Entry, Limits
    from scrapy_rep.core.sources import UsageDocument
    from scrapy_rep.crawl._cache import OriginState

__all__ = [
    "Events",
    "Waiting",
    "Where",
    "Why",
    "give_up_reason",
    "guarded",
    "withdraw",
]

logger = logging.getLogger("scrapy_rep.crawl.robotstxt_middleware")

#: Where a request was dropped: at the gate, at the final gate, or after it waited (held).
Where = Literal["before_schedule", "before_download", "after_waiting"]


@dataclass(frozen=True)
class Why:
    """Why requests are dropped: the errback's message, the stats' and the log's words."""

    reason: DropReason
    #: What the errback's exception says ("Forbidden by robots.txt").
    message: str
    origin: str | None = None
    #: What decided, for log lines ("Disallow: /private (line 3); no group for MyBot; used *");
    #: a callable when it costs work, formatted only when a line is written.
    rule: str | Callable[[], str] = ""
    #: The usage label that refused (``reason == "usage"``).
    label: str | None = None
    #: What the user can change, appended to the log line.
    advice: str = ""
    #: The robots.txt state that refused (``OriginState``), for the compliance record.
    judged: Any = field(default=None, compare=False, repr=False)

    def rule_text(self) -> str:
        return self.rule() if callable(self.rule) else self.rule

    #: As a log argument, a ``Why`` is its ``rule_text``, worked out only if a handler writes
    #: the line: Scrapy's LOG_LEVEL filters in its handler, so ``isEnabledFor(DEBUG)`` holds at
    #: INFO.
    __str__ = rule_text

    def summary(self) -> str:
        """The reason in the closing summary, under the origin's name."""
        rule = self.rule_text()
        if self.reason in ("disallowed", "usage"):
            return f"{self.message}: {rule}" if rule else self.message
        return rule or self.message

    def exception(self) -> RequestDropped:
        """What the request's errback (or an ``engine.download`` caller) receives."""
        return RequestDropped(self.message, reason=self.reason, origin=self.origin)


def give_up_reason(failures: int, error: str | None, status: int | None = None) -> str:
    """Why the crawl stopped waiting for an origin whose robots.txt kept failing, with the
    settings that make it stop sooner or later."""
    return (
        f"its robots.txt failed {failures} times in a row ({error or 'server error'}); "
        f"to give up sooner, lower REP_GIVE_UP_AFTER or {_delay_setting(status)}; to wait "
        "longer, raise them (REP_GIVE_UP_AFTER = 0: up to REP_HOLD_TIMEOUT)"
    )


def _delay_setting(status: int | None) -> str:
    """The setting of the first retry delay after an answer with ``status`` (SPEC B2)."""
    return "REP_RETRY_FAST_DELAY" if fast_retry(status) else "REP_RETRY_DELAY"


def _clock(epoch: float) -> str:
    """``18:35:28`` in local time, as Scrapy's log lines stamp it (the date too when later
    than a day from now)."""
    later = epoch - time.time() >= 86400
    return time.strftime("%Y-%m-%d %H:%M:%S" if later else "%H:%M:%S", time.localtime(epoch))


def _nth(number: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``21st``."""
    suffix = "th" if 10 <= number % 100 <= 20 else _SUFFIXES.get(number % 10, "th")
    return f"{number}{suffix}"


_SUFFIXES = {1: "st", 2: "nd", 3: "rd"}


@dataclass(frozen=True)
class Waiting:
    """What decides how long a crawl waits for an origin whose robots.txt fails, for the log:
    the retry schedule and REP_GIVE_UP_AFTER (``limits``), REP_HOLD_TIMEOUT, when its oldest
    waiting request began to wait (``since``; None: not known) and when this run began
    (``started``: failures recorded before it, in a store, are not its own to give up on)."""

    limits: Limits
    hold_timeout: float
    since: float | None = None
    started: float = -math.inf

    def stop(self, entry: Entry) -> tuple[float, bool] | None:
        """When the crawl stops waiting for the origin if robots.txt keeps failing as it did,
        and whether that is the give-up (REP_GIVE_UP_AFTER failures in a row) rather than
        REP_HOLD_TIMEOUT; None when neither is known."""
        give_up = give_up_at(entry, self.limits)
        if give_up is not None and entry.fetched_at < self.started and entry.retry_at is not None:
            # An earlier run's failures (Resolver.given_up): this run makes the attempt the
            # store has due first.
            give_up = max(give_up, entry.retry_at)
        timeout = None if self.since is None else self.since + self.hold_timeout
        if give_up is not None and (timeout is None or give_up <= timeout):
            return give_up, True
        return None if timeout is None else (timeout, False)

    def attempt(self, entry: Entry, now: float) -> str:
        """After a failed attempt: how many in a row, when the next one is, and when the crawl
        stops waiting (``resolved``)."""
        failures, limit = entry.failures, self.limits.give_up_after
        row = f"{_plural(failures, 'failure')} in a row"
        # The failure in a row the crawl stops waiting at (its own attempt first when the
        # failures are an earlier run's).
        last = limit if entry.fetched_at >= self.started else max(limit, failures + 1)
        stop = self.stop(entry)
        if stop is not None and stop[1] and failures >= last:
            return f"{row}: the crawl stops waiting for it now (REP_GIVE_UP_AFTER={limit})"
        retry_at = entry.retry_at if entry.retry_at is not None else now
        text = f"{row}; next attempt in {duration(retry_at - now)} ({_clock(retry_at)})"
        if stop is None:
            return text
        at, gives_up = stop
        if gives_up:
            return (
                f"{text}; if it keeps failing, the crawl stops waiting for it at about "
                f"{_clock(at)}, at its {_nth(last)} failure (REP_GIVE_UP_AFTER)"
            )
        start = "now" if at <= now else _clock(at)
        return (
            f"{text}; the crawl stops waiting for its requests from {start} on, each "
            f"after REP_HOLD_TIMEOUT={duration(self.hold_timeout)}"
        )


def _waited_for(counts: dict[str, int]) -> str:
    """``{"robots.txt": 3, "pause": 2}`` in words: "3 waiting for robots.txt, 2 for their
    origin's pause"."""
    parts: list[str] = []
    for what, count in sorted(counts.items(), key=lambda item: -item[1]):
        thing = "their origin's pause" if what == "pause" else what
        parts.append(f"{count} {'waiting for ' if not parts else 'for '}{thing}")
    return ", ".join(parts)


if TYPE_CHECKING:
    _Adapter = logging.LoggerAdapter[logging.Logger]
else:
    _Adapter = logging.LoggerAdapter


class _SpiderLog(_Adapter):
    """The middleware's logger, each record with the crawl's spider (``extra``), as Scrapy's
    own log lines carry it."""

    def __init__(self, spider: Callable[[], object]) -> None:
        super().__init__(logger, {})
        self.spider = spider

    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        kwargs["extra"] = {"spider": self.spider()}
        return msg, kwargs


class Events:
    def __init__(self, stats: Any, spider: Callable[[], object]) -> None:
        self._stats = stats
        self._log = _SpiderLog(spider)
        self._store = Outage(
            stats=stats,
            logger=logger,
            lost="robots.txt store unavailable (%s): going on with this process's own state "
            "until it answers again",
            back="robots.txt store is available again",
            spider=spider,
        )
        # Origins whose waiting requests were announced (``holding``), until answered.
        self._announced: BoundedSet[str] = BoundedSet()
        # Origins whose requests were kept for the next run (one WARNING each).
        self._kept: BoundedSet[str] = BoundedSet()
        # What is logged once: each kind of internal error (``fetch_broke``, ``contained``:
        # "where:ErrorType"), and a restored request the dupefilter failed on ("not_filed").
        self._once: BoundedSet[str] = BoundedSet()

    def count(self, stat: str, n: int = 1) -> None:
        self._stats.inc_value(stat, n)

    def gave_up(self, reason: DropReason) -> None:
        """The crawl stopped waiting for an origin: counted by what gave it up (its robots.txt,
        ``gave_up``, or a pause, ``pause_gave_up``)."""
        self.count(GAVE_UP if reason == "gave_up" else PAUSE_GAVE_UP)

    def most(self, stat: str, value: int) -> None:
        """``stat`` is the largest ``value`` seen."""
        self._stats.max_value(stat, value)

    def refused(self, request: Request, why: Why, where: Where) -> None:
        """``request`` refused by a gate (``why.reason``: "disallowed" or "usage"; "crawl_delay",
        above REP_CRAWL_DELAY_MAX, is only counted)."""
        scheduling = where == "before_schedule"
        when = "before scheduling" if scheduling else "before download"
        if why.reason == "crawl_delay":
            self.count(CRAWL_DELAY_SKIPPED)
        elif why.reason == "usage":
            self.count(USAGE_FORBIDDEN)
            self.count(f"{USAGE_FORBIDDEN}/{why.label}")
            self._log.debug("Not used for %s %s: %s (%s)", why.label, when, request, why)
        else:
            self.count(FORBIDDEN)
            self.count(FORBIDDEN_BEFORE_SCHEDULE if scheduling else FORBIDDEN_BEFORE_DOWNLOAD)
            self._log.debug("Forbidden by robots.txt %s: %s (%s)", when, request, why)

    def start_refused(self, request: Request, why: Why) -> None:
        """A start request refused: the crawl may be blocked (once per origin)."""
        self._log.warning(
            "Start request %s %s (%s; %s). It is not downloaded, nor is any other request of "
            "%s this rule refuses",
            request,
            "is forbidden by robots.txt" if why.reason == "disallowed" else "is refused",
            why.origin if why.reason == "disallowed" else why.message,
            why.rule_text(),
            why.origin,
        )

    def dropped(self, origin: str, count: int, why: Why) -> None:
        """``count`` waiting requests of ``origin`` are not downloaded (``why``)."""
        self.count(HELD_DROPPED, count)
        self._log.warning(
            "Dropped %d request(s) for %s, not downloaded: %s%s",
            count,
            origin,
            why.rule_text() or why.message,
            why.advice,
        )

    def drop_summary(self, total: int, origins: int, top: list[tuple[str, str]]) -> None:
        """At close: how many requests scrapy-rep dropped, and from where most of them (each
        origin with its counts by reason, ``Drops.summarize``)."""
        if total:
            self._log.info(
                "scrapy-rep dropped %d request(s), not downloaded, from %d origin(s)%s:%s",
                total,
                origins,
                f" (the {len(top)} with the most below)" if origins > len(top) else "",
                "".join(f"\n  {origin}: {counts}" for origin, counts in top),
            )

    def kept(self, origin: str, kept: int, reason: str, next_run: str | None) -> None:
        """The crawl stopped waiting for ``origin``'s robots.txt (``reason``): ``kept`` held
        requests wait for the job's next run (``next_run`` says where and how)."""
        self.count(HELD_KEPT, kept)
        self._log.log(
            logging.WARNING if self._kept.add(origin) else logging.INFO,
            "Stopped waiting for %s: %s. Its %d held request(s) are kept for the job's "
            "next run in %s",
            origin,
            reason,
            kept,
            next_run,
        )

    def undelivered(self, request: Request) -> None:
        """A dropped request's errback could not be handed to Scrapy (the crawl closed)."""
        self._log.debug("Errback of %s not delivered", request, exc_info=True)

    def scheme_refused(self, url: str, scheme: str) -> None:
        """RobotsTxtGuard refused a robots.txt request another middleware rewrote."""
        self.count(SCHEME_REFUSED)
        self._log.warning("Refused to fetch robots.txt from %.200r (%s:)", url, scheme)

    def redirect_refused(self, document: str, url: str, error: str) -> None:
        """SPEC B2: a redirect of ``document`` at ``url`` is not followed: no such document."""
        self._log.warning("%s at %s: %s; no %s, everything allowed", document, url, error, document)

    def document_resolved(self, document: UsageDocument, state: OriginState[Any]) -> None:
        """A usage document of an origin is known: what it holds, or why it states nothing."""
        if state.serving.kind == "rules" and state.document is not None:
            self._log.info(
                "%s of %s: %s", document.name, state.origin, document.summary(state.document)
            )
        elif state.serving.kind == "hold":
            self._log.info(
                "%s of %s could not be fetched (%s): it states nothing for now",
                document.name,
                state.origin,
                state.entry.error or f"status {state.entry.status}",
            )

    def crawl_delay(
        self, origin: str, asked: float, applied: float | None, *, on: bool, most: float
    ) -> None:
        """``origin``'s robots.txt asks for a Crawl-delay: say what is done with it (once per
        copy of its rules), given REP_CRAWL_DELAY (``on``) and REP_CRAWL_DELAY_MAX (``most``)."""
        if not on:
            self.count(CRAWL_DELAY_IGNORED)
            what = "not applied (REP_CRAWL_DELAY = False; Google ignores it)"
        elif applied is None or math.isinf(applied):
            what = (
                f"above REP_CRAWL_DELAY_MAX={most:g}s: its requests are "
                "dropped (REP_CRAWL_DELAY_ABOVE_MAX = 'skip')"
            )
        elif applied < asked:
            self.count(CRAWL_DELAY_CLAMPED)
            what = f"clamped to {applied:g}s (REP_CRAWL_DELAY_MAX)"
        else:
            what = "applied to its download slot"
        self._log.info("Crawl-delay %gs of %s: %s", asked, origin, what)

    def paused(self, origin: str, seconds: float, reason: str, *, first: bool) -> None:
        """``origin`` pauses for ``seconds`` (SPEC H): a WARNING when it starts, then INFO."""
        if first:
            self._log.warning(
                "Pausing %s for %s: %s. Its requests are held and sent again after the pause, "
                "then one request probes it (REP_PAUSE = False turns pauses off)",
                origin,
                duration(seconds),
                reason,
            )
        else:
            self._log.info(
                "%s still asks to slow down (%s): paused for %s more",
                origin,
                reason,
                duration(seconds),
            )

    def paused_elsewhere(self, origin: str, seconds: float, reason: str) -> None:
        """Another process of the fleet (or an earlier run of the job) paused ``origin``."""
        self.count(PAUSE_FOLLOWED)
        self._log.info(
            "%s is paused (found in the store: %s), %s left: its requests are held",
            origin,
            reason,
            duration(seconds),
        )

    def resumed(self, origin: str, paused_for: float, why: str) -> None:
        self.count(PAUSE_RESUMED)
        self._log.info("Resuming %s after %s paused: %s", origin, duration(paused_for), why)

    def release_failed(self, request: Request, error: BaseException) -> None:
        self.count(RELEASE_FAILED)
        self._log.warning(
            "Could not send %s back to the scheduler (%s): it stays held and is retried",
            request,
            error,
        )

    def not_filed(self, request: Request, error: BaseException) -> None:
        """A restored request could not be filed with the dupefilter (once: the rest alike)."""
        if self._once.add("not_filed"):
            self._log.warning(
                "Could not file %s with the dupefilter (%s): the spider's own copy of it, if it "
                "makes one again, may be downloaded too (further such failures are not logged)",
                request,
                error,
            )

    def store_failed(self, error: str) -> None:
        self._store.failed(error)

    def resolve_failed(self, document: str, origin: str, error: Failure, *, first: bool) -> None:
        """Resolving ``document`` of ``origin`` failed outright: ERROR with its traceback the
        first time in a row, DEBUG after (it is retried, backing off)."""
        self.count(INTERNAL_ERROR)
        if first:
            self._log.error(
                "Resolving %s of %s failed (retried, backing off): %s",
                document,
                origin,
                error.getErrorMessage(),
                exc_info=error.value,
            )
        else:
            self._log.debug("Resolving %s of %s failed again", document, origin)

    def contained(self, where: str, error: Exception, *, once: str | None = None) -> None:
        """Handling ``where`` raised (a signal handler, where Scrapy would log it every time; a
        site's answer): an ERROR with the traceback once per kind of error (and ``once``, else
        ``where``), then only the stat."""
        self.count(INTERNAL_ERROR)
        if self._once.add(f"{once or where}:{type(error).__name__}"):
            self._log.error("Handling %s failed (logged once): %r", where, error, exc_info=error)

    def way_failed(self, document: str, origin: str, way: str, error: object) -> None:
        """``origin``'s ``document`` got no answer by ``way`` (a proxy, or "": directly): it is
        fetched at once the way another waiting request goes."""
        self._log.info(
            "%s of %s got no answer %s (%s): fetching it the way other requests go",
            document,
            origin,
            f"through {way}" if way else "directly",
            error,
        )

    def fetch_broke(self, document: str, origin: str, error: Exception) -> None:
        """Handling the answer to ``origin``'s ``document`` raised: it counts as that origin's
        failed fetch (logged once per document and kind of error)."""
        where = f"the answer for {document} of {origin} (counted as a failed fetch)"
        self.contained(where, error, once=document)

    def resolved(
        self,
        state: OriginState[Any],
        previous: OriginState[Any] | None,
        now: float,
        *,
        from_store: bool,
        waiting: Waiting | None = None,
    ) -> None:
        """Log a freshly resolved robots.txt (SPEC B2/B3 outcome, next fetch) as a sentence.

        ``waiting``: requests wait for this origin (None: none do, as in the explain command,
        and nothing says "holding"). Then a failed attempt says how many failed in a row, when
        the next one is and when the crawl stops waiting (one INFO line per attempt), and
        ``holding`` warns once, with the settings that change it.
        """
        entry, decision = state.entry, state.serving
        if decision.kind != "hold":
            self._announced.discard(state.origin)
        failing = entry.outcome == "unreachable"
        was_failing = previous is not None and previous.entry.outcome == "unreachable"
        if failing and not was_failing:
            self.count(UNREACHABLE)
            if decision.kind != "hold" or waiting is None:
                self._log.warning(
                    "robots.txt of %s is unreachable (%s)%s",
                    state.origin,
                    entry.error or f"status {entry.status}",
                    ": serving the last good copy"
                    if decision.stale
                    else ": unreachable for longer than REP_UNREACHABLE_ALLOW_AFTER, "
                    "everything allowed"
                    if decision.kind != "hold"
                    else "",
                )
        elif was_failing and not failing:
            self.count(RECOVERED)
            self._log.warning("robots.txt of %s is reachable again", state.origin)
        if failing and decision.stale:
            self.count(STALE_SERVED)
        details = []
        if entry.redirects:
            details.append(_plural(len(entry.redirects), "redirect") + " followed")
        if entry.truncated:
            details.append("cut at 500 KiB")
        if from_store:
            age = duration(now - entry.fetched_at)
            details.append(f"read from the robots.txt store, fetched {age} ago")
        if waiting is not None and decision.kind == "hold" and failing:
            then = waiting.attempt(entry, now)
        else:
            then = f"next fetch in {duration(decision.refresh_at - now)}"
        self._log.info(
            "robots.txt of %s: %s%s; %s",
            state.origin,
            _outcome(state),
            f" ({', '.join(details)})" if details else "",
            then,
        )

    def holding(self, state: OriginState[Any], waiting: Waiting) -> None:
        """Requests of an origin whose robots.txt is unreachable wait.

        One WARNING per origin while it stays unreachable, not one per request: until when,
        and which settings change that (each attempt then has its INFO line, ``resolved``).
        """
        if not self._announced.add(state.origin):
            return
        entry, limits = state.entry, waiting.limits
        stop = waiting.stop(entry)
        hold = f"REP_HOLD_TIMEOUT={duration(waiting.hold_timeout)}"
        if stop is not None and stop[1]:
            until = (
                f"or until about {_clock(stop[0])} if it keeps failing "
                f"({limits.give_up_after} failures in a row: REP_GIVE_UP_AFTER)"
            )
            first = limits.retry_fast_delay if fast_retry(entry.status) else limits.retry_delay
            advice = (
                f"to wait less, lower REP_GIVE_UP_AFTER={limits.give_up_after} or "
                f"{_delay_setting(entry.status)}={duration(first)}; to wait longer, raise them, "
                f"or set REP_GIVE_UP_AFTER = 0 to wait up to {hold}"
            )
        else:
            until = f"each for at most {duration(waiting.hold_timeout)}"
            if stop is not None:
                until += f" (REP_HOLD_TIMEOUT), the first until {_clock(stop[0])}"
            advice = (
                f"to wait less, lower {hold} or REP_GIVE_UP_AFTER; to wait longer, raise both"
                if limits.give_up_after > 0
                else f"to wait less, lower {hold}, or set REP_GIVE_UP_AFTER (failures in a row "
                "after which the crawl stops waiting); to wait longer, raise REP_HOLD_TIMEOUT"
            )
        self._log.warning(
            "Waiting for the robots.txt of %s (unreachable: %s): its requests are held until it "
            "answers, %s; %s",
            state.origin,
            entry.error or f"status {entry.status}",
            until,
            advice,
        )

    def closed_with_held(self, lost: int, waited_for: dict[str, int]) -> None:
        """The crawl closed with ``lost`` requests held in memory only (no durable place);
        ``waited_for``: how many waited for what."""
        if lost:
            self.count(HELD_DROPPED_ON_CLOSE, lost)
            self._log.warning(
                "Crawl closed with %d request(s) held (%s); they were not downloaded "
                "(set JOBDIR, or a Redis REP_STORE, to keep them for the next run)",
                lost,
                _waited_for(waited_for) or "waiting",
            )

    def closed_keeping(
        self, persisted: int, kept: int, next_run: str, waited_for: dict[str, int]
    ) -> None:
        """The crawl closed with a durable place: ``persisted`` requests were still waiting
        (``waited_for``: for what), ``kept`` were put aside earlier; all of them wait for the
        next run there."""
        if persisted:
            self.count(HELD_PERSISTED, persisted)
        if persisted or kept:
            waiting = _waited_for(waited_for)
            self._log.info(
                "%d held request(s) stay in %s (%d still waiting when the crawl closed%s, %d "
                "that it stopped waiting for)",
                persisted + kept,
                next_run,
                persisted,
                f": {waiting}" if persisted and waiting else "",
                kept,
            )

    def restored(self, count: int) -> None:
        self.count(HELD_RESTORED, count)
        self._log.info("Resuming %d request(s) held when the job stopped", count)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _outcome(state: OriginState[Any]) -> str:
    """What the robots.txt in use means, in words (SPEC B2, B3)."""
    entry, decision = state.entry, state.serving
    failure = entry.error or f"status {entry.status}"
    if decision.outcome == "allow_all":
        return f"unreachable for too long ({failure}): everything allowed"
    if decision.outcome == "unreachable":
        return f"unreachable ({failure}): nothing of it is downloaded for now"
    status = entry.good.status if entry.good is not None else entry.status
    if decision.outcome == "ok":
        rules = state.document.rule_count if state.document is not None else 0
        answer = f"{_plural(rules, 'rule')} (status {status})"
    else:
        why = [f"status {status}"] if status is not None else []
        if entry.error and entry.outcome != "unreachable":
            why.append(entry.error)
        answer = f"no robots.txt ({', '.join(why) or 'none'}): everything allowed"
    if decision.stale:
        return f"unreachable ({failure}), serving the last good copy: {answer}"
    return answer


# -- Deferred bookkeeping the resolvers and the pauses share: waiters per key that may cancel,
# and store calls that must not break the crawl (their failures told through ``Events``).

_W = TypeVar("_W")


def withdraw(waiters: dict[str, list[Deferred[_W]]], key: str, waiter: Deferred[_W]) -> None:
    """``waiter`` (cancelled) no longer waits for ``key``; a key no one waits for is dropped."""
    waiting = waiters.get(key, [])
    if waiter in waiting:
        waiting.remove(waiter)
    if not waiting:
        waiters.pop(key, None)


def guarded(events: Events, call: Deferred[Any], default: Any = None) -> Deferred[Any]:
    """``call``'s result (a store call), or ``default`` when the store fails: warned once per
    outage, its end told (the ``Outage`` of ``events``, as for ``Events.store_failed``)."""

    def answered(result: Any) -> Any:
        events._store.answered()
        return result

    def failed(failure: Failure) -> Any:
        events._store.failed(failure.getErrorMessage())
        return default

    return call.addCallbacks(answered, failed)

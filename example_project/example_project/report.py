"""The demo crawl's closing report: what happened to each request, and why.

The spider feeds a ``DemoReport`` as the crawl goes: the requests it made, the pages and
items it got, what each errback received, when requests reached the downloader and what
came back (robots.txt answers included), each origin's robots.txt outcome. ``render`` turns
that into the text printed at the end, one section per thing scrapy-rep did; a section
about something that did not happen (on a real site, ``-a start_url=...``) is left out.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from twisted.internet.defer import Deferred

from scrapy_rep import PageRules, RequestDropped, describe_origin, explain, format_rule
from scrapy_rep.core.usage import LABELS

# Statuses that say "slow down" to scrapy-rep (SPEC B2 for robots.txt, H1 for pages).
_SLOW_DOWN = {429, 503}

# Each errback reason (``RequestDropped.reason``): what it means, and the stats counting it.
_REASONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "disallowed": (
        "a robots.txt rule forbids them",
        ("robotstxt/forbidden_before_schedule", "robotstxt/forbidden_before_download"),
    ),
    "usage": ("a usage preference refuses the declared purpose", ("robotstxt/usage_forbidden",)),
    "gave_up": (
        "their robots.txt failed REP_GIVE_UP_AFTER times in a row: the crawl stopped waiting",
        ("robotstxt/gave_up", "robotstxt/held_dropped"),
    ),
    "pause_gave_up": (
        "their site stayed paused (its pages said slow down) longer than REP_PAUSE_GIVE_UP_AFTER",
        ("robotstxt/pause/gave_up", "robotstxt/held_dropped"),
    ),
    "hold_timeout": (
        "they waited for their robots.txt longer than REP_HOLD_TIMEOUT",
        ("robotstxt/held_dropped",),
    ),
    "crawl_delay": (
        "their origin's Crawl-delay is above REP_CRAWL_DELAY_MAX",
        ("robotstxt/crawl_delay_skipped",),
    ),
}

_RECOVERY_STATS = (
    "robotstxt/unreachable",
    "robotstxt/recovered",
    "robotstxt/held",
    "robotstxt/released",
    "robotstxt/request_count",
)
_PAUSE_STATS = (
    "robotstxt/pause/paused",
    "robotstxt/pause/resumed",
    "robotstxt/pause/resent/",
    "robotstxt/rescheduled",  # the request a pause caught on its way, sent again after it
)
# tdmrep.json is fetched for a train-ai purpose; a page's own preferences refuse items.
_USAGE_STATS = (
    "tdmrep/request_count",
    "tdmrep/response_status_count/",
    "robotspage/pages/usage_refused",
    "robotspage/items/usage_dropped",
)
_PAGE_STATS = ("robotspage/requests/nofollow", "robotspage/items/marked")


# What each stat counts, in a few words (README "Stats" has them all): exact names, then
# names under a prefix.
_MEANS = {
    "robotstxt/request_count": "robots.txt requests sent",
    "robotstxt/response_count": "robots.txt answers received",
    "robotstxt/forbidden": "requests a robots.txt rule forbids, dropped",
    "robotstxt/forbidden_before_schedule": "of those, before they reached the scheduler",
    "robotstxt/forbidden_before_download": "of those, just before download",
    "robotstxt/held": (
        "requests that waited at the gate, every origin: for its robots.txt (a first fetch, "
        "or a retry), a pause, or a usage document a purpose needs"
    ),
    "robotstxt/released": "waiting requests sent on once what they waited for came",
    "robotstxt/held_dropped": "waiting requests dropped (given up, or REP_HOLD_TIMEOUT)",
    "robotstxt/held_dropped_on_close": "requests still waiting when the crawl closed, dropped",
    "robotstxt/gave_up": "origins whose robots.txt failed REP_GIVE_UP_AFTER times in a row",
    "robotstxt/rescheduled": (
        "requests sent back from the downloader to the gate: caught by a pause on their way "
        "(sent again after it), or their robots.txt unknown again"
    ),
    "robotstxt/unreachable": "origins whose robots.txt failed (429, 5xx, network error)",
    "robotstxt/recovered": "origins whose robots.txt answered again",
    "robotstxt/usage_forbidden": "requests refused for the declared purpose",
    "robotstxt/pause/paused": "origins paused: a page said slow down",
    "robotstxt/pause/resumed": "pauses over",
    "robotstxt/pause/extended": "pauses made longer",
    "robotstxt/pause/probes": "requests sent alone after a pause, to probe the site",
    "robotstxt/pause/gave_up": "origins paused longer than REP_PAUSE_GIVE_UP_AFTER, given up",
    "robotstxt/slot/waited": "requests that waited for a place in their download slot",
    "robotstxt/slot/waiting_max": "the most waiting for a place at once",
    "robotspage/pages/noindex": "pages saying noindex",
    "robotspage/pages/nofollow": "pages saying nofollow",
    "robotspage/requests/nofollow": "links of nofollow pages, not followed",
    "robotspage/items/marked": "items marked rep_noindex",
    "robotspage/pages/usage_refused": "pages whose own statements refuse the purpose",
    "robotspage/items/usage_dropped": "items dropped for the purpose",
    "tdmrep/request_count": "tdmrep.json requests, one per origin (train-ai needs them)",
    "tdmrep/response_count": "tdmrep.json answers received",
}
_MEANS_UNDER = {
    "robotstxt/response_status_count/": "robots.txt answers with this status",
    "robotstxt/exception_count/": "robots.txt downloads that failed so",
    "robotstxt/pause/resent/": "requests sent again after a pause, by what paused them",
    "robotstxt/usage_forbidden/": "of those, by the label that refused",
    "tdmrep/response_status_count/": "tdmrep.json answers with this status (404: none)",
}


def _meaning(name: str) -> str | None:
    if name in _MEANS:
        return _MEANS[name]
    return next((words for under, words in _MEANS_UNDER.items() if name.startswith(under)), None)


def origin_key(url: str) -> str:
    """scheme://host:port of ``url``, to ask the middleware once per origin."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{parts.port or ''}"


def _robots(url: str) -> bool:
    return urlsplit(url).path == "/robots.txt"


def _path(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


@dataclass(frozen=True)
class Made:
    """A request the spider made: when, and from which page (None: a start request)."""

    at: float
    page: str | None


@dataclass(frozen=True)
class Answer:
    """A response as the downloader got it (``response_downloaded``), before any middleware
    turned it into something else: robots.txt answers and 503s that paused a site too."""

    at: float
    url: str
    status: int
    retry_after: str | None

    @property
    def robots(self) -> bool:
        return _robots(self.url)

    @property
    def slow_down(self) -> bool:
        """An answer that makes scrapy-rep wait (429/5xx on robots.txt, 429/503 on a page)."""
        return self.status in _SLOW_DOWN or (self.robots and self.status >= 500)

    @property
    def settles(self) -> bool:
        """A robots.txt answer the crawl can go on with: the file (2xx) or none (4xx)."""
        return not self.slow_down and not 300 <= self.status < 400

    def describe(self) -> str:
        retry = f" (Retry-After: {self.retry_after})" if self.retry_after else ""
        return f"HTTP {self.status}{retry}"


@dataclass(frozen=True)
class Closing:
    """What the report needs from the crawl once it closed."""

    reason: str
    tokens: list[str]  # the tokens robots.txt was obeyed as
    purpose: list[str]  # REP_USAGE_PURPOSES
    stats: Mapping[str, Any]
    commands: list[str] = field(default_factory=list)  # to try offline; none for a real site


@dataclass
class DemoReport:
    requested: dict[str, Made] = field(default_factory=dict)  # in request order
    fetched: list[str] = field(default_factory=list)  # final URLs of the pages parsed
    answered: set[str] = field(default_factory=set)  # requested URLs that got a page
    dropped: dict[str, RequestDropped] = field(default_factory=dict)  # what the errback got
    failed: dict[str, str] = field(default_factory=dict)  # other errbacks
    items: list[dict[str, Any]] = field(default_factory=list)  # as the pipelines got them
    rules: dict[str, PageRules] = field(default_factory=dict)  # pages saying noindex/nofollow
    sent: list[tuple[float, str]] = field(default_factory=list)  # reached the downloader
    answers: list[Answer] = field(default_factory=list)
    # origin key -> the middleware's OriginReport, an exception, or None while pending
    origins: dict[str, Any] = field(default_factory=dict)
    links: dict[str, list[str]] = field(default_factory=dict)  # page -> links it has (in scope)
    final: dict[str, str] = field(default_factory=dict)  # requested URL -> page (redirects)

    def needs_origin(self, url: str) -> bool:
        return origin_key(url) not in self.origins

    def stale_origin(self, url: str) -> bool:
        """Was the origin's robots.txt failing when last asked? A page of it came since, so it
        serves now: ask again (without a fetch) for the rules the crawl obeyed."""
        return getattr(self.origins.get(origin_key(url)), "outcome", None) == "unreachable"

    def watch_origin(self, url: str, answer: Deferred[Any]) -> None:
        key = origin_key(url)
        self.origins[key] = None

        def store(result: Any) -> None:
            self.origins[key] = getattr(result, "value", result)  # a Failure's exception

        answer.addBoth(store)

    def render(self, closing: Closing) -> str:
        sections = [
            self._summary(closing),
            self._pages(closing.tokens),
            self._drops(closing),
            self._robots_recovered(closing.stats),
            self._pauses(closing.stats),
            self._page_rules(closing.stats),
            self._usage(closing),
            self._not_fetched(closing.reason),
            self._origin_lines(),
            _stats(closing.stats),
            _try_offline(closing.commands),
        ]
        blocks = ["\n".join(section) for section in sections if section]
        return "\n=== scrapy-rep demo report ===\n" + "\n\n".join(blocks)

    # -- sections ---------------------------------------------------------------------------

    def _summary(self, closing: Closing) -> list[str]:
        return [
            f"Crawl closed: {closing.reason}. robots.txt obeyed as: "
            f"{', '.join(closing.tokens) or '*'}",
            f"Declared purpose (REP_USAGE_PURPOSES): {', '.join(closing.purpose) or 'none'}",
        ]

    def _pages(self, tokens: list[str]) -> list[str]:
        out = [f"Requests made by the spider: {len(self.requested)}"]
        out.append(f"Pages fetched: {len(self.fetched)}")
        for url in self.fetched:
            entry = self._explained(url, tokens)
            rule = entry["rule"] if entry is not None else None
            # Show the allow rules at work (an index.html allow, say).
            out.append(f"  {url}  (allowed by {format_rule(rule)})" if rule else f"  {url}")
        out.append(f"Items scraped: {len(self.items)} (the spider yields one per page)")
        return out

    def _drops(self, closing: Closing) -> list[str]:
        total = len(self.dropped)
        out = [
            f"Dropped by scrapy-rep: {total}"
            + (" (each errback got scrapy_rep.RequestDropped; by its .reason)" if total else "")
        ]
        for reason in sorted({drop.reason for drop in self.dropped.values()}):
            urls = [url for url, drop in self.dropped.items() if drop.reason == reason]
            meaning, names = _REASONS.get(reason, (reason, ()))
            counted = ", ".join(f"{n}: {closing.stats[n]}" for n in names if closing.stats.get(n))
            out.append(f"  {reason}: {len(urls)}, {meaning}" + (f" ({counted})" if counted else ""))
            for url in urls:
                out += [f"    {url}", f"        {self._why_dropped(url, closing)}"]
        return out

    def _robots_recovered(self, stats: Mapping[str, Any]) -> list[str]:
        found = [lines for key in self.origins if (lines := self._recovered(key))]
        if not found:
            return []
        failing = {a.status for a in self.answers if a.robots and a.slow_down}
        names = [*_RECOVERY_STATS, *(f"robotstxt/response_status_count/{s}" for s in failing)]
        return [
            f"robots.txt failed, then recovered (SPEC B2): {len(found)} origin(s)",
            *(line for lines in found for line in lines),
            f"  crawl-wide, every origin: {_counted(stats, names)} (robotstxt/held counts the "
            "requests held above and those that waited for another origin's first robots.txt "
            "or a pause; each stat in words under scrapy-rep stats)",
        ]

    def _recovered(self, key: str) -> list[str]:
        answers = [a for a in self.answers if a.robots and origin_key(a.url) == key]
        failed = next((a for a in answers if a.slow_down), None)
        good = next((a for a in answers if failed and a.at > failed.at and a.settles), None)
        if failed is None or good is None:
            return []
        held = [url for url, made in self.requested.items() if _in(url, key, made.at, good.at)]
        early = [url for at, url in self.sent if _in(url, key, at, good.at) and not _robots(url)]
        released = [url for url in held if url in self.answered]
        refused = [url for url in held if url in self.dropped]
        tries = [answers[0].describe()]
        tries += [f"{a.describe()} {a.at - b.at:.1f}s later" for b, a in pairwise(answers)]
        return [
            f"  {key.rstrip(':')}",
            f"      robots.txt requests: {len(answers)}: {'; '.join(tries)}",
            f"      held: {len(held)}, the requests made while it was unknown or failing (Scrapy's "
            f"built-in lets them through unchecked); page requests sent meanwhile: {len(early)}",
            f"      released: {len(released)}, crawled once robots.txt came; dropped by its rules: "
            f"{len(refused)}",
        ]

    def _pauses(self, stats: Mapping[str, Any]) -> list[str]:
        if not stats.get("robotstxt/pause/paused"):
            return []
        out = ['Paused origins (a page said "slow down", SPEC H):']
        for answer in self.answers:
            # The spider's own pages: robots.txt and tdmrep.json have their own policy (B2).
            if answer.url in self.requested and answer.status in _SLOW_DOWN:
                out += self._pause(answer)
        retries = f"retries spent (retry/count): {stats.get('retry/count', 0)}"
        return [*out, f"  {_counted(stats, _PAUSE_STATS)}; {retries}"]

    def _pause(self, slowed: Answer) -> list[str]:
        key, path = origin_key(slowed.url), _path(slowed.url)
        resumed = next(
            (at for at, url in self.sent if origin_key(url) == key and at > slowed.at), None
        )
        again = next((a for a in self.answers if a.url == slowed.url and a.at > slowed.at), None)
        paused = f"paused for {resumed - slowed.at:.1f}s" if resumed is not None else "paused"
        fate = (
            f"{path} fetched again after the pause: HTTP {again.status}, nothing lost"
            if again is not None
            else f"{path} not fetched again before the crawl closed"
        )
        return [
            f"  {key.rstrip(':')}",
            f"      {paused} after {path} answered {slowed.describe()}",
            f"      {fate}",
        ]

    def _page_rules(self, stats: Mapping[str, Any]) -> list[str]:
        if not self.rules:
            return []
        title = "Page-level rules (robots meta tag, X-Robots-Tag; SPEC D)"
        out = [f"{title}: {len(self.rules)} page(s)"]
        for page, rules in self.rules.items():
            out += [f"  {page}", f"      says {_directives(rules)}"]
            if rules.nofollow:
                links = self._not_followed(page)
                out.append(
                    f"      nofollow: {len(links)} link(s) the spider yielded from it not "
                    "followed (dropped, no errback, as Scrapy's spider middlewares filter)"
                )
                out += [f"        {url}" for url in links]
            if rules.noindex:
                marked = [i for i in self.items if i.get("url") == page and i.get("rep_noindex")]
                out.append(f"      noindex: its item(s) marked rep_noindex: {_items(marked)}")
        return [*out, f"  {_counted(stats, _PAGE_STATS)}"]

    def _usage(self, closing: Closing) -> list[str]:
        if closing.purpose:
            count = sum(1 for drop in self.dropped.values() if drop.reason == "usage")
            out = [
                f"Usage preferences: declared purpose {', '.join(closing.purpose)}: "
                f'{count} request(s) refused before scheduling (reason "usage" above); a '
                "refused page is not fetched, so pages only it links to are never requested"
            ]
            counted = _counted(closing.stats, _USAGE_STATS)
            return [*out, f"  {counted}"] if counted else out
        out = ["Usage preferences: no purpose declared, so nothing was refused for its use."]
        for label in LABELS:
            forecast = self.forecast(label, closing.tokens)
            if forecast.refused:
                out += forecast.lines()
        if len(out) == 1:
            out.append(f"  robots.txt refuses none of the pages fetched for {', '.join(LABELS)}")
        return out

    def forecast(self, label: str, tokens: Sequence[str]) -> Forecast:
        """What this crawl would have done declaring ``label`` (``-a purpose=label``): the same
        links from the same start, robots.txt refusing some pages for ``label`` before they
        are scheduled. A refused page is not fetched, so the links only it has are never
        requested: fewer pages are reached than are refused here."""
        made = [url for url, how in self.requested.items() if how.page is None]
        seen, queue = set(made), list(made)
        refused: list[tuple[str, str]] = []
        fetched: list[str] = []
        while queue:
            url = queue.pop(0)
            if url not in self.answered:  # dropped by a rule, or not fetched here either
                continue
            why = self._refusal(url, tokens, label)
            if why is not None:
                refused.append((url, why))
                continue
            page = self.final.get(url, url)
            fetched.append(page)
            for link in self.links.get(page, ()):
                if link not in seen:
                    seen.add(link)
                    made.append(link)
                    # A nofollow page's links are made, and dropped (SPEC D6), as here.
                    if not self._nofollow(page):
                        queue.append(link)
        here = [self.final.get(url, url) for url in self.requested if url in self.answered]
        refused_pages = {self.final.get(url, url) for url, _ in refused}
        unreached = [page for page in here if page not in fetched and page not in refused_pages]
        disallowed = [
            url for url in made if getattr(self.dropped.get(url), "reason", "") == "disallowed"
        ]
        return Forecast(label, refused, unreached, len(made), len(fetched), len(disallowed))

    def _not_fetched(self, reason: str) -> list[str]:
        other = []
        for url, made in self.requested.items():
            if url in self.answered or url in self.dropped or self._nofollow(made.page):
                continue
            why = self.failed.get(url, f"not fetched (crawl closed: {reason})")
            other += [f"  {url}", f"      {why}"]
        if not other:
            return []
        return [f"Not fetched for other reasons: {len(other) // 2}", *other]

    def _origin_lines(self) -> list[str]:
        lines = ["robots.txt per origin:"]
        for key, answer in self.origins.items():
            failing = getattr(answer, "outcome", None) == "unreachable"
            lines.append(f"  {self._unreachable(key, answer) if failing else _origin(answer)}")
        return lines

    def _unreachable(self, key: str, answer: Any) -> str:
        """An origin whose robots.txt still failed when last asked: every attempt the crawl
        made (the middleware's answer was about the first), and how the waiting ended."""
        attempts = [at for at, url in self.sent if _robots(url) and origin_key(url) == key]
        error = answer.error or f"HTTP {answer.status}"
        line = f"{answer.origin}/robots.txt: unreachable ({error})"
        if attempts:
            when = ", ".join(f"{at - attempts[0]:.1f}s" for at in attempts)
            line += f", {len(attempts)} attempt(s), at {when}"
        ended = [
            drop.reason
            for drop in self.dropped.values()
            if drop.origin is not None and origin_key(drop.origin) == key
        ]
        if "gave_up" in ended:
            count = ended.count("gave_up")
            return (
                f"{line}: given up after {len(attempts)} failures in a row (REP_GIVE_UP_AFTER), "
                f'its {count} request(s) dropped (reason "gave_up" above)'
            )
        if "hold_timeout" in ended:
            count = ended.count("hold_timeout")
            return (
                f"{line}: its {count} request(s) waited longer than REP_HOLD_TIMEOUT, dropped "
                '(reason "hold_timeout" above)'
            )
        return f"{line}: still failing when the crawl closed"

    # -- helpers ----------------------------------------------------------------------------

    def _explained(
        self, url: str, tokens: Sequence[str], purpose: Sequence[str] = ()
    ) -> dict[str, Any] | None:
        """The robots.txt decision for ``url``, re-derived from its origin's report."""
        answer = self.origins.get(origin_key(url))
        if answer is None or isinstance(answer, BaseException):
            return None
        return explain(answer, url, tokens, purpose)

    def _why_dropped(self, url: str, closing: Closing) -> str:
        """The rule or line that dropped ``url``; else the errback's message (a tdmrep.json
        refusal, a robots.txt given up on: what the origin's robots.txt alone cannot say)."""
        drop = self.dropped[url]
        entry = self._explained(url, closing.tokens, closing.purpose)
        if entry is None:
            return str(drop)
        if drop.reason == "disallowed" and not entry["allowed"]:
            return _why(entry)
        refusal = entry.get("purpose", {}).get("reason")
        return str(refusal) if drop.reason == "usage" and refusal else str(drop)

    def _refusal(self, url: str, tokens: Sequence[str], label: str) -> str | None:
        """Why robots.txt refuses ``url`` for a crawl declaring ``label`` (None: it does not)."""
        entry = self._explained(url, tokens, [label])
        if entry is None or entry["purpose"]["used"]:
            return None
        return str(entry["purpose"]["reason"])

    def _nofollow(self, page: str | None) -> bool:
        rules = self.rules.get(page) if page is not None else None
        return rules is not None and rules.nofollow

    def _not_followed(self, page: str) -> list[str]:
        """The page's links the spider yielded that never came back: scrapy-rep drops the
        requests a nofollow page yields, with no errback (SPEC D6)."""
        return [
            url
            for url, made in self.requested.items()
            if made.page == page
            and not (url in self.answered or url in self.dropped or url in self.failed)
        ]


@dataclass(frozen=True)
class Forecast:
    """What a crawl declaring ``label`` would do, from this crawl (``DemoReport.forecast``)."""

    label: str
    refused: list[tuple[str, str]]  # pages fetched here that robots.txt refuses, and why
    unreached: list[str]  # pages fetched here that it would not reach (only refused ones link)
    made: int  # requests the spider would make
    fetched: int  # pages it would fetch
    disallowed: int  # requests robots.txt rules would drop

    def lines(self) -> list[str]:
        out = [
            f"  With -a purpose={self.label}, robots.txt refuses {len(self.refused)} of the pages "
            "fetched (each dropped before scheduling):"
        ]
        out += [line for url, why in self.refused for line in (f"    {url}", f"        {why}")]
        if self.unreached:
            out.append(
                f"    and {len(self.unreached)} other page(s) fetched here would not be reached: "
                "only refused pages link to them, so nothing requests them"
            )
            out += [f"      {url}" for url in self.unreached]
        out.append(
            f"    That run: {self.made} requests made, {self.fetched} pages fetched, dropped: "
            f"{len(self.refused)} for {self.label}, {self.disallowed} by robots.txt rules "
            "(robots.txt alone: tdmrep.json and the pages' own statements, read only with a "
            "purpose, may refuse more)"
        )
        return out


def _in(url: str, key: str, at: float, before: float) -> bool:
    """``url`` is of origin ``key`` and ``at`` is before ``before``."""
    return origin_key(url) == key and at < before


def _matching(stats: Mapping[str, Any], names: Iterable[str]) -> list[tuple[str, Any]]:
    """The stats named, or under a name ending with "/", sorted."""
    return sorted(
        (name, value)
        for name, value in stats.items()
        if any(name == n or (n.endswith("/") and name.startswith(n)) for n in names)
    )


def _counted(stats: Mapping[str, Any], names: Iterable[str]) -> str:
    return ", ".join(f"{name}: {value}" for name, value in _matching(stats, names))


def _directives(rules: PageRules) -> str:
    return "; ".join(
        f"{', '.join(found)} (for {'every crawler' if agent == '*' else agent})"
        for agent, found in rules.directives
    )


def _items(items: list[dict[str, Any]]) -> str:
    return "; ".join(map(repr, items)) or "none"


def _origin(answer: Any) -> str:
    if answer is None:
        return "(robots.txt still pending at close)"
    if isinstance(answer, BaseException):
        return f"(robots.txt not resolved: {answer!r})"
    robots = getattr(answer, "robots", None)
    rules = ""
    if robots is not None:
        rules = f", {robots.rule_count} rule{'' if robots.rule_count == 1 else 's'}"
    return describe_origin(answer) + rules


def _stats(stats: Mapping[str, Any]) -> list[str]:
    counters = _matching(stats, ("robotstxt/", "robotspage/", "tdmrep/"))
    lines = ["scrapy-rep stats (what each counts):"]
    for name, value in counters:
        means = _meaning(name)
        lines.append(f"  {name}: {value}" + (f"  ({means})" if means else ""))
    return lines


def _try_offline(commands: list[str]) -> list[str]:
    if not commands:
        return []
    head = "Try it offline: the demo site is gone, its main origin's robots.txt is in a file:"
    return [head, *(f"  {command}" for command in commands)]


def offline_commands(robots_file: Path, token: str, disallowed: str, refused: str) -> list[str]:
    """``scrapy robots`` on the demo's robots.txt file: why ``disallowed`` is, and why a crawl
    declaring train-ai would not use ``refused``."""
    base = f"scrapy robots --file {os.path.relpath(robots_file)} --user-agent {token}"
    return [f"{base} {disallowed}", f"{base} --purpose train-ai {refused}"]


def _why(entry: dict[str, Any]) -> str:
    if entry["decided_by"] == "rules":
        return f"{format_rule(entry['rule'])} ({entry['reason']})"
    return str(entry["reason"])

"""The demo crawl's closing report: what was fetched, what robots.txt dropped and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from twisted.internet.defer import Deferred

from scrapy_rep import describe_origin, explain, format_rule


def origin_key(url: str) -> str:
    """scheme://host:port of ``url``, to ask the middleware once per origin."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{parts.port or ''}"


@dataclass
class DemoReport:
    requested: dict[str, None] = field(default_factory=dict)  # in request order
    fetched: list[str] = field(default_factory=list)  # final URLs of the pages parsed
    answered: set[str] = field(default_factory=set)  # requested URLs that got a page
    reached_downloader: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    # origin key -> the middleware's OriginReport, an exception, or None while pending
    origins: dict[str, Any] = field(default_factory=dict)

    def needs_origin(self, url: str) -> bool:
        return origin_key(url) not in self.origins

    def watch_origin(self, url: str, answer: Deferred[Any]) -> None:
        key = origin_key(url)
        self.origins[key] = None

        def store(result: Any) -> None:
            self.origins[key] = getattr(result, "value", result)  # a Failure's exception

        answer.addBoth(store)

    def render(self, reason: str, tokens: list[str], stats: dict[str, Any]) -> str:
        out = [
            "",
            "=== scrapy-rep demo report ===",
            f"Crawl closed: {reason}. robots.txt obeyed as: {', '.join(tokens) or '*'}",
            "",
            f"Pages fetched: {len(self.fetched)}",
        ]
        for url in self.fetched:
            entry = self._explained(url, tokens)
            rule = entry["rule"] if entry is not None else None
            # Show the allow rules at work (an index.html allow, say).
            out.append(f"  {url}  (allowed by {format_rule(rule)})" if rule else f"  {url}")
        dropped, at_downloader, other = [], [], []
        for url in self.requested:
            if url in self.answered:
                continue
            entry = self._explained(url, tokens)
            failure = self.failed.get(url, "IgnoreRequest")
            # The errback gets scrapy_rep.RequestDropped, an IgnoreRequest, for each drop.
            ignored = "IgnoreRequest" in failure or "RequestDropped" in failure
            if entry is not None and not entry["allowed"] and ignored:
                target = dropped if url not in self.reached_downloader else at_downloader
                target.append(f"  {url}\n      {_why(entry)}")
            elif url in self.failed:
                other.append(f"  {url}\n      {self.failed[url]}")
            else:
                other.append(f"  {url}\n      not fetched (crawl closed: {reason})")
        out.insert(4, f"Requests made by the spider: {len(self.requested)}")
        out += ["", f"Dropped before scheduling (robots.txt): {len(dropped)}", *dropped]
        if at_downloader:
            out += ["", f"Dropped at the downloader: {len(at_downloader)}", *at_downloader]
        if other:
            out += ["", f"Not fetched for other reasons: {len(other)}", *other]
        out += ["", "robots.txt per origin:"]
        for answer in self.origins.values():
            out.append(f"  {self._origin_line(answer)}")
        counters = {k: v for k, v in sorted(stats.items()) if k.startswith("robotstxt/")}
        out += ["", "robots.txt stats:"]
        out += [f"  {name}: {value}" for name, value in counters.items()]
        return "\n".join(out)

    def _explained(self, url: str, tokens: list[str]) -> dict[str, Any] | None:
        """The robots.txt decision for ``url``, re-derived from its origin's report."""
        answer = self.origins.get(origin_key(url))
        if answer is None or isinstance(answer, BaseException):
            return None
        return explain(answer, url, tokens)

    def _origin_line(self, answer: Any) -> str:
        if answer is None:
            return "(robots.txt still pending at close)"
        if isinstance(answer, BaseException):
            return f"(robots.txt not resolved: {answer!r})"
        robots = getattr(answer, "robots", None)
        rules = ""
        if robots is not None:
            rules = f", {robots.rule_count} rule{'' if robots.rule_count == 1 else 's'}"
        return describe_origin(answer) + rules


def _why(entry: dict[str, Any]) -> str:
    if entry["decided_by"] == "rules":
        return f"{format_rule(entry['rule'])} ({entry['reason']})"
    return str(entry["reason"])

"""Usage preferences obeyed by real crawls (SPEC F, G): robots.txt Content-Usage and
Content-Signal at the gate, response headers at the page level, tdmrep.json per origin."""

from __future__ import annotations

import json

from _crawl import run_crawl
from _servers import Reply, ScriptedServer

ADDON = {"ADDONS": {"scrapy_rep.Addon": 0}, "ROBOTSTXT_OBEY": True}
TRAIN = {**ADDON, "REP_USAGE_PURPOSES": ["train-ai"]}
ROBOTS = """\
User-agent: *
Disallow: /page/private/
Content-Signal: search=yes, ai-input=no
Content-Usage: train-ai=y
Content-Usage: /page/no-train/ train-ai=n
"""


def test_robots_txt_preferences_drop_refused_requests_before_they_are_scheduled(
    http_server: ScriptedServer,
) -> None:
    site = http_server
    site.robots(ROBOTS)
    urls = [site.url(p) for p in ("/page/a", "/page/no-train/b", "/page/private/c", "/page/d")]
    result = run_crawl(urls, TRAIN, items=True, item_meta=["rep_usage"])
    assert sorted(result.responses) == [site.url("/page/a"), site.url("/page/d")]
    assert site.count("/page/no-train/b") == 0  # never fetched: its content may not be used
    assert site.count("/page/private/c") == 0
    assert result.stat("robotstxt/usage_forbidden") == 1
    assert result.stat("robotstxt/usage_forbidden/train-ai") == 1
    assert result.stat("robotstxt/forbidden") == 1  # the Disallow, counted apart
    assert "/page/no-train/b" not in " ".join(result.reached_downloader)
    # train-ai needs the TDM reservation too: tdmrep.json was asked once (404: none).
    assert site.count("/.well-known/tdmrep.json") == 1
    assert result.stat("tdmrep/response_status_count/404") == 1
    usage = {item["url"]: item["rep_usage"] for item in result.items}
    assert usage[site.url("/page/a")] == {"train-ai": True, "ai-use": False, "search": True}


def test_a_file_wide_signal_refuses_what_the_group_allows(http_server: ScriptedServer) -> None:
    # SPEC E1: the line above the first group speaks for the whole file; the '*' group's own
    # ai-train=yes does not undo it (E5), so the gate drops the request before scheduling.
    site = http_server
    site.robots(
        "Content-Signal: ai-train=no\n\nUser-agent: *\nContent-Signal: ai-train=yes\nAllow: /\n"
    )
    result = run_crawl([site.url("/page/a")], TRAIN)
    assert result.responses == []
    assert site.count("/page/a") == 0  # the server never saw it
    assert site.url("/page/a") not in result.reached_downloader
    assert result.stat("robotstxt/usage_forbidden") == 1
    assert result.stat("robotstxt/usage_forbidden/train-ai") == 1
    assert result.stat("robotstxt/forbidden") == 0  # not a Disallow
    assert "robots.txt line 1 (file-wide): Content-Signal: ai-train=no" in result.log
    # The same file for a search purpose: nothing refuses it, so it is fetched.
    searched = run_crawl([site.url("/page/a")], {**ADDON, "REP_USAGE_PURPOSES": ["search"]})
    assert searched.responses == [site.url("/page/a")]
    assert site.count("/page/a") == 1


def test_without_a_purpose_nothing_is_dropped_and_responses_carry_their_preferences(
    http_server: ScriptedServer,
) -> None:
    site = http_server
    site.robots(ROBOTS)
    site.route("/page/header", Reply.text("hi", headers={"Content-Usage": "search=n"}))
    urls = [site.url("/page/no-train/b"), site.url("/page/header")]
    result = run_crawl(urls, ADDON, items=True, item_meta=["rep_usage"])
    assert sorted(result.responses) == sorted(urls)
    assert result.stat("robotstxt/usage_forbidden") == 0
    assert site.count("/.well-known/tdmrep.json") == 0  # no purpose: never fetched
    usage = {item["url"]: item["rep_usage"] for item in result.items}
    assert usage[site.url("/page/no-train/b")] == {
        "train-ai": False,
        "ai-use": False,
        "search": True,
    }
    # The header (search=n) and robots.txt's Content-Signal (search=yes): most restrictive.
    assert usage[site.url("/page/header")]["search"] is False


def test_a_header_only_refusal_drops_or_marks_the_page_items(http_server: ScriptedServer) -> None:
    site = http_server
    site.robots("User-agent: *\nDisallow:\n")
    site.route("/page/refused", Reply.text("x", headers={"Content-Usage": "train-ai=n"}))
    site.route("/page/signal", Reply.text("x", headers={"Content-Signal": "ai-train=no"}))
    site.route("/page/noai", Reply.text("x", headers={"X-Robots-Tag": "noai"}))
    site.route("/page/tdm", Reply.text("x", headers={"tdm-reservation": "1"}))
    urls = [site.url(p) for p in ("/page/ok", "/page/refused", "/page/signal", "/page/noai")]
    urls.append(site.url("/page/tdm"))
    dropped = run_crawl(urls, TRAIN, items=True)
    # Fetched (nothing refused it before), but its content is not used: no item.
    assert sorted(dropped.responses) == sorted(urls)
    assert [item["url"] for item in dropped.items] == [site.url("/page/ok")]
    assert dropped.stat("robotspage/items/usage_dropped") == 4
    assert dropped.stat("robotspage/pages/usage_refused") == 4

    marked = run_crawl(urls, {**TRAIN, "REP_USAGE_ITEMS": "mark"}, items=True)
    reasons = {item["url"]: item.get("rep_usage_refused") for item in marked.items}
    assert reasons[site.url("/page/ok")] is None
    assert (
        reasons[site.url("/page/refused")]
        == "train-ai disallowed by header Content-Usage: train-ai=n"
    )
    assert reasons[site.url("/page/tdm")] == "train-ai disallowed by header tdm-reservation: 1"
    assert marked.stat("robotspage/items/usage_marked") == 4


def test_tdmrep_json_is_fetched_once_and_its_first_matching_rule_decides(
    http_server: ScriptedServer,
) -> None:
    site = http_server
    site.robots("User-agent: *\nDisallow:\n")
    rules = [
        {"location": "/page/open/reserved-but-first-rule-wins", "tdm-reservation": 0},
        {"location": "/page/open/*", "tdm-reservation": 1},
        {"location": "/page/open", "tdm-reservation": 0},
        {"location": "/page/*", "tdm-reservation": 0},
    ]
    site.route("/.well-known/tdmrep.json", Reply.text(json.dumps(rules)))
    urls = [
        site.url(p)
        for p in ("/page/open/a", "/page/open/reserved-but-first-rule-wins", "/page/else/b")
    ]
    urls.append(site.url("/page/open/c"))
    result = run_crawl(urls, TRAIN, items=True)
    assert site.count("/.well-known/tdmrep.json") == 1
    assert sorted(result.responses) == [
        site.url("/page/else/b"),
        site.url("/page/open/reserved-but-first-rule-wins"),
    ]
    assert site.count("/page/open/a") == 0 and site.count("/page/open/c") == 0
    assert result.stat("robotstxt/usage_forbidden/train-ai") == 2
    assert result.stat("tdmrep/request_count") == 1
    # A search-only purpose: the file is never asked for.
    site2 = run_crawl(urls, {**ADDON, "REP_USAGE_PURPOSES": ["search"]})
    assert len(site2.responses) == 4
    assert site.count("/.well-known/tdmrep.json") == 1


def test_the_page_level_keeps_what_the_gate_decided_after_robots_txt_left_the_lru(
    http_server: ScriptedServer,
) -> None:
    # Three origins opt in; with one parsed robots.txt kept (REP_PARSED_CACHE_SIZE = 1) and
    # their requests interleaved, each origin's is evicted while its pages download. The page
    # level must still combine robots.txt's statement for the URL (before: it read it from the
    # LRU, missed it, and REP_USAGE_STRICT dropped the items as "not opted in").
    site = http_server
    site.robots("User-agent: *\nAllow: /\nContent-Usage: train-ai=y\n")
    names = ("a.test", "b.test", "c.test")
    urls = [site.url(f"/page/{n}", host=host) for n in range(10) for host in names]
    settings = {**TRAIN, "REP_USAGE_STRICT": True, "REP_PARSED_CACHE_SIZE": 1}
    hosts = dict.fromkeys(names, "127.0.0.1")
    result = run_crawl(urls, settings, items=True, item_meta=["rep_usage"], hosts=hosts)
    assert sorted(result.responses) == sorted(urls)
    assert result.stat("robotspage/items/usage_dropped") == 0
    assert sorted(item["url"] for item in result.items) == sorted(urls)
    # What the gate decided for each URL: robots.txt opts in, nothing else states a thing.
    opted_in = {"train-ai": True, "ai-use": None, "search": None}
    assert all(item["rep_usage"] == opted_in for item in result.items), result.items


def test_a_strict_purpose_fetches_what_tdmrep_json_does_not_reserve(
    http_server: ScriptedServer, http_server2: ScriptedServer
) -> None:
    # SPEC F4, G2: "tdm-reservation": 0 allows train-ai, so with REP_USAGE_STRICT the pages it
    # covers are fetched. robots.txt saying nothing of train-ai is no refusal before the file is
    # known: the gate waits for it, then judges (a regression dropped every page unfetched and
    # never asked for tdmrep.json). The same on an origin without robots.txt (404).
    rules = [
        {"location": "/page/open/*", "tdm-reservation": 0},
        {"location": "/page/closed/*", "tdm-reservation": 1},
    ]
    paths = ("/page/open/a", "/page/open/b", "/page/closed/c", "/page/else/d")
    http_server.robots("User-agent: *\nDisallow: /page/private/\n")
    urls = []
    for site in (http_server, http_server2):
        site.route("/.well-known/tdmrep.json", Reply.text(json.dumps(rules)))
        urls += [site.url(path) for path in paths]
    settings = {**TRAIN, "REP_USAGE_STRICT": True, "LOG_LEVEL": "DEBUG"}
    result = run_crawl(urls, settings, items=True, item_meta=["rep_usage"])
    opened = [site.url(p) for site in (http_server, http_server2) for p in paths[:2]]
    assert sorted(result.responses) == sorted(opened)
    for site in (http_server, http_server2):
        assert site.count("/.well-known/tdmrep.json") == 1
        assert site.count("/page/closed/c") == 0 and site.count("/page/else/d") == 0
    # Reserved (rule 2), and not stated (strict): refused once the file is known.
    assert result.stat("robotstxt/usage_forbidden/train-ai") == 4
    for site in (http_server, http_server2):
        closed, unstated = site.url("/page/closed/c"), site.url("/page/else/d")
        assert f"{closed}> (train-ai disallowed by tdmrep.json rule 2" in result.log
        assert f"{unstated}> (train-ai not stated (REP_USAGE_STRICT = True))" in result.log
    # The page level agrees: the file's 0 is their train-ai, and nothing drops their items.
    assert result.stat("robotspage/items/usage_dropped") == 0
    opted_in = {"train-ai": True, "ai-use": None, "search": None}
    assert {item["url"]: item["rep_usage"] for item in result.items} == dict.fromkeys(
        opened, opted_in
    )

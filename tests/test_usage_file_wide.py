"""Usage lines before the first group are file-wide statements (SPEC E1).

A ``Content-Usage`` or ``Content-Signal`` line above the first ``User-agent`` line (every usage
line of a file with no group) speaks for every URL the file lets be fetched, combined most
restrictively with the selected group's statements (SPEC E5), and is named "file-wide".
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_robustness import _best_usage_seconds, check_answer, fingerprint, robots_text

from scrapy_rep import RobotsTxt, UsagePrefs, UsageSource
from scrapy_rep.core.purpose import Purpose, describe_source
from scrapy_rep.core.usage import NO_PREFERENCE

HOST = "https://example.com"
UNKNOWN = {"train-ai": None, "ai-use": None, "search": None}
TRAIN = Purpose(("train-ai",))


def usage(body: str, path: str, tokens: str | list[str] | None = "somebot") -> UsagePrefs:
    return RobotsTxt.parse(body).usage(HOST + path, tokens)


def file_wide(field: str, value: str, line: int) -> UsageSource:
    return UsageSource(field, value, line, "file-wide")


def test_a_signal_above_the_first_group_refuses_train_ai() -> None:
    body = "Content-Signal: ai-train=no\n\nUser-agent: *\nAllow: /\n"
    prefs = usage(body, "/page")
    assert prefs == {**UNKNOWN, "train-ai": False}
    assert prefs.sources["train-ai"] == (file_wide("Content-Signal", "ai-train=no", 1),)
    assert prefs.signals == {"ai-train": ("no",)}
    refusal = TRAIN.refusal(prefs)
    assert refusal is not None and refusal.label == "train-ai"
    assert str(refusal) == (
        "train-ai disallowed by robots.txt line 1 (file-wide): Content-Signal: ai-train=no"
    )


def test_it_applies_whichever_group_is_selected() -> None:
    # File-wide: a crawler's own group hides the '*' group's lines (SPEC E2), not these; and a
    # crawler with no group (and no '*' group) gets them too.
    body = (
        "Content-Signal: ai-train=no\n"
        "User-agent: *\nContent-Usage: search=y\nAllow: /\n\n"
        "User-agent: mybot\nAllow: /\n"
    )
    assert usage(body, "/x", "MyBot") == {**UNKNOWN, "train-ai": False}
    assert usage(body, "/x", None) == {**UNKNOWN, "train-ai": False, "search": True}
    only_named = "Content-Signal: ai-train=no\nUser-agent: otherbot\nAllow: /\n"
    assert usage(only_named, "/x", "stranger") == {**UNKNOWN, "train-ai": False}


def test_a_groups_yes_does_not_undo_a_file_wide_no() -> None:
    body = (
        "Content-Signal: ai-train=no\n"
        "\n"
        "User-agent: *\n"
        "Content-Signal: ai-train=yes, search=yes\n"
        "Content-Usage: /open/ train-ai=y\n"
        "Allow: /\n"
    )
    for path in ("/x", "/open/x"):
        prefs = usage(body, path)
        assert prefs == {**UNKNOWN, "train-ai": False, "search": True}
        # Only the statement that said no set the value.
        assert prefs.sources["train-ai"] == (file_wide("Content-Signal", "ai-train=no", 1),)
        assert prefs.sources["search"] == (
            UsageSource("Content-Signal", "ai-train=yes, search=yes", 4),
        )
    # Every raw value, the file-wide one first (file order).
    assert usage(body, "/x").signals == {"ai-train": ("no", "yes"), "search": ("yes",)}


def test_a_groups_no_is_not_undone_by_a_file_wide_yes() -> None:
    body = "Content-Usage: train-ai=y, search=y\nUser-agent: *\nContent-Usage: /p/ train-ai=n\n"
    assert usage(body, "/p/x") == {**UNKNOWN, "train-ai": False, "search": True}
    assert usage(body, "/p/x").sources["train-ai"] == (
        UsageSource("Content-Usage", "/p/ train-ai=n", 3),
    )
    assert usage(body, "/x") == {**UNKNOWN, "train-ai": True, "search": True}
    # Only the file-wide line states train-ai on /x.
    assert usage(body, "/x").sources["train-ai"] == (
        file_wide("Content-Usage", "train-ai=y, search=y", 1),
    )
    # Both allow: both are named.
    both = "Content-Usage: train-ai=y\nUser-agent: *\nContent-Usage: train-ai=y\n"
    assert {s.line for s in usage(both, "/x").sources["train-ai"]} == {1, 3}


def test_a_file_with_no_group_is_all_file_wide() -> None:
    body = (
        "Sitemap: https://example.com/sitemap.xml\n"
        "Content-Signal: search=yes, ai-train=no\n"
        "Content-Usage: /drafts/ ai-use=n\n"
    )
    robots = RobotsTxt.parse(body)
    assert robots.groups == [] and robots.allowed(HOST + "/drafts/x", "somebot")
    for tokens in ("somebot", None, ["a", "b"]):
        assert robots.usage(HOST + "/x", tokens) == {**UNKNOWN, "train-ai": False, "search": True}
        assert robots.usage(HOST + "/drafts/x", tokens) == {
            "train-ai": False,
            "ai-use": False,
            "search": True,
        }
    assert robots.usage(HOST + "/drafts/x", None).sources["ai-use"] == (
        file_wide("Content-Usage", "/drafts/ ai-use=n", 3),
    )


def test_a_stray_content_usage_path_selects_as_a_groups_does() -> None:
    body = (
        "Content-Usage: train-ai=y\n"
        "Content-Usage: /drafts/ train-ai=n\n"
        "Content-Usage: /drafts/public/ train-ai=y\n"
        "Content-Usage: /*.pdf$ search=n\n"
        "User-agent: *\n"
        "Allow: /\n"
    )
    # The longest matching file-wide path, and only it (SPEC E2); no path: the catch-all.
    assert usage(body, "/x") == {**UNKNOWN, "train-ai": True}
    assert usage(body, "/drafts/x") == {**UNKNOWN, "train-ai": False}
    assert usage(body, "/drafts/public/x") == {**UNKNOWN, "train-ai": True}
    assert usage(body, "/drafts/public/x").sources["train-ai"][0].line == 3
    assert usage(body, "/a/b.pdf") == {**UNKNOWN, "search": False}  # '*' and '$' as Allow
    # Equally long patterns that both match combine, as in a group.
    ties = "Content-Usage: /ab train-ai=y\nContent-Usage: /a* train-ai=n\nUser-agent: *\n"
    assert usage(ties, "/abc")["train-ai"] is False


def test_file_wide_and_group_paths_are_chosen_apart() -> None:
    # Two statements, each with its own longest match, combined: a longer group path does not
    # hide a shorter file-wide one.
    body = (
        "Content-Usage: /a/ train-ai=n\n"
        "User-agent: *\n"
        "Content-Usage: /a/b/ train-ai=y, search=y\n"
        "Content-Usage: /c/ ai-use=n\n"
    )
    assert usage(body, "/a/b/x") == {**UNKNOWN, "train-ai": False, "search": True}
    assert usage(body, "/c/x") == {**UNKNOWN, "ai-use": False}  # no file-wide path matches
    assert usage(body, "/x") == UNKNOWN


def test_a_disallowed_url_still_has_no_preference() -> None:
    body = (
        "Content-Signal: ai-train=no, search=yes\n"
        "Content-Usage: /private/ train-ai=n\n"
        "User-agent: *\nDisallow: /private/\n\n"
        "User-agent: blockedbot\nDisallow: /\n"
    )
    prefs = usage(body, "/private/x")
    assert prefs is NO_PREFERENCE
    assert prefs.signals == {}
    assert usage(body, "/x", "blockedbot") is NO_PREFERENCE
    assert usage(body, "/x") == {**UNKNOWN, "train-ai": False, "search": True}


def test_only_lines_before_the_first_user_agent_line_are_file_wide() -> None:
    # A line between two groups belongs to the group above it (SPEC A3, E1), not to the file.
    body = "User-agent: a\nDisallow: /p\n\nContent-Signal: ai-train=no\n\nUser-agent: b\nAllow: /\n"
    assert usage(body, "/x", "a") == {**UNKNOWN, "train-ai": False}
    assert usage(body, "/x", "a").sources["train-ai"][0].where is None
    assert usage(body, "/x", "b") == UNKNOWN
    assert usage(body, "/x", "c") == UNKNOWN


def test_file_wide_lines_never_change_crawling() -> None:
    # SPEC E1: usage lines never change what may be fetched, wherever they sit.
    body = "User-agent: *\nDisallow: /p\n\nUser-agent: b\nAllow: /\n"
    stray = "Content-Signal: ai-train=no\nContent-Usage: /p train-ai=y\n" + body
    plain, with_stray = RobotsTxt.parse(body), RobotsTxt.parse(stray)
    assert [g.agents for g in with_stray.groups] == [(), ("b",)]
    answers = [
        (robots.allowed(HOST + path, token), robots.decide(HOST + path, token).reason)
        for robots in (plain, with_stray)
        for path in ("/p", "/x")
        for token in ("a", "b", None)
    ]
    assert answers[:6] == answers[6:]
    assert [allowed for allowed, _ in answers[:6]] == [False, True, False, True, True, True]


@settings(max_examples=200, deadline=None)
@given(
    head=st.lists(
        st.sampled_from(
            [
                "Content-Signal: ai-train=no\n",
                "content-signal:search=yes,ai-input=no\n",
                "Content-Usage: /a* train-ai=n\n",
                "Content-Usage: train-ai=y, search=n\n",
                "Content-Usage: /\xe9 ai-use=n\n",
                "Content-Usage: train-ai=(\n",
                "Content-Signal: /x ai-train=no\n",
            ]
        ),
        max_size=5,
    ),
    body=robots_text.map(lambda text: text.lstrip("\ufeff")),  # a BOM counts only first
    path=st.text(alphabet="/ab*$%é?", max_size=8),
)
def test_stray_lines_never_change_groups_or_crawling_and_never_raise(
    head: list[str], body: str, path: str
) -> None:
    with_stray = RobotsTxt.parse("".join(head) + body)
    plain = RobotsTxt.parse(body)
    # Prepending lines shifts line numbers only: the same groups, rules and answers.
    shift = len(head)
    groups, sitemaps = fingerprint(plain)
    moved = [
        (line + shift, agents, is_global, tuple((a, p, n + shift) for a, p, n in rules), delay)
        for line, agents, is_global, rules, delay in groups
    ]
    assert fingerprint(with_stray) == (moved, sitemaps)
    url = HOST + "/" + path
    for tokens in ("mybot", ()):  # a token, and none
        assert with_stray.allowed(url, tokens) is plain.allowed(url, tokens)
        # Well-formed, and no preference for a URL the file disallows (SPEC E2).
        check_answer(with_stray, None, url, tokens)


@pytest.mark.parametrize(
    ("line", "count", "refused"),
    [
        ("Content-Usage: /p{i} train-ai=n", 5_000, "/p1"),  # many file-wide paths
        ("Content-Usage: /*{i:05} train-ai=n", 5_000, "/00001"),  # many '*' patterns, one length
        ("Content-Signal: use=reference, ai-train=no", 5_000, "/x"),  # many file-wide signals
    ],
)
@pytest.mark.parametrize("group", ["User-agent: *\nContent-Usage: search=y\n", ""])
def test_many_file_wide_lines_stay_linear(line: str, count: int, refused: str, group: str) -> None:
    # As test_robustness's hostile group lines: four times the lines, at most about four times
    # the time (parse, compile, 20 questions); a quadratic step would take sixteen.
    def body(n: int) -> bytes:
        return ("".join(line.format(i=i) + "\n" for i in range(n)) + group).encode()

    paths = [f"/{i:05}" for i in range(0, 5_000, 500)] + [f"/p{i}" for i in range(0, 5_000, 500)]
    small = _best_usage_seconds(body(count), paths)
    big = _best_usage_seconds(body(4 * count), paths)
    assert big < 8 * small + 0.01
    robots = RobotsTxt.parse(body(count))
    assert check_answer(robots, None, HOST + refused, "mybot").allowed
    assert robots.usage(HOST + refused, "mybot")["train-ai"] is False
    assert robots.usage(HOST + refused, "mybot")["search"] is (True if group else None)


_PATTERN = st.text(alphabet="/ab*$%2fé", max_size=6).map(lambda tail: "/" + tail)


@settings(max_examples=300, deadline=None)
@given(
    patterns=st.lists(_PATTERN, min_size=1, max_size=6),
    path=st.text(alphabet="/ab%2Ffé?", max_size=8),
)
def test_file_wide_paths_select_as_a_groups_do(patterns: list[str], path: str) -> None:
    # The same Content-Usage lines above the first group and inside it: the same choice.
    lines = "".join(f"Content-Usage: {p} train-ai=n\n" for p in patterns)
    stray = usage(lines + "User-agent: *\n", "/" + path)
    grouped = usage("User-agent: *\n" + lines, "/" + path)
    assert stray == grouped
    # The same lines chosen (one line up), named file-wide.
    assert stray.sources["train-ai"] == tuple(
        s._replace(line=s.line and s.line - 1, where="file-wide")
        for s in grouped.sources["train-ai"]
    )


def test_describe_source_names_the_scope() -> None:
    assert (
        describe_source(file_wide("Content-Signal", "ai-train=no", 1))
        == "robots.txt line 1 (file-wide): Content-Signal: ai-train=no"
    )
    # Without a scope, as before.
    assert (
        describe_source(UsageSource("Content-Signal", "ai-train=no", 4))
        == "robots.txt line 4: Content-Signal: ai-train=no"
    )
    assert UsageSource("Content-Usage", "train-ai=n").where is None

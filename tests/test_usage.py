"""Usage preferences (SPEC E): Content-Usage and Content-Signal in robots.txt and in headers.

The drafts' own examples first (attach-05 §1.2 and §3.4, vocab-08 §6 and §6.5), quoted as the
drafts write them; then each rule and choice of SPEC E; then the property that a Content-Usage
path selects the longest match an Allow rule with the same pattern would.
"""

from __future__ import annotations

import subprocess
import sys
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scrapy_rep
from scrapy_rep import RobotsTxt, UsagePrefs, UsageSource
from scrapy_rep.core.usage import (
    LABELS,
    NO_PREFERENCE,
    SIGNAL_LABELS,
    VOCAB,
    combine,
    parse_content_signal,
    parse_content_usage,
)

HOST = "https://example.com"
UNKNOWN = {"train-ai": None, "ai-use": None, "search": None}


def usage(body: str | bytes, path: str, tokens: str | list[str] | None = "somebot") -> UsagePrefs:
    return RobotsTxt.parse(body).usage(HOST + path, tokens)


def lines(prefs: UsagePrefs, label: str) -> list[int | None]:
    return [source.line for source in prefs.sources[label]]


# ---------------------------------------------------------------------------------------------
# The drafts' examples

# attach-05 §3.4, Figure 2.
ATTACH_EXAMPLE = """\
User-Agent: *
Allow: /
Disallow: /never/
Content-Usage: train-ai=n
Content-Usage: /ai-ok/ train-ai=y

User-Agent: ExampleBot
Allow: /
Content-Usage: train-ai=y
"""


@pytest.mark.parametrize(
    ("path", "crawl", "train_ai"),
    [
        # attach-05 §3.4, Table 1.
        ("/test", True, False),
        ("/never/test", False, None),  # "N/A": a disallowed path has no preference
        ("/ai-ok/test", True, True),
    ],
)
def test_attach_05_example_table(path: str, crawl: bool, train_ai: bool | None) -> None:
    robots = RobotsTxt.parse(ATTACH_EXAMPLE)
    assert robots.allowed(HOST + path, "otherbot") is crawl
    assert robots.usage(HOST + path, "otherbot") == {**UNKNOWN, "train-ai": train_ai}


def test_attach_05_example_examplebot_uses_its_own_group_only() -> None:
    # "A crawler that identifies as ExampleBot uses the second group": it may fetch
    # everything and train-ai=y applies everywhere, /never/ included.
    robots = RobotsTxt.parse(ATTACH_EXAMPLE)
    for path in ("/test", "/never/test", "/ai-ok/test"):
        prefs = robots.usage(HOST + path, "ExampleBot")
        assert prefs["train-ai"] is True
        assert lines(prefs, "train-ai") == [9]


def test_attach_05_example_says_which_line_set_each_label() -> None:
    robots = RobotsTxt.parse(ATTACH_EXAMPLE)
    prefs = robots.usage(HOST + "/ai-ok/test", "otherbot")
    assert prefs.sources["train-ai"] == (UsageSource("Content-Usage", "/ai-ok/ train-ai=y", 5),)
    assert prefs.sources["search"] == ()
    assert lines(robots.usage(HOST + "/test", "otherbot"), "train-ai") == [4]


def test_attach_05_introduction_examples() -> None:
    # attach-05 §1.2: the robots.txt form and the header form say the same.
    robots = "User-Agent: *\nAllow: /\nContent-Usage: train-ai=n\n"
    assert usage(robots, "/anything")["train-ai"] is False
    assert parse_content_usage(b"train-ai=n")["train-ai"] is False


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        # vocab-08 §6: "allow model training, disallow search".
        ("train-ai=y, search=n", {"train-ai": True, "search": False}),
        # vocab-08 §6.5.1: the last of a duplicate key counts; a Boolean and a String are not
        # Tokens, so everything is unknown.
        ('train-ai=y, train-ai, search=n, search="n"', {}),
        # vocab-08 §6.5.1: uppercase in a key fails the whole parse.
        ("Train-AI=n", {}),
        ("search=n, Train-ai=n", {}),
        # vocab-08 §6.5.2: the parameters of the last value; allow.
        ("train-ai;allow=n, train-ai=y", {"train-ai": True}),
        # vocab-08 §6.5.2: unknown with parameters (a parse failure under RFC 9651 §4.2.3.2
        # because of the final ';' — unknown either way).
        ('train-ai;has;parameters="?";', {}),
        ('train-ai;has;parameters="?"', {}),
    ],
)
def test_vocab_08_examples(statement: str, expected: dict[str, bool]) -> None:
    assert parse_content_usage(statement) == {**UNKNOWN, **expected}
    assert usage(f"User-agent: *\nContent-Usage: {statement}\n", "/x") == {
        **UNKNOWN,
        **expected,
    }


# ---------------------------------------------------------------------------------------------
# SPEC E3: the vocabulary's processing rules


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("train-ai=n, ai-use=y, search=y", {"train-ai": False, "ai-use": True, "search": True}),
        ("train-ai=yes, search=no", {}),  # only the Tokens y and n
        ("train-ai=Y", {}),
        ("train-ai=?0, search=1", {}),
        ('train-ai="n"', {}),
        ("train-ai=(n)", {}),  # an Inner List
        ("train-ai=n;reason=legal;since=@1700000000", {"train-ai": False}),
        # Unknown labels are ignored (vocab-08 §6.4), older revisions' labels too.
        ("train-genai=n, ai=n, bots=n, tdm=n, ai-output=n, search=y", {"search": True}),
        ("search=n, train-ai=y, train-ai=n", {"search": False, "train-ai": False}),
        ("train-ai=n, search=é", {}),  # not ASCII: no parse
        ("train-ai=n search=y", {}),  # no comma: no parse
        ("", {}),
    ],
)
def test_vocabulary_processing(statement: str, expected: dict[str, bool]) -> None:
    assert parse_content_usage(statement) == {**UNKNOWN, **expected}


def test_label_table_is_versioned() -> None:
    assert VOCAB == "draft-ietf-aipref-vocab-08"
    assert LABELS == ("train-ai", "ai-use", "search")
    assert dict(SIGNAL_LABELS) == {"ai-train": "train-ai", "ai-input": "ai-use", "search": "search"}
    assert set(SIGNAL_LABELS.values()) <= set(LABELS)


# ---------------------------------------------------------------------------------------------
# SPEC E1: which lines are read


@pytest.mark.parametrize(
    "line",
    [
        "Content-Usage: train-ai=n",
        "content-usage: train-ai=n",
        "CONTENT-USAGE:train-ai=n",
        " \tContent-Usage \t: \t train-ai=n",  # SP/HTAB around the label and the colon
        "Content-Usage: train-ai=n # a comment",
        "Content-Usage: train-ai=n#",
    ],
)
def test_content_usage_line_forms(line: str) -> None:
    assert usage(f"User-agent: *\n{line}\n", "/x")["train-ai"] is False


@pytest.mark.parametrize(
    "line",
    [
        "Content-Usages: train-ai=n",  # the name exactly, not a prefix
        "Content-Use: train-ai=n",
        "Content Usage: train-ai=n",
        "Content-Signals: ai-train=no",
        "X-Content-Usage: train-ai=n",
    ],
)
def test_other_names_are_not_read(line: str) -> None:
    assert usage(f"User-agent: *\n{line}\n", "/x") == UNKNOWN


def test_lines_before_the_first_group_are_file_wide() -> None:
    # SPEC E1 (it reversed the earlier choice, which ignored them): more in
    # test_usage_file_wide.py.
    body = "Content-Usage: train-ai=n\nContent-Signal: search=no\nUser-agent: *\nAllow: /\n"
    assert usage(body, "/x") == {**UNKNOWN, "train-ai": False, "search": False}
    # The group's own yes does not undo the file-wide no.
    assert usage(body + "Content-Usage: search=y\n", "/x") == {
        **UNKNOWN,
        "train-ai": False,
        "search": False,
    }


def test_usage_lines_never_change_crawling_or_groups() -> None:
    # Google's groups (SPEC A3): a usage line does not close a run of user-agent lines, so
    # a and b share one group here, as they do for Google.
    body = "User-agent: a\nContent-Usage: train-ai=n\nUser-agent: b\nDisallow: /private\n"
    robots = RobotsTxt.parse(body)
    assert [g.agents for g in robots.groups] == [("a", "b")]
    for token in ("a", "b"):
        assert not robots.allowed(HOST + "/private", token)
        assert robots.usage(HOST + "/public", token)["train-ai"] is False
    assert robots.usage(HOST + "/private", "a") == UNKNOWN


def test_a_group_of_usage_lines_only_runs_into_the_next_group() -> None:
    # The same rule, with consequences: no allow/disallow line ends the '*' run, so the
    # GPTBot line joins the '*' group; its Disallow applies to every crawler, as Google's
    # library reads this file, and the usage line applies to GPTBot too.
    body = "User-agent: *\nContent-Usage: train-ai=n\n\nUser-agent: GPTBot\nDisallow: /p\n"
    robots = RobotsTxt.parse(body)
    assert len(robots.groups) == 1
    assert not robots.allowed(HOST + "/p", "otherbot")
    assert robots.usage(HOST + "/a", "otherbot")["train-ai"] is False
    assert robots.usage(HOST + "/a", "GPTBot")["train-ai"] is False


# ---------------------------------------------------------------------------------------------
# SPEC E2: group selection, paths, precedence


def test_group_selection_is_allowed_s() -> None:
    body = (
        "User-agent: *\nContent-Usage: train-ai=n\nAllow: /\n\n"
        "User-agent: mybot\nAllow: /\n\n"  # a group of its own, with no usage line
        "User-agent: mybot-news\nContent-Usage: search=n\n"
    )
    assert usage(body, "/x", "stranger")["train-ai"] is False
    assert usage(body, "/x", None)["train-ai"] is False  # no token: the * group
    # A group of its own hides '*', usage lines included (attach-05 §3.4, SPEC A3).
    assert usage(body, "/x", "MyBot") == UNKNOWN
    # SPEC C2: the first token with a group of its own.
    assert usage(body, "/x", ["mybot-news", "mybot"]) == {**UNKNOWN, "search": False}
    assert usage(body, "/x", ["nobody", "mybot"]) == UNKNOWN


def test_groups_of_one_agent_are_merged() -> None:
    # Cloudflare's managed block is prepended to the site's own file: two '*' groups.
    body = (
        "User-agent: *\nContent-Signal: search=yes,ai-train=no\nAllow: /\n\n"
        "User-agent: *\nDisallow: /admin\nContent-Usage: /blog/ ai-use=n\n"
    )
    prefs = usage(body, "/blog/post")
    assert prefs == {"train-ai": False, "ai-use": False, "search": True}
    assert lines(prefs, "train-ai") == [2] and lines(prefs, "ai-use") == [7]
    assert usage(body, "/admin") == UNKNOWN


def test_disallowed_url_has_no_preference_even_when_a_rule_matches() -> None:
    body = (
        "User-agent: *\nDisallow: /never/\nContent-Usage: /never/ train-ai=y\n"
        "Content-Signal: search=yes\n"
    )
    prefs = usage(body, "/never/page")
    assert prefs == UNKNOWN
    assert prefs.signals == {}
    assert usage(body, "/page") == {**UNKNOWN, "search": True}


def test_longest_path_wins_and_a_path_less_rule_is_the_catch_all() -> None:
    body = (
        "User-agent: *\n"
        "Content-Usage: train-ai=n\n"
        "Content-Usage: /a/ train-ai=y\n"
        "Content-Usage: /a/b/ search=n\n"
    )
    assert usage(body, "/x") == {**UNKNOWN, "train-ai": False}
    assert usage(body, "/a/x") == {**UNKNOWN, "train-ai": True}
    # Only the longest match applies: /a/ and the path-less rule say nothing here.
    assert usage(body, "/a/b/c") == {**UNKNOWN, "search": False}


def test_an_explicit_slash_outranks_a_path_less_rule() -> None:
    # SPEC E2 choice: no path is a zero-byte prefix; "/" is one byte long.
    body = "User-agent: *\nContent-Usage: train-ai=n\nContent-Usage: / train-ai=y\n"
    assert usage(body, "/x")["train-ai"] is True
    assert usage(body, "/")["train-ai"] is True


def test_identical_paths_combine_most_restrictive() -> None:
    body = (
        "User-agent: *\n"
        "Content-Usage: /a train-ai=y, search=y\n"
        "Content-Usage: /a train-ai=n\n"
        "Content-Usage: /a ai-use=y\n"
        "Content-Usage: train-ai=n, search=n\n"  # shorter: does not apply to /a
    )
    prefs = usage(body, "/a")
    assert prefs == {"train-ai": False, "ai-use": True, "search": True}
    assert lines(prefs, "train-ai") == [3]  # the line that set the winning value
    assert lines(prefs, "search") == [2]
    assert lines(prefs, "ai-use") == [4]


def test_path_less_rules_are_identical_paths_too() -> None:
    body = "User-agent: *\nContent-Usage: train-ai=y\nContent-Usage: train-ai=n\n"
    assert usage(body, "/x")["train-ai"] is False


def test_equally_long_different_patterns_that_match_combine() -> None:
    # SPEC E2 choice: Google's "equivalent" is equal length; ties resolve most restrictive.
    body = "User-agent: *\nContent-Usage: /ab train-ai=y\nContent-Usage: /a* train-ai=n\n"
    assert usage(body, "/abc")["train-ai"] is False
    assert lines(usage(body, "/abc"), "train-ai") == [3]
    assert usage(body, "/axe")["train-ai"] is False  # only /a* matches
    body = "User-agent: *\nContent-Usage: /a* train-ai=y\nContent-Usage: /*c train-ai=y\n"
    assert lines(usage(body, "/abc"), "train-ai") == [2, 3]


def test_wildcards_end_anchor_and_percent_encoding_as_allow_disallow() -> None:
    body = (
        "User-agent: *\n"
        "Content-Usage: /*.pdf$ train-ai=n\n"
        "Content-Usage: /caf%c3%a9/ search=n\n"
        "Content-Usage: /naïve/ ai-use=n\n"
        "Content-Usage: /a%2fb ai-use=y\n"
    )
    assert usage(body, "/docs/x.pdf")["train-ai"] is False
    assert usage(body, "/docs/x.pdf?y")["train-ai"] is None
    assert usage(body, "/caf%C3%A9/menu")["search"] is False
    assert usage(body, "/na%C3%AFve/x")["ai-use"] is False  # SPEC A5: bytes >= 0x80 encoded
    assert usage(body, "/naïve/x")["ai-use"] is None  # the URL is matched as given (A4)
    assert usage(body, "/a%2Fb")["ai-use"] is True
    assert usage(body, "/a/b")["ai-use"] is None  # nothing decoded


def test_path_ends_at_the_first_space_or_tab() -> None:
    body = "User-agent: *\nContent-Usage: /a\ttrain-ai=n\nContent-Usage: /b   search=n\n"
    assert usage(body, "/a/x")["train-ai"] is False
    assert usage(body, "/b/x")["search"] is False


def test_a_path_with_no_statement_states_nothing_but_still_outranks_shorter_rules() -> None:
    body = "User-agent: *\nContent-Usage: train-ai=n\nContent-Usage: /open/\n"
    assert usage(body, "/open/x") == UNKNOWN
    assert usage(body, "/x")["train-ai"] is False


def test_comment_cuts_the_path_like_allow_disallow() -> None:
    # attach-05 §3.2: the value ends at the first '#'.
    body = "User-agent: *\nContent-Usage: /a#b train-ai=n\nContent-Usage: train-ai=y\n"
    assert usage(body, "/a#b")["train-ai"] is None  # /a matched, with no statement
    assert usage(body, "/x")["train-ai"] is True


def test_answers_do_not_depend_on_earlier_questions() -> None:
    robots = RobotsTxt.parse(ATTACH_EXAMPLE)
    asked = [("/ai-ok/x", "ExampleBot"), ("/ai-ok/x", "other"), ("/never/x", None)]
    first = [robots.usage(HOST + path, token) for path, token in asked]
    again = [robots.usage(HOST + path, token) for path, token in reversed(asked)]
    fresh = [RobotsTxt.parse(ATTACH_EXAMPLE).usage(HOST + p, t) for p, t in asked]
    assert first == fresh == list(reversed(again))


def test_no_usage_lines_means_no_preference() -> None:
    assert usage("User-agent: *\nDisallow: /x\n", "/y") is NO_PREFERENCE
    assert usage(b"", "/") == UNKNOWN


# ---------------------------------------------------------------------------------------------
# SPEC E4: Content-Signal


def test_cloudflare_managed_file() -> None:
    # The shape of Cloudflare's managed robots.txt (2026): the signal in the '*' group,
    # named AI crawlers disallowed in groups of their own with no signal.
    body = (
        "User-agent: *\n"
        "Content-Signal: search=yes,ai-train=no,use=reference\n"
        "Allow: /\n\n"
        "User-agent: GPTBot\nDisallow: /\n\n"
        "User-agent: Applebot\nAllow: /\n"
    )
    prefs = usage(body, "/page", "mybot")
    assert prefs == {"train-ai": False, "ai-use": None, "search": True}
    assert prefs.signals == {"search": ("yes",), "ai-train": ("no",), "use": ("reference",)}
    assert prefs.sources["search"] == (
        UsageSource("Content-Signal", "search=yes,ai-train=no,use=reference", 2),
    )
    assert usage(body, "/page", "GPTBot") == UNKNOWN  # not crawlable
    # SPEC E4 choice: group scope; a named group without a signal has none.
    assert usage(body, "/page", "Applebot") == UNKNOWN


@pytest.mark.parametrize(
    ("value", "expected", "signals"),
    [
        (
            "ai-train=no, search=yes, ai-input=yes",  # contentsignals.org's example
            {"train-ai": False, "search": True, "ai-use": True},
            {"ai-train": ("no",), "search": ("yes",), "ai-input": ("yes",)},
        ),
        ("Search=YES, AI-Train = No", {"search": True, "train-ai": False}, None),
        ("search=allow, ai-train=disallow", {}, {"search": ("allow",), "ai-train": ("disallow",)}),
        ("ai-train=no, ai-train=yes", {"train-ai": True}, {"ai-train": ("yes",)}),  # last wins
        ("search=y, ai-train=n", {}, None),  # Content-Usage's values are not Content-Signal's
        ('search="yes"', {}, {"search": ('"yes"',)}),
        ("use=immediate", {}, {"use": ("immediate",)}),
        ("/blog/ ai-train=no", {}, {}),  # no path form is defined: nothing read
        (",,search=no,,", {"search": False}, {"search": ("no",)}),
        ("search", {}, {"search": ("",)}),
        ("", {}, {}),
    ],
)
def test_content_signal_values(
    value: str, expected: dict[str, bool], signals: dict[str, tuple[str, ...]] | None
) -> None:
    for prefs in (
        parse_content_signal(value),
        usage(f"User-agent: *\nContent-Signal: {value}\n", "/x"),
    ):
        assert prefs == {**UNKNOWN, **expected}
        if signals is not None:
            assert prefs.signals == signals


def test_several_signal_lines_combine_and_keep_every_raw_value() -> None:
    body = (
        "User-agent: *\n"
        "Content-Signal: ai-train=yes, use=full\n"
        "Content-Signal: ai-train=no, use=reference\n"
    )
    prefs = usage(body, "/x")
    assert prefs["train-ai"] is False
    assert lines(prefs, "train-ai") == [3]
    assert prefs.signals == {"ai-train": ("yes", "no"), "use": ("full", "reference")}


def test_content_signal_combines_with_content_usage_on_every_path() -> None:
    body = (
        "User-agent: *\n"
        "Content-Signal: ai-train=no, search=yes\n"
        "Content-Usage: /ok/ train-ai=y, search=n\n"
        "Content-Usage: ai-use=y\n"
    )
    assert usage(body, "/ok/x") == {"train-ai": False, "ai-use": None, "search": False}
    assert usage(body, "/x") == {"train-ai": False, "ai-use": True, "search": True}
    assert lines(usage(body, "/ok/x"), "search") == [3]


# ---------------------------------------------------------------------------------------------
# Headers and combine (for the page level)


def test_header_field_lines_are_joined_and_the_last_duplicate_wins() -> None:
    # RFC 9651 §4.2: one Dictionary; a later line can loosen an earlier one.
    assert parse_content_usage([b"train-ai=y", b"train-ai=n"])["train-ai"] is False
    assert parse_content_usage([b"train-ai=n", b"train-ai=y"])["train-ai"] is True
    assert parse_content_usage([b"train-ai=n", b"", b"  ", b"search=y"]) == {
        **UNKNOWN,
        "train-ai": False,
        "search": True,
    }
    assert parse_content_usage([]) == UNKNOWN
    assert parse_content_usage([b"train-ai=n", b"Search=y"]) == UNKNOWN


def test_header_sources_name_the_header() -> None:
    prefs = parse_content_usage([b"train-ai=n", b"search=y"])
    assert prefs.sources["train-ai"] == (
        UsageSource("Content-Usage", "train-ai=n, search=y", None),
    )
    signal = parse_content_signal(b"ai-train=yes, search=yes, ai-input=yes")
    assert signal == {"train-ai": True, "ai-use": True, "search": True}
    assert signal.sources["search"][0].field == "Content-Signal"
    assert parse_content_usage(b"search=\xff").sources["search"] == ()


def test_combine_is_most_restrictive_per_label() -> None:
    robots = RobotsTxt.parse(ATTACH_EXAMPLE).usage(HOST + "/ai-ok/x", "other")  # train-ai=y
    header = parse_content_usage(b"train-ai=n, search=y")
    signal = parse_content_signal(b"search=no, use=reference")
    combined = combine(robots, header, signal)
    assert combined == {"train-ai": False, "ai-use": None, "search": False}
    assert combined.sources["train-ai"] == header.sources["train-ai"]
    assert combined.sources["search"] == signal.sources["search"]
    assert combined.signals == {"search": ("no",), "use": ("reference",)}
    assert combine(robots, parse_content_usage(b"train-ai=y"))["train-ai"] is True
    assert lines(combine(robots, parse_content_usage(b"train-ai=y")), "train-ai") == [5, None]
    assert combine() is NO_PREFERENCE
    assert combine(NO_PREFERENCE, header) is header


def test_usage_prefs_is_read_only() -> None:
    prefs = parse_content_signal(b"search=yes, use=reference")
    assert list(prefs) == list(LABELS) and len(prefs) == 3
    assert not hasattr(prefs, "__setitem__")
    with pytest.raises(TypeError):
        prefs.sources["search"] = ()  # type: ignore[index]
    with pytest.raises(TypeError):
        prefs.signals["use"] = ("full",)  # type: ignore[index]
    assert isinstance(prefs.sources, MappingProxyType)
    with pytest.raises(AttributeError):
        prefs.anything = 1  # type: ignore[attr-defined]
    assert "signals={'search': ('yes',), 'use': ('reference',)}" in repr(prefs)


def test_usage_prefs_can_be_built_from_labels_only() -> None:
    prefs = UsagePrefs({"train-ai": False}, signals={"use": ["full"]})
    assert prefs == {**UNKNOWN, "train-ai": False}
    assert prefs.signals == {"use": ("full",)}
    with pytest.raises(ValueError, match="train-genai"):
        UsagePrefs({"train-genai": False})


def test_the_core_loads_no_scrapy() -> None:
    code = (
        "import sys, scrapy_rep, scrapy_rep.core.robots_file, scrapy_rep.core.usage\n"
        "robots = scrapy_rep.RobotsTxt.parse('User-agent: *\\nContent-Usage: train-ai=n')\n"
        "assert robots.usage('/x', None)['train-ai'] is False\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('scrapy', 'twisted')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert scrapy_rep.UsagePrefs is UsagePrefs
    assert {"UsagePrefs", "UsageSource"} <= set(scrapy_rep.__all__)


# ---------------------------------------------------------------------------------------------
# Property: a Content-Usage path selects the longest match an Allow rule would


_PATTERN = st.text(alphabet="/ab*$%2fé", max_size=6).map(lambda tail: "/" + tail)
_PATH = st.text(alphabet="/ab%2Ffé?", max_size=8).map(lambda tail: "/" + tail)


def _matches(pattern: str, path: str) -> bool:
    """The oracle: does a lone Disallow rule of ``pattern`` match ``path`` (Google parity)?"""
    return not RobotsTxt.parse(f"User-agent: *\nDisallow: {pattern}\n").allowed(HOST + path, "x")


@settings(max_examples=400, deadline=None)
@given(patterns=st.lists(_PATTERN, min_size=1, max_size=6), path=_PATH)
def test_content_usage_selects_the_longest_match_allow_would(
    patterns: list[str], path: str
) -> None:
    rules = "".join(f"Allow: {p}\n" for p in patterns)
    decision = RobotsTxt.parse("User-agent: *\n" + rules).decide(HOST + path, "x")
    usage_rules = "".join(f"Content-Usage: {p} train-ai=n\n" for p in patterns)
    prefs = usage("User-agent: *\n" + usage_rules, path, "x")
    # The line i + 2 holds patterns[i] in both files.
    chosen = set(lines(prefs, "train-ai"))
    if decision.rule is None:
        assert prefs == UNKNOWN and not chosen
        return
    assert prefs["train-ai"] is False
    # The rule Allow chose is among the chosen ones (Google's choice among equals: the first).
    assert decision.rule.line in chosen
    best = len(decision.rule.pattern)
    normalised = [rule[1] for rule in RobotsTxt.parse("User-agent: *\n" + rules).groups[0].rules]
    # Exactly the matching patterns of that length (SPEC E2: equals combine).
    expected = {
        i + 2 for i, p in enumerate(normalised) if len(p) == best and _matches(patterns[i], path)
    }
    assert chosen == expected

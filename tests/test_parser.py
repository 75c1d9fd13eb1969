"""SPEC part A, rule by rule, on small hand-made files."""

from __future__ import annotations

import pytest

from scrapy_rep import RobotsTxt
from scrapy_rep.core.parser import Key, parse_lines


def allowed(body: bytes | str, path: str, token: str = "mybot") -> bool:
    return RobotsTxt.parse(body).allowed("http://example.com" + path, token)


# A1: bytes and lines


def test_only_first_500_kib_count_even_mid_line() -> None:
    head = b"User-agent: *\n" + b"#" * (512_000 - 14 - 1 - 14) + b"\n"
    body = head + b"Disallow: /abcdef\nDisallow: /zzz\n"  # the cut leaves "Disallow: /abc"
    assert len(head) == 512_000 - 14
    assert not allowed(body, "/abcxyz")
    assert allowed(body, "/ab")
    assert allowed(body, "/zzz")


@pytest.mark.parametrize("bom", [b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"])
def test_bom_and_partial_bom_skipped_at_start(bom: bytes) -> None:
    assert not allowed(bom + b"User-agent: *\nDisallow: /x\n", "/x")


def test_bom_elsewhere_is_data() -> None:
    body = b"User-agent: *\n\xef\xbb\xbfDisallow: /x\nDisallow: /y\n"
    assert allowed(body, "/x")
    assert not allowed(body, "/y")


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"])
def test_line_endings(eol: bytes) -> None:
    body = eol.join([b"User-agent: *", b"Disallow: /x", b"Allow: /x/y"])
    assert not allowed(body, "/x/z")
    assert allowed(body, "/x/y")


def test_line_numbers_count_crlf_once_and_blank_lines() -> None:
    lines = parse_lines(b"User-agent: a\r\n\r\nDisallow: /b\rAllow: /c\nSitemap: /s")
    assert [(r[0], r[1]) for r in lines.others] == [(1, Key.USER_AGENT), (5, Key.SITEMAP)]
    assert lines.rules == [(False, "/b", 3), (True, "/c", 4)]


@pytest.mark.parametrize(
    ("body", "plain"),
    [
        (b"User-agent: *\nDisallow: /a\n", True),
        (b"User-agent: *\nDisallow: /a%2f\n", False),
        (b"# \xc3\xa9t\xc3\xa9\nUser-agent: *\nDisallow: /a\n", False),
    ],
)
def test_lines_say_whether_values_need_normalising(body: bytes, plain: bool) -> None:
    # SPEC A5: only a '%' or a byte >= 0x80 changes a value when it is normalised.
    assert parse_lines(body).plain is plain


def test_values_are_normalised_when_the_body_is_not_plain() -> None:
    body = b"User-agent: *\nDisallow: /\xe9%2f\nAllow: /b\nSitemap: https://x/\xc3\xa9\n"
    robots = RobotsTxt.parse(body)
    assert robots.groups[0].rules == ((False, "/%E9%2F", 2), (True, "/b", 3))
    assert robots.sitemaps == ["https://x/\xe9"]


def test_long_line_is_cut_and_kept_part_parses() -> None:
    pattern = b"/" + b"a" * 20_000
    body = b"User-agent: *\nDisallow: " + pattern + b"\n"
    kept = 16_663 - len(b"Disallow: ")
    assert not allowed(body, "/" + "a" * (kept - 1))
    assert allowed(body, "/" + "a" * (kept - 2))


def test_nul_ends_line_content() -> None:
    body = b"User-agent: *\nDisallow: /a\x00bc\n"
    assert not allowed(body, "/a")


def test_non_utf8_never_fails() -> None:
    body = b"User-agent: *\nDisallow: /\xff\xfe\n"
    assert not allowed(body, "/%FF%FE")
    assert allowed(body, "/x")


# A2: key, value, comment


def test_comment_anywhere() -> None:
    assert not allowed(b"User-agent: *\nDisallow: /a#b\n", "/a")


def test_missing_colon_two_tokens() -> None:
    assert not allowed(b"User-agent *\nDisallow /x\n", "/x")
    assert allowed(b"User-agent: *\nDisallow /x /y\n", "/x")


@pytest.mark.parametrize("blank", ["\f", "\v", "\t\f", " \v\f"])
def test_missing_colon_value_of_only_vertical_tab_or_form_feed_is_no_line(blank: str) -> None:
    # Google strips all ASCII whitespace from the line's ends (\v and \f too), then finds
    # no space/tab separator in what is left and ignores the line: it is neither an empty
    # user-agent token nor an empty rule closing the group (minimal cases).
    rt = RobotsTxt.parse(f"USERAGENT {blank}\nDisalow:/")
    assert rt.allowed("", "")
    body = f"User-agent: *\nDisallow{blank}\nUser-agent: FooBot\nDisallow: /private"
    assert not RobotsTxt.parse(body).allowed("http://a/private", "BarBot")


@pytest.mark.parametrize(
    "key",
    ["Disallowed", "DISALLOW", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"],
)
def test_disallow_key_forms(key: str) -> None:
    assert not allowed(f"User-agent: *\n{key}: /x\n", "/x")


@pytest.mark.parametrize("key", ["User-agent", "useragent", "user agent", "User-Agents"])
def test_user_agent_key_forms(key: str) -> None:
    assert not allowed(f"{key}: mybot\nDisallow: /x\n", "/x")


def test_allow_has_no_typo_forms() -> None:
    assert not allowed("User-agent: *\nDisallow: /x\nAlow: /x\n", "/x")


def test_unknown_keys_do_nothing() -> None:
    body = "User-agent: *\nCrawl-delay: 5\nHost: x\nNoindex: /a\nDisallow: /b\n"
    assert allowed(body, "/a")
    assert not allowed(body, "/b")


def test_empty_key_skipped() -> None:
    assert allowed("User-agent: *\n: /x\n", "/x")


# A3: groups


def test_sitemap_and_unknown_lines_do_not_close_user_agent_run() -> None:
    body = "User-agent: a\nSitemap: http://x/s.xml\nFoo: bar\n# c\n\nUser-agent: b\nDisallow: /\n"
    assert not allowed(body, "/p", "a")
    assert not allowed(body, "/p", "b")


def test_rule_closes_run_then_new_group() -> None:
    body = "User-agent: a\nDisallow: /x\nUser-agent: b\nDisallow: /y\n"
    assert allowed(body, "/y", "a")
    assert allowed(body, "/x", "b")


def test_empty_rule_also_closes_run() -> None:
    body = "User-agent: a\nDisallow:\nUser-agent: b\nDisallow: /y\n"
    assert allowed(body, "/y", "a")


def test_rules_before_first_user_agent_ignored() -> None:
    assert allowed("Disallow: /x\nUser-agent: *\nDisallow: /y\n", "/x")


def test_same_agent_groups_merge_and_star_groups_merge() -> None:
    body = (
        "User-agent: a\nDisallow: /1\nUser-agent: *\nDisallow: /2\n"
        "User-agent: a\nDisallow: /3\nUser-agent: *\nDisallow: /4\n"
    )
    assert not allowed(body, "/1", "a")
    assert not allowed(body, "/3", "a")
    assert allowed(body, "/2", "a")
    assert not allowed(body, "/2", "z")
    assert not allowed(body, "/4", "z")


def test_empty_specific_group_hides_star() -> None:
    body = "User-agent: mybot\nDisallow:\n\nUser-agent: *\nDisallow: /\n"
    assert allowed(body, "/anything")
    assert not allowed(body, "/anything", "other")


def test_specific_group_with_only_user_agent_line_hides_star() -> None:
    body = "User-agent: *\nDisallow: /\nUser-agent: mybot\n"
    assert allowed(body, "/x")


@pytest.mark.parametrize(
    ("value", "token", "applies"),
    [
        ("googlebot/1.2", "googlebot", True),
        ("googlebot*", "googlebot", True),
        ("Foo Bar", "foo", True),
        ("Foo Bar", "Foo Bar", False),
        ("bot2", "bot", True),
        ("MYBOT", "mybot", True),
        ("mybot", "mybo", False),
        ("mybo", "mybot", False),
    ],
)
def test_user_agent_value_cut_and_exact_comparison(value: str, token: str, applies: bool) -> None:
    body = f"User-agent: {value}\nDisallow: /x\n"
    assert allowed(body, "/x", token) is not applies


def test_star_followed_by_whitespace_is_global() -> None:
    assert not allowed("User-agent: * foo\nDisallow: /x\n", "/x")
    assert allowed("User-agent: *foo\nDisallow: /x\n", "/x")


def test_crawler_token_is_not_cut() -> None:
    assert allowed("User-agent: mybot\nDisallow: /x\n", "/x", "mybot/1.0")


# A4: the URL side


@pytest.mark.parametrize(
    ("url", "disallowed"),
    [
        ("http://example.com/a;p?q#frag", True),
        ("http://example.com/A;p?q", False),
        ("http://example.com/%61;p?q", False),
        ("http://example.com/./a;p?q", False),
    ],
)
def test_url_side_not_normalised(url: str, disallowed: bool) -> None:
    rt = RobotsTxt.parse("User-agent: *\nDisallow: /a;p?q\n")
    assert rt.allowed(url, "bot") is not disallowed


def test_path_ends_at_first_nul() -> None:
    # Google's matcher receives the path as a C string: it ends at the first NUL byte (asked
    # twice: the same once the group's indexes are built on the second check).
    rt = RobotsTxt.parse("User-agent: *\nDisallow: *l\nDisallow: /a$\n")
    for _ in range(2):
        assert rt.allowed("http://a/\0l", "bot")
        assert not rt.allowed("http://a/a\0b", "bot")
        assert rt.decide("http://a/\0l#x", "bot").allowed
        assert not rt.allowed("http://a/l\0", "bot")


def test_empty_path_is_slash() -> None:
    rt = RobotsTxt.parse("User-agent: *\nDisallow: /$\n")
    assert not rt.allowed("http://example.com", "bot")
    assert rt.allowed("http://example.com?x", "bot")


# A5: the pattern side


def test_pattern_percent_hex_upper_cased_and_nothing_decoded() -> None:
    body = "User-agent: *\nDisallow: /%aa\nDisallow: /%62\n"
    assert not allowed(body, "/%AA")
    assert allowed(body, "/%aa")
    assert allowed(body, "/b")
    assert not allowed(body, "/%62")


def test_pattern_non_ascii_percent_encoded() -> None:
    body = "User-agent: *\nDisallow: /é\n"
    assert not allowed(body, "/%C3%A9")
    assert allowed(body, "/é")


def test_pattern_slash_escape_is_not_slash() -> None:
    assert allowed("User-agent: *\nDisallow: /a%2Fb\n", "/a/b")


def test_wildcards_and_end_anchor() -> None:
    body = "User-agent: *\nDisallow: /*.pdf$\nDisallow: /a$b\nDisallow: /x*y*z\n"
    assert not allowed(body, "/docs/file.pdf")
    assert allowed(body, "/docs/file.pdf?x")
    assert not allowed(body, "/a$b/c")  # '$' not last: literal
    assert allowed(body, "/a")
    assert not allowed(body, "/x--y--z--")
    assert allowed(body, "/x--z--y")


def test_star_then_dollar_matches_to_end() -> None:
    body = "User-agent: *\nDisallow: /a*b*$\n"
    assert not allowed(body, "/a-b-anything")
    assert allowed(body, "/a-anything")


def test_case_sensitive_match() -> None:
    assert allowed("User-agent: *\nDisallow: /Private\n", "/private")


def test_empty_value_matches_nothing() -> None:
    assert allowed("User-agent: *\nDisallow:\n", "/x")


# A6: precedence


def test_longest_pattern_wins_counting_star_and_dollar() -> None:
    body = "User-agent: *\nAllow: /fish\nDisallow: /fish*\n"
    assert not allowed(body, "/fish.html")
    body = "User-agent: *\nDisallow: /fish\nAllow: /fish$\n"
    assert allowed(body, "/fish")
    assert not allowed(body, "/fishy")


def test_tie_goes_to_allow() -> None:
    assert allowed("User-agent: *\nDisallow: /page\nAllow: /page\n", "/page")
    assert allowed("User-agent: *\nDisallow: /p*ge\nAllow: /pa*e\n", "/page")


def test_index_html_allows_directory_exactly() -> None:
    body = "User-agent: *\nDisallow: /d/\nAllow: /d/index.html\n"
    assert allowed(body, "/d/")
    assert allowed(body, "/d/index.html")
    assert not allowed(body, "/d/other")
    assert not allowed(body, "/d/?q")


def test_index_html_does_not_apply_to_disallow() -> None:
    assert allowed("User-agent: *\nDisallow: /d/index.htm\n", "/d/")


def test_robots_txt_not_special() -> None:
    assert not allowed("User-agent: *\nDisallow: /\n", "/robots.txt")


# A7: sitemaps and crawl-delay


def test_sitemaps_in_file_order_independent_of_groups() -> None:
    body = "Sitemap: http://a/1.xml\nUser-agent: x\nSitemap: http://a/2.xml\nDisallow: /\n"
    assert RobotsTxt.parse(body).sitemaps == ["http://a/1.xml", "http://a/2.xml"]


def test_crawl_delay_of_selected_group() -> None:
    body = "User-agent: a\nCrawl-delay: 2.5\nDisallow: /x\nUser-agent: *\nCrawl-delay: 7\n"
    rt = RobotsTxt.parse(body)
    assert rt.crawl_delay("a") == 2.5
    assert rt.crawl_delay("b") == 7.0
    assert RobotsTxt.parse("User-agent: *\nCrawl-delay: soon\n").crawl_delay("b") is None


# C2: a preference list of tokens


def test_preference_list_first_token_with_own_group_wins() -> None:
    body = "User-agent: mybot\nDisallow: /a\nUser-agent: mybot-news\nDisallow: /b\n"
    rt = RobotsTxt.parse(body)
    tokens = ["mybot-news", "mybot"]
    assert rt.allowed("http://x/a", tokens)
    assert not rt.allowed("http://x/b", tokens)
    assert not rt.allowed("http://x/a", ["other", "mybot"])
    assert rt.decide("http://x/a", ["other", "nobody"]).token is None


# Explanations


def test_decide_reports_rule_line_and_group() -> None:
    body = "User-agent: *\nDisallow: /private\n\nUser-agent: mybot\nAllow: /\nDisallow: /x/\n"
    rt = RobotsTxt.parse(body)
    decision = rt.decide("http://e/x/1", "MyBot")
    assert decision.allowed is False
    assert decision.rule is not None
    assert (decision.rule.allow, decision.rule.pattern, decision.rule.line) == (False, "/x/", 6)
    assert decision.token == "MyBot"
    other = rt.decide("http://e/private", "OtherBot")
    assert other.reason == "no group for OtherBot; used *"
    assert other.rule is not None and other.rule.line == 2
    assert rt.decide("http://e/y", "OtherBot").rule is None


def test_decide_reports_derived_index_html_rule() -> None:
    rt = RobotsTxt.parse("User-agent: *\nDisallow: /\nAllow: /d/index.html\n")
    decision = rt.decide("http://e/d/", "bot")
    assert decision.allowed
    assert decision.rule is not None
    assert (decision.rule.pattern, decision.rule.line) == ("/d/$", 3)


def test_rule_count_and_str_equals_bytes() -> None:
    text = "User-agent: *\nDisallow: /é\nAllow: /a\nSitemap: http://x/é.xml\n"
    a, b = RobotsTxt.parse(text), RobotsTxt.parse(text.encode("utf-8"))
    assert a.rule_count == b.rule_count == 2
    assert a.sitemaps == b.sitemaps == ["http://x/é.xml"]

"""README stays a Scrapy user's manual, and the documentation stays whole.

README: short enough to read (at most 600 lines), the one line that enables scrapy-rep near the
top, and every name a user meets in a crawl (each REP_* setting, stat, drop reason and public
meta key) explained in it, derived from the code so that a new one fails here until README
says what it is. Every relative link of README, CHANGELOG, docs/ and benchmarks/README.md
resolves (anchors to a heading). docs/design.md's package map names every module. CHANGELOG
is a user's release note: one 0.1.0 entry with its three headings.
"""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import pytest
import scrapy
from packaging.version import Version
from scrapy.settings import default_settings

import scrapy_rep
from scrapy_rep.core import stats
from scrapy_rep.core.settings import SETTINGS
from scrapy_rep.crawl.exceptions import DropReason

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = Path(scrapy_rep.__file__).resolve().parent
README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")
#: The package map: the tree under this heading of docs/design.md.
PACKAGE_MAP = ROOT / "docs" / "design.md"
PACKAGE_MAP_HEADING = "## Package map"
MAX_LINES = 600
ADDONS_LINE = 'ADDONS = {"scrapy_rep.Addon": 0}'
ADDONS_WITHIN = 60
#: Markdown files whose relative links must resolve.
DOCUMENTS = [
    README,
    ROOT / "CHANGELOG.md",
    ROOT / "benchmarks" / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
]
#: Meta keys scrapy-rep reads that are not its own constants.
OTHER_META_KEYS = ("dont_obey_robotstxt",)

_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)


def section(text: str, heading: str) -> str:
    """The text under ``heading`` (a whole heading line) up to the next heading of its level
    or above."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines()
    start = lines.index(heading) + 1
    end = len(lines)
    for index in range(start, len(lines)):
        match = re.match(r"^(#+) ", lines[index])
        if match and len(match[1]) <= level:
            end = index
            break
    return "\n".join(lines[start:end])


def heading_of(text: str, prefix: str) -> str:
    (found,) = [line for line in text.splitlines() if line.startswith(prefix)]
    return found


def prose(text: str) -> str:
    """``text`` without fenced code blocks (their ``#`` lines are not headings)."""
    return _FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for _, title in _HEADING.findall(prose(path.read_text(encoding="utf-8"))):
        base = slug(title)
        name, n = base, 0
        while name in found:
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


# -- README's size and its first screen ---------------------------------------------------------


def test_readme_is_at_most_600_lines() -> None:
    assert len(TEXT.splitlines()) <= MAX_LINES


def test_the_addons_line_is_near_the_top() -> None:
    lines = TEXT.splitlines()
    assert ADDONS_LINE in lines
    assert lines.index(ADDONS_LINE) < ADDONS_WITHIN


def test_the_addons_line_says_what_startproject_wrote() -> None:
    # Scrapy's startproject writes `ADDONS = {}` from some release on: the add-on's line must
    # replace it, since one added above it is overwritten.
    found = re.search(
        r"replace the `ADDONS = \{\}` line\s+that `scrapy startproject` writes since Scrapy "
        r"(\d+\.\d+); on 2\.11 and 2\.12, add it",
        TEXT,
    )
    assert found, "README does not say what to do with startproject's ADDONS line"
    template = Path(scrapy.__file__).parent / "templates" / "project" / "module"
    written = "ADDONS = {}" in (template / "settings.py.tmpl").read_text().splitlines()
    assert written == (Version(scrapy.__version__) >= Version(found[1]))


def test_scrapys_default_user_agent_is_shown_as_scrapy_sends_it() -> None:
    # README names one release (tox runs several): with the installed one's version in its
    # place, the example is the installed Scrapy's USER_AGENT, to the last version digit.
    shown = re.findall(r"`Scrapy/(\S+) \(\+https://scrapy\.org\)`", TEXT)
    assert shown
    version = scrapy.__version__
    for named in shown:
        assert len(named.split(".")) == len(version.split(".")), named
        assert f"Scrapy/{version} (+https://scrapy.org)" == default_settings.USER_AGENT


def test_differences_say_which_meta_the_robots_txt_request_takes() -> None:
    # Scrapy's built-in sends its robots.txt request with none of the page request's meta.
    differences = section(TEXT, heading_of(TEXT, "## Differences from Scrapy's built-in"))
    (row,) = [line for line in differences.splitlines() if "`REP_FETCH_META_KEYS`" in line]
    for key in ("proxy", *SETTINGS["REP_FETCH_META_KEYS"].default):
        assert f"`{key}`" in row, key


# -- links ----------------------------------------------------------------------------------------


def relative_links(path: Path) -> list[str]:
    text = _INLINE_CODE.sub("", prose(path.read_text(encoding="utf-8")))
    return [
        target
        for target in _LINK.findall(text)
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I)  # http:, https:, mailto:
    ]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(document: Path) -> None:
    broken = []
    for target in relative_links(document):
        where, _, anchor = target.partition("#")
        resolved = (document.parent / where).resolve() if where else document
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no such heading")
    assert not broken, broken


def test_readme_links_to_the_documentation_it_moved() -> None:
    targets = {target.partition("#")[0] for target in relative_links(README)}
    for moved_to in (
        "docs/design.md",
        "docs/development.md",
        "docs/spec.md",
        "benchmarks/README.md",
    ):
        assert moved_to in targets


# -- every name a user meets is in README -------------------------------------------------------


@pytest.mark.parametrize("name", list(SETTINGS))
def test_every_setting_is_in_readme(name: str) -> None:
    assert f"`{name}`" in section(TEXT, "## Settings")


def stat_names() -> list[str]:
    """Every stat name ``scrapy_rep.core.stats`` defines: its constants and the names of each
    ``FetchStats`` prefix (robots.txt's, tdmrep.json's)."""
    names: list[str] = []
    for constant, value in vars(stats).items():
        if not constant.isupper():
            continue
        if isinstance(value, str):
            names.append(value)
        elif isinstance(value, stats.FetchStats):
            names.extend(v for v in vars(value).values() if isinstance(v, str))
    return sorted(set(names))


def test_the_stats_module_is_read_whole() -> None:
    names = stat_names()
    assert "robotstxt/forbidden" in names
    assert "tdmrep/request_count" in names
    assert "robotspage/items/marked" in names
    assert len(names) > 60


@pytest.mark.parametrize("name", stat_names())
def test_every_stat_is_in_readme(name: str) -> None:
    # README's Stats table names robotstxt/ stats without their prefix (`forbidden`) and
    # tdmrep/ ones by the same names; a stat with a suffix as `name/<what>`.
    prefix, rest = name.split("/", 1)
    found = re.search(
        rf"`(?:{prefix}/)?{re.escape(rest)}(?:/<[^>`]+>)?`", section(TEXT, "## Stats")
    )
    assert found, f"README's Stats section does not explain {name}"
    if prefix != "robotstxt":
        assert f"`{prefix}/" in section(TEXT, "## Stats")


def test_every_drop_reason_is_in_readme() -> None:
    table = section(TEXT, "### When a request is dropped")
    for reason in typing.get_args(DropReason):
        assert f"| `{reason}` |" in table, reason


def meta_keys() -> list[str]:
    """The meta keys and response flags scrapy-rep defines (module constants named ``*_META``,
    ``*_KEY`` or ``*_FLAG`` under ``scrapy_rep/crawl``), but its private ones (``_…``)."""
    keys = []
    for path in sorted((PACKAGE / "crawl").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and re.fullmatch(r"[A-Z_]*_(META|KEY|FLAG)", node.targets[0].id)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
                and not node.value.value.startswith("_")
            ):
                keys.append(node.value.value)
    return keys


def test_the_meta_keys_are_found() -> None:
    assert {"rep_dont_pause", "rep_usage", "rep_page_rules", "robotstxt_copy"} <= set(meta_keys())
    assert "_rep_seen" not in meta_keys()


@pytest.mark.parametrize(
    "key",
    [
        *meta_keys(),
        *OTHER_META_KEYS,
        SETTINGS["REP_PAGE_NOINDEX_FIELD"].default,
        SETTINGS["REP_USAGE_FIELD"].default,
    ],
)
def test_every_public_meta_key_is_in_readme(key: str) -> None:
    assert f"| `{key}` |" in section(TEXT, "### Meta keys and item fields")


# -- the package map ------------------------------------------------------------------------------


def package_map() -> set[str]:
    """The modules docs/design.md's tree names, as paths under ``scrapy_rep/``."""
    text = section(PACKAGE_MAP.read_text(encoding="utf-8"), PACKAGE_MAP_HEADING)
    (tree,) = re.findall(r"^```\n(scrapy_rep/\n.*?)^```", text, re.M | re.S)
    folders: list[str] = []
    modules: set[str] = set()
    for line in tree.splitlines()[1:]:
        branch = re.search(r"[├└]── ", line)
        assert branch, f"not a tree line: {line!r}"
        depth = branch.start() // 4
        name = line[branch.end() :].split()[0]
        folders = folders[:depth]
        if name.endswith("/"):
            folders.append(name)
        else:
            modules.add("".join(folders) + name)
    return modules


def test_the_package_map_names_every_module() -> None:
    modules = {str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")}
    named = package_map()
    assert not modules - named, f"modules missing from the package map: {sorted(modules - named)}"
    assert not named - modules, f"the package map names no such module: {sorted(named - modules)}"


# -- CHANGELOG ------------------------------------------------------------------------------------


def test_changelog_has_one_0_1_0_entry_with_its_three_headings() -> None:
    text = prose((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    releases = re.findall(r"^## (.+)$", text, re.M)
    assert len(releases) == 1 and releases[0].startswith("0.1.0"), releases
    entry = section(text, heading_of(text, "## 0.1.0"))
    assert re.findall(r"^### (.+)$", entry, re.M) == [
        "Added",
        "Different from Scrapy's built-in",
        "Known limitations",
    ]

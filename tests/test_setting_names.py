"""A misspelled scrapy-rep setting is warned about at startup, once, naming the setting meant
and where the misspelling was set: the project's settings, ``-s`` on the command line, a
spider's ``custom_settings``; with the add-on or with the middleware enabled by hand. Real
crawls, one misspelling of every setting in each (which names map to which setting:
tests/test_settings_table.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _crawl import run_crawl
from _servers import ScriptedServer
from test_middleware_basic import settings as by_hand

from scrapy_rep.core.settings import SETTINGS, misspelled

REPO = Path(__file__).resolve().parent.parent


def misspelling(name: str, index: int) -> str:
    """``name`` misspelled in the middle of what follows REP_: by ``index``, a character left
    out, one added, one changed, or two neighbours swapped."""
    i = 4 + (len(name) - 4) // 2
    kind = index % 4
    if kind == 0:
        return name[:i] + name[i + 1 :]
    if kind == 1:
        return name[:i] + "Q" + name[i:]
    if kind == 2:
        return name[:i] + ("Z" if name[i] == "Q" else "Q") + name[i + 1 :]
    j = next(k for k in range(i, 4, -1) if name[k] != name[k + 1])
    return name[:j] + name[j + 1] + name[j] + name[j + 2 :]


#: A misspelling of every setting -> the setting; and one of the prefix (a name that does not
#: start with REP_ is taken for a misspelling one edit away only).
MISSPELT = {misspelling(name, index): name for index, name in enumerate(SETTINGS)}
MISSPELT["RPE_PAUSE"] = "REP_PAUSE"


def test_each_misspelling_is_of_one_setting() -> None:
    assert len(MISSPELT) == len(SETTINGS) + 1
    for typo, name in MISSPELT.items():
        assert typo not in SETTINGS and misspelled(typo) == (name,), typo


def assert_warned(log: str, where: str) -> None:
    """Each misspelling warned about once, naming its setting and ``where``; nothing else."""
    warned = re.findall(r"\[scrapy_rep\] WARNING: (Unknown setting .*)$", log, re.M)
    assert sorted(warned) == sorted(
        f"Unknown setting {typo} (set {where}): did you mean {name}? scrapy-rep ignores it"
        for typo, name in MISSPELT.items()
    ), log


def test_misspelled_in_the_project_settings_middleware_by_hand(
    http_server: ScriptedServer,
) -> None:
    # The harness hands its settings to CrawlerProcess as a project's settings.py is handed.
    http_server.robots("User-agent: *\nAllow: /\n")
    result = run_crawl([http_server.url("/")], by_hand(**dict.fromkeys(MISSPELT, "1")))
    assert result.responses == [http_server.url("/")]
    assert_warned(result.log, "in the project settings")


_SPIDER = """
import scrapy


class OnePage(scrapy.Spider):
    name = "one_page"
    custom_settings = {custom!r}

    def start_requests(self):
        yield scrapy.Request(self.url)

    async def start(self):
        for request in self.start_requests():
            yield request

    def parse(self, response):
        yield {{"url": response.url}}
"""


@pytest.mark.parametrize("where", ["cmdline", "spider"])
def test_misspelled_with_s_or_in_custom_settings_with_the_addon(
    http_server: ScriptedServer, tmp_path: Path, where: str
) -> None:
    http_server.robots("User-agent: *\nAllow: /\n")
    spider = tmp_path / "one_page.py"
    custom = dict.fromkeys(MISSPELT, "1") if where == "spider" else {}
    spider.write_text(_SPIDER.format(custom=custom), encoding="utf-8")
    options = [
        'ADDONS={"scrapy_rep.Addon": 0}',
        "USER_AGENT=namebot/1.0 (+http://127.0.0.1)",
        "TELNETCONSOLE_ENABLED=False",
    ]
    if where == "cmdline":
        options += [f"{typo}=1" for typo in MISSPELT]
    command = [sys.executable, "-m", "scrapy", "runspider", str(spider)]
    command += ["-a", f"url={http_server.url('/')}"]
    for option in options:
        command += ["-s", option]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    result = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert http_server.count("/") == 1
    said = {"cmdline": "with -s on the command line", "spider": "in the spider's custom_settings"}
    assert_warned(result.stderr, said[where])

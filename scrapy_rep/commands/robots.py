"""``scrapy robots URL [URL ...]``: why is a URL allowed or disallowed?

Without ``--file`` each URL's origin's robots.txt is fetched through Scrapy
with the project's settings (proxies, headers, the robots.txt store…) by
``scrapy_rep.RobotsTxtMiddleware.resolve``, exactly as a crawl would; with
``--file`` a local robots.txt is read and nothing is fetched.

``--page`` also fetches each URL (only if its robots.txt allows it) and shows
the page's robots meta tags and X-Robots-Tag rules for the tokens (SPEC D).

Every URL's usage preferences are shown per label with the lines or headers that set
them; ``--purpose train-ai`` (default: the project's ``REP_USAGE_PURPOSES``) also says
whether a crawl declaring it would use the URL's content (SPEC G).

Each URL's first line says what the exit status counts: ``ALLOWED`` or ``DISALLOWED`` and,
with a purpose, each label's answer (``ALLOWED to crawl; train-ai: NOT allowed``). Exit status:
0 when every URL is allowed (and, with a purpose, its content would be used), 1 when any is
disallowed (or refused for the purpose, by the gate or, with ``--page``, by the page), 2 on a
usage error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.settings import SETTINGS_PRIORITIES

from scrapy_rep.__main__ import parse_tokens
from scrapy_rep.commands import QUIET_SETTINGS
from scrapy_rep.commands._online import enable_middleware, explain_online
from scrapy_rep.core.explain import explain_rules, line_texts
from scrapy_rep.core.explain_text import format_explanation, headline
from scrapy_rep.core.origin import ROBOTS_SCHEMES
from scrapy_rep.core.purpose import Purpose
from scrapy_rep.core.robots_file import RobotsTxt
from scrapy_rep.core.tokens import CrawlerTokens
from scrapy_rep.crawl._settings import purpose as purpose_setting
from scrapy_rep.crawl._tokens import settings_tokens

if TYPE_CHECKING:
    import argparse

__all__ = ["Command"]

#: The command's options: flag, metavar (None: a switch) and help; ``-h`` shows them all in
#: its usage line too (``Command.syntax``).
_OPTIONS: tuple[tuple[str, str | None, str], ...] = (
    (
        "--user-agent",
        "TOKEN",
        "the crawler's robots.txt token(s), e.g. MyBot or 'mybot-news,mybot', '*' for none "
        "(default: from the settings, as the middleware picks it)",
    ),
    ("--file", "ROBOTS_TXT", "read this local robots.txt ('-' for stdin); fetch nothing"),
    (
        "--page",
        None,
        "also fetch each URL (if robots.txt allows it) and show its page rules (robots meta "
        "tags, X-Robots-Tag)",
    ),
    (
        "--purpose",
        "LABELS",
        "what the crawl's output is used for, e.g. train-ai or 'train-ai,search' (default: "
        "REP_USAGE_PURPOSES from the settings; '' for none)",
    ),
    ("--json", None, "print JSON instead of text"),
)


def _usage(flag: str, metavar: str | None) -> str:
    return f"[{flag}]" if metavar is None else f"[{flag} {metavar}]"


class Command(ScrapyCommand):
    requires_project = False
    default_settings = QUIET_SETTINGS

    def syntax(self) -> str:
        # Scrapy builds the -h usage line from this before ``add_options`` runs: both come
        # from _OPTIONS, so the line lists every option.
        return " ".join(["URL [URL ...]", *(_usage(flag, meta) for flag, meta, _ in _OPTIONS)])

    def short_desc(self) -> str:
        return "Explain robots.txt decisions for URLs (scrapy-rep)"

    def long_desc(self) -> str:
        return (
            "For each URL: allowed or disallowed, the deciding rule and its line, "
            "the group used and why, and the origin's robots.txt outcome; with a purpose, "
            "whether a crawl declaring it would use the URL's content (the first line says "
            "both: 'ALLOWED to crawl; train-ai: NOT allowed'). Exit status 0 if every URL is "
            "allowed (and its content used for the purpose), 1 if any is disallowed or "
            "refused for the purpose, 2 on a usage error."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        for flag, metavar, help_text in _OPTIONS:
            if metavar is None:
                parser.add_argument(flag, action="store_true", help=help_text)
            else:
                parser.add_argument(flag, metavar=metavar, help=help_text)

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        # Scrapy parses with parse_known_args: an option it does not know comes among the URLs.
        for arg in args:
            if arg.startswith("-") and arg != "-":
                raise UsageError(f"unrecognized option: {arg!r}", print_help=False)
        super().process_options(args, opts)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args:
            raise UsageError("give at least one URL")
        for url in args:
            parts = urlsplit(url)
            if parts.scheme not in ROBOTS_SCHEMES or not parts.hostname:
                raise UsageError(f"not an http(s) or ftp URL: {url!r}", print_help=False)
        if opts.page and opts.file is not None:
            raise UsageError("--page fetches the pages: it cannot be used with --file")
        assert self.settings is not None
        settings = self.settings
        given = None
        if opts.user_agent is not None:
            try:
                given = parse_tokens(opts.user_agent)
            except ValueError as exc:
                raise UsageError(f"--user-agent {exc}", print_help=False) from exc
        if opts.purpose is not None:
            settings.set("REP_USAGE_PURPOSES", opts.purpose, "cmdline")
        try:
            purpose = purpose_setting(settings)
        except ValueError as exc:
            if opts.purpose is None:
                raise UsageError(str(exc), print_help=False) from exc
            message = str(exc).removeprefix("REP_USAGE_PURPOSES: ")
            raise UsageError(f"--purpose: {message}", print_help=False) from exc
        path = None if opts.file is None else Path(opts.file)
        body = None if path is None else _read(path)
        # Every usage error is given above, alone: notes and warnings come after.
        if (
            not settings.getbool("ROBOTSTXT_OBEY")
            and (settings.getpriority("ROBOTSTXT_OBEY") or 0) >= SETTINGS_PRIORITIES["project"]
        ):
            print(
                "note: ROBOTSTXT_OBEY = False in your settings: your crawls do not obey "
                "robots.txt; this shows what obeying it would do",
                file=sys.stderr,
            )
        if given is not None:
            tokens = given
        elif body is None:
            # The crawl that fetches robots.txt warns about the token settings, as every
            # crawl does: warned here too, they would be said twice.
            tokens = list(CrawlerTokens.from_settings(settings).default)
        else:
            tokens = list(settings_tokens(settings).default)
        if path is not None and body is not None:
            entries = self._explain_file(path, body, args, tokens, purpose)
        else:
            entries = self._explain_online(args, tokens, purpose, opts.page)
        if opts.json:
            print(json.dumps(entries, indent=2))
        else:
            print(format_explanation(entries))
        # What each headline says: a URL disallowed, or whose content the declared purpose may
        # not use (the crawl drops it, or its items), exits 1.
        self.exitcode = 0 if all(headline(entry)[1] for entry in entries) else 1

    def _explain_file(
        self, path: Path, body: bytes, urls: list[str], tokens: list[str], purpose: Purpose
    ) -> list[dict[str, Any]]:
        robots = RobotsTxt.parse(body)
        lines = line_texts(body)
        source = {"file": str(path)}
        return [explain_rules(robots, url, tokens, source, lines, purpose) for url in urls]

    def _explain_online(
        self, urls: list[str], tokens: list[str], purpose: Purpose, pages: bool = False
    ) -> list[dict[str, Any]]:
        assert self.settings is not None and self.crawler_process is not None
        enable_middleware(self.settings)
        return explain_online(self.crawler_process, urls, tokens, pages, purpose)


def _read(path: Path) -> bytes:
    """The robots.txt ``--file`` names (``-``: stdin); unreadable, a usage error."""
    try:
        return sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}", print_help=False) from exc

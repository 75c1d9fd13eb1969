"""``python -m scrapy_rep robots.txt TOKEN URL ...``: check URLs against a local robots.txt.

For scripts: no Scrapy, no network. Exit status 0 when every URL is allowed,
1 when any is disallowed, 2 on a usage error (bad arguments, unreadable file).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from scrapy_rep.core.explain import explain_rules, line_texts
from scrapy_rep.core.explain_text import format_explanation, headline
from scrapy_rep.core.robots_file import RobotsTxt
from scrapy_rep.core.tokens import clean_cut, fold, product_token, suggest_token

__all__ = ["main", "parse_tokens"]


def parse_tokens(value: str) -> list[str]:
    """``"mybot-news,mybot"`` → preference list, each cut to its product token (SPEC C1).

    ``"*"`` means no token (only the ``*`` groups). A value robots.txt would
    read as something else than was typed (``"My Bot/1.0"`` → ``My``,
    ``"bot2"`` → ``bot``), or a browser's User-Agent (``"Mozilla/5.0 (compatible;
    MyBot/1.0)"`` → ``Mozilla``, which a crawl warns about), raises ``ValueError``
    saying what to give instead: an explanation for a token the user did not mean
    is worse than none.
    """
    tokens = []
    for part in value.split(","):
        if part.strip() == "*":
            continue
        read = product_token(part)
        if not clean_cut(part):
            as_read = f"reads it as {read!r}" if read else "finds no product token in it"
            reason = "a token is letters, '-' and '_'"
        elif fold(read) == "mozilla" and read != part.strip():
            as_read = f"reads it as {read!r}"
            reason = "a browser's token, which almost no site names"
        else:
            tokens.append(read)
            continue
        raise ValueError(
            f"{part.strip()!r}: robots.txt {as_read} ({reason}); "
            f"give the token your crawler answers to, e.g. {suggest_token(part)}"
        )
    return tokens


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m scrapy_rep",
        description="Check URLs against a local robots.txt with Google's rules. "
        "Exit status: 0 all allowed, 1 some disallowed, 2 usage error.",
    )
    parser.add_argument("robots_txt", help="path of the robots.txt file ('-' for stdin)")
    parser.add_argument(
        "token",
        help="the crawler's product token, e.g. MyBot; several in order of "
        "preference as 'mybot-news,mybot'; '*' for none",
    )
    parser.add_argument("urls", nargs="+", metavar="URL", help="URLs to check")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        tokens = parse_tokens(args.token)
    except ValueError as exc:
        parser.error(f"token {exc}")
    try:
        if args.robots_txt == "-":
            body = sys.stdin.buffer.read()
        else:
            body = Path(args.robots_txt).read_bytes()
    except OSError as exc:
        parser.error(f"cannot read {args.robots_txt}: {exc.strerror or exc}")
    robots = RobotsTxt.parse(body)
    lines = line_texts(body)
    source = {"file": args.robots_txt}
    entries = [explain_rules(robots, url, tokens, source, lines) for url in args.urls]
    if args.json:
        print(json.dumps(entries, indent=2))
    else:
        print(format_explanation(entries))
    return 0 if all(headline(entry)[1] for entry in entries) else 1


if __name__ == "__main__":
    sys.exit(main())

"""``scrapy robots-record check DIR [DIR ...]``: does a compliance record hold?

Reads every file of the record directories given (a fleet's members may each have one) with
``scrapy_rep.storage.record.check`` and prints one line per problem, naming file and record,
then a summary line (docs/record.md). Exit status: 0 when everything follows, 1 otherwise, 2 on
a usage error (no subcommand, an unknown one, no directory, a path that is not a directory).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from scrapy_rep.commands import QUIET_SETTINGS

if TYPE_CHECKING:
    import argparse

    from scrapy_rep.storage.record import CheckReport

__all__ = ["Command", "format_report"]

_SUBCOMMANDS = ("check",)


class Command(ScrapyCommand):
    requires_project = False
    default_settings = QUIET_SETTINGS

    def syntax(self) -> str:
        return "check DIR [DIR ...]"

    def short_desc(self) -> str:
        return "Check a compliance record (REP_RECORD) (scrapy-rep)"

    def long_desc(self) -> str:
        return (
            "check DIR [DIR ...]: read every file of the record directories and report, "
            "naming file and record, any digest, chain, seal or manifest that does not match, "
            "and any decision that does not follow from the robots.txt copies it names, "
            "re-derived with today's parser. Unsealed files (a crawl that did not close its "
            "record) and decisions the parser now answers otherwise are listed apart. Exit "
            "status 0 if everything follows, 1 otherwise, 2 on a usage error."
        )

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        # Scrapy parses with parse_known_args: an option it does not know comes among the args.
        for arg in args:
            if arg.startswith("-"):
                raise UsageError(f"unrecognized option: {arg!r}", print_help=False)
        super().process_options(args, opts)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args:
            raise UsageError("give a subcommand: check DIR [DIR ...]")
        subcommand, *paths = args
        if subcommand not in _SUBCOMMANDS:
            raise UsageError(
                f"unknown subcommand {subcommand!r} (known: {', '.join(_SUBCOMMANDS)})",
                print_help=False,
            )
        if not paths:
            raise UsageError("give at least one record directory", print_help=False)
        directories = [Path(path) for path in paths]
        for directory in directories:
            if not directory.is_dir():
                raise UsageError(f"not a directory: {directory}", print_help=False)
        # Imported here: every ``scrapy`` command line loads this module, and warcio is an
        # extra (``scrapy-rep[record]``) that only a record needs.
        try:
            from scrapy_rep.storage.record import check
        except ImportError as exc:
            raise UsageError(
                f"checking a record needs warcio ({exc}): pip install 'scrapy-rep[record]'",
                print_help=False,
            ) from None
        import scrapy_rep

        report = check(directories, software=f"scrapy-rep {scrapy_rep.__version__}")
        print(format_report(report))
        self.exitcode = 0 if report.ok else 1


def format_report(report: CheckReport) -> str:
    """The report as the command prints it: one line per problem, then the summary."""
    lines = [f"FAILED: {problem}" for problem in report.failures]
    lines += [
        f"unsealed (its writer did not close it; not a failure): {path}" for path in report.unsealed
    ]
    lines += [f"the parser changed since: {problem}" for problem in report.parser_changed]
    lines += [f"unverifiable: {problem}" for problem in report.unverifiable]
    verdict = "everything follows" if report.ok else f"{len(report.failures)} failures"
    lines.append(
        f"{verdict}: {report.files} files, {report.records} records, "
        f"{report.decisions} decisions checked, {report.not_judged} not judged, "
        f"{len(report.unsealed)} unsealed, {len(report.parser_changed)} parser changes, "
        f"{len(report.unverifiable)} unverifiable"
    )
    return "\n".join(lines)

"""Argument types shared by the `evictable` subcommands."""

from __future__ import annotations

import argparse
import os
from typing import Any

__all__ = [
    "CONTRACT_HELP",
    "ERRORS_HELP",
    "DefaultsFormatter",
    "add_report_options",
    "count",
    "writable_path",
]

CONTRACT_HELP = (
    "exact: results, errors and snapshots equal to the model's; safety: any legal victims "
    "and slots, recency not compared (default: what the factory declares, else exact)"
)
ERRORS_HELP = (
    "which exception counts as the model's rejection: typed (this project's error, same "
    "fields), builtin (the builtin class it subclasses), any (default: what the factory "
    "declares, else typed)"
)


class DefaultsFormatter(argparse.RawDescriptionHelpFormatter):
    """`--help` that shows every option's default: `(default: X)` after its help,
    unless the help text already says what the default is; a switch is `off`."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "default" in text or action.default is argparse.SUPPRESS or not action.option_strings:
            return text
        if action.nargs == 0:  # a switch
            return f"{text} (default: off)"
        if action.default is None:
            return f"{text} (default: none)"
        return f"{text} (default: %(default)s)"


def add_report_options(p: Any) -> None:
    """`--json`, `--html` and `--junit`: the report files a command can write."""
    p.add_argument(
        "--json", metavar="PATH", type=writable_path, help="also write the report as JSON"
    )
    p.add_argument(
        "--html",
        metavar="PATH",
        type=writable_path,
        help="also write the report as one self-contained HTML page (records with filters, "
        "each counterexample as a table of steps, the lifecycle diagram)",
    )
    p.add_argument(
        "--junit",
        metavar="PATH",
        type=writable_path,
        help="also write the records as JUnit XML, one test case per record (a failure "
        "carries its counterexample)",
    )


def count(minimum: int) -> Any:
    """An argparse type: an int of at least `minimum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    parse.__name__ = "count"
    return parse


def writable_path(text: str) -> str:
    """An argparse type: a file path whose directory exists and is writable (checked
    before any work, so a long run never ends in "cannot write")."""
    directory = os.path.dirname(os.path.abspath(text)) or "."
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory, not a file")
    if not os.path.isdir(directory):
        raise argparse.ArgumentTypeError(f"no such directory: {directory}")
    if not os.access(directory, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write in {directory}")
    return text

"""Argument types shared by the `evictable` subcommands."""

from __future__ import annotations

import argparse
import os
from typing import Any

__all__ = ["count", "writable_path"]


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

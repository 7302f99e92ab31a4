"""Argument types shared by the `evictable` subcommands."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["count"]


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

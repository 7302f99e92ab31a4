"""The one error a command raises when it cannot run (exit code 2, one line)."""

from __future__ import annotations

__all__ = ["UsageError"]


class UsageError(Exception):
    """The command cannot run: bad arguments, an unusable factory, an unreadable input.

    Its message is the whole report: one line, starting with the command's name.
    """

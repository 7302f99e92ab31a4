"""The verification levels: how deep `evictable verify` goes.

`quick` for a first look, `default` for `make verify`, `thorough` before a release:
every group of obligations scales its bounds and example counts with the level.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["LEVELS", "Level"]

Level = Literal["quick", "default", "thorough"]

LEVELS: tuple[Level, ...] = ("quick", "default", "thorough")

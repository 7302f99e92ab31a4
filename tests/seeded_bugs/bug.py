"""The record describing one seeded bug."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["SeededBug"]


@dataclass(frozen=True)
class SeededBug:
    """A named, deliberately broken implementation and how to run the engine on it.

    `factory(num_blocks, policy, enable_events)` builds the broken manager. `faults`
    says whether the engine should inject policy-hook faults: needed for bugs that
    only show when a policy raises, off for bugs on the LRU fast path (a
    fault-injecting policy is a subclass, which takes the generic path).
    """

    name: str
    summary: str
    factory: Callable[[int, str, bool], Any]
    faults: bool = False

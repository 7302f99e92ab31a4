"""The lazy scanner with its CPU capacity given as an int, on every edge of the search.

`explore.lazy_impl` hands the scanner a callable capacity (the search sets it before
each step), so a scanner built with a fixed int -- the other way `LazyOffloadScanner`
takes its capacity -- is never explored. `fixed_capacity_search(bounds, k)` runs the
same lock-step search with the scanner built with the int `k` and every step given
capacity `k` on the model side (`FIXED[k]`, k = 0, 1: the capacities that bind
within a window of two).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar

from evictable.impl.lazy_offload import LazyOffloadScanner
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation, Outcome, Status, proved, refuted
from evictable.proofs.explore.engine import Result
from evictable.proofs.explore.lazy import Action, Bounds
from evictable.proofs.explore.lazy_impl import lockstep_search

__all__ = ["BOUNDS", "FIXED", "FixedCapacity0", "FixedCapacity1", "fixed_capacity_search"]

BOUNDS = Bounds(num_blocks=3, window=2, hashes=("a",), max_ref=1)
"""Three usable blocks and a window of two: a hashed block can sit before a kept one
in the walk, so a capacity reached mid-window is visible."""


class FixedCapacity0(LazyOffloadScanner):
    """`LazyOffloadScanner` built with the int capacity `CAPACITY` (the search's
    callable is ignored)."""

    __slots__ = ()
    CAPACITY: ClassVar[int] = 0

    def __init__(self, pool: Any, window: int, cpu_capacity: object = None) -> None:
        super().__init__(pool, window, type(self).CAPACITY)


class FixedCapacity1(FixedCapacity0):
    """As `FixedCapacity0`, with capacity 1."""

    __slots__ = ()
    CAPACITY: ClassVar[int] = 1


FIXED: dict[int, type[LazyOffloadScanner]] = {0: FixedCapacity0, 1: FixedCapacity1}


def fixed_capacity_search(
    bounds: Bounds, k: int, classes: dict[int, type[LazyOffloadScanner]] | None = None
) -> Result[Action]:
    """The lock-step search of `bounds` with capacity `k`, the scanner given it as an int."""
    cls = (classes or FIXED)[k]
    return lockstep_search(replace(bounds, capacities=(k,)), cls)


def obligations(level: Level) -> list[Obligation]:
    """`lazy.fixed_capacity` (the same bounds at every level: they are small), whose
    negative control is a scanner that ignores an int capacity."""
    from evictable.proofs.controls.scanners import CAPACITY_IGNORED

    def check(classes: dict[int, type[LazyOffloadScanner]] | None) -> Callable[[float], Outcome]:
        def run(_timeout_s: float) -> Outcome:
            for k in FIXED:
                out = fixed_capacity_search(BOUNDS, k, classes)
                if out.found is not None:
                    return refuted(f"capacity {k}: {out.found.reason}")
                if not out.complete:
                    return Outcome(Status.UNKNOWN, f"capacity {k}: incomplete")
            return proved(f"capacities {sorted(FIXED)}: every edge agrees")

        return run

    return [
        Obligation(
            name="lazy.fixed_capacity",
            statement=(
                "impl.LazyOffloadScanner built with an int capacity matches the model on "
                "every edge of the exhaustive search"
            ),
            check=check(None),
            negative=check(CAPACITY_IGNORED),
            negative_statement="the search catches a scanner that ignores an int capacity",
            tags=("lazy", "explore", "impl"),
            kind=Kind.EXPLORED,
            bounds=(
                f"num_blocks={BOUNDS.num_blocks} window={BOUNDS.window} hashes=a "
                f"max_ref={BOUNDS.max_ref}, capacity {sorted(FIXED)} given as an int"
            ),
        )
    ]

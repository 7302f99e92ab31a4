"""The lazy scanner with its CPU capacity given as an int, on every edge of the search.

`explore.lazy_impl` hands the scanner a callable capacity (the search sets it before
each step), so a scanner built with a fixed int -- the other way `LazyOffloadScanner`
takes its capacity -- is never explored. `fixed_capacity_search(bounds, k)` runs the
same lock-step search with the scanner built with the int `k` and every step given
capacity `k` on the model side (`FIXED[k]`, k = 0, 1: the capacities that bind
within a window of two).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from evictable.impl.lazy_offload import LazyOffloadScanner
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

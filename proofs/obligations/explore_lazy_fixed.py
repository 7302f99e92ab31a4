"""`lazy.fixed_capacity`: the lazy scanner with an int CPU capacity on every edge of
the search; the control ignores the capacity.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from evictable.impl.lazy_offload import LazyOffloadScanner
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation, Outcome, Status, proved, refuted
from evictable.proofs.explore.lazy import Bounds
from evictable.proofs.explore.lazy_fixed import BOUNDS, FIXED, fixed_capacity_search

LEVEL_BOUNDS: dict[str, Bounds] = {
    "quick": replace(BOUNDS, num_blocks=2),
    "default": BOUNDS,
    "thorough": BOUNDS,
}
"""The search's bounds per level (`quick`: two usable blocks, enough for the control)."""


def obligations(level: Level) -> list[Obligation]:
    """`lazy.fixed_capacity`, whose negative control is a scanner that ignores an int
    capacity."""
    from evictable.proofs.controls.scanners import CAPACITY_IGNORED

    bounds = LEVEL_BOUNDS[level]

    def check(classes: dict[int, type[LazyOffloadScanner]] | None) -> Callable[[float], Outcome]:
        def run(_backstop_s: float) -> Outcome:
            for k in FIXED:
                out = fixed_capacity_search(bounds, k, classes)
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
                f"num_blocks={bounds.num_blocks} window={bounds.window} hashes=a "
                f"max_ref={bounds.max_ref}, capacity {sorted(FIXED)} given as an int"
            ),
        )
    ]

"""Obligations for the lazy offload cursor: scan completeness and no stall.

Each obligation is an exhaustive breadth-first search (`proofs/explore/lazy.py`)
over the model scanner and pool at small bounds:

* `lazy.scan_complete` -- with generation validation, every reachable state
  satisfies every scanner invariant (scan completeness first) and every pool
  invariant. Negative control: ref-count-only validation (vLLM's rule) must yield
  a counterexample -- the *skip*: the cursor block is taken and freed again between
  two steps, rejoins at the back with ref_cnt 0, and the walk resumes from there.
* `lazy.impl_lockstep` -- `impl.LazyOffloadScanner` over `impl.BlockPool`, judged
  on every edge of the same search (`explore.lazy_impl`): the same results and
  errors, nothing changed on an error, equal snapshots. Negative control: every
  seeded broken scanner (`proofs.controls.scanners`; among them one that trusts a
  ref-0 cursor block, vLLM's rule) must diverge.
* `lazy.no_stall` -- with generation validation, from every reachable state, with
  no pool mutation, `ceil(len(queue)/window) + 1` steps visit every block that
  needs offloading. Negative control: ref-count-only validation must yield a state
  from which the scan never reaches some block (the cursor stranded at the back).
* `lazy.no_stall.queue_unlink` -- the same, with a queue-level unlink allowed (a
  block taken out of the free queue directly, its ref_cnt left at 0). Negative
  control: ref-count-only validation must yield the *stall*: the cursor block is
  unlinked with ref_cnt 0, so the walk yields nothing at every later step.
* `lazy.refcount.unlink_changes_ref` -- through the pool API every unlink raises
  the ref count, so ref-count-only validation never meets an unlinked cursor block
  with ref_cnt 0: the literal stall needs an operation outside the pool API.
  Negative control: with the queue-level unlink it is reached.

Plus `lazy.z3.pool_ops_keep_scan_complete` (`proofs/z3/lazy.py`): the same finding
as a bounded Z3 check from arbitrary states.

Counterexamples print as traces of pool and scanner calls with the state after
each one (queue front to back; `b:h` is a block with hash h, `+` marks a block
visited since it last entered the queue).
"""

from __future__ import annotations

from dataclasses import replace

from evictable.model.lazy_offload import Validation
from evictable.proofs.explore.lazy import (
    Bounds,
    Check,
    Search,
    explore,
)

__all__ = [
    "BOUNDS",
    "search_all",
]

BOUNDS: dict[str, tuple[Bounds, ...]] = {
    "quick": (  # the small world alone: it already shows every seeded scanner
        Bounds(num_blocks=2, window=2, hashes=("a",), max_ref=2, capacities=(0, 1, 2)),
    ),
    "default": (
        Bounds(num_blocks=3, window=2, hashes=("a",), max_ref=1, capacities=(0, 1, 3)),
        Bounds(num_blocks=3, window=1, hashes=("a",), max_ref=2, capacities=(0, 1)),
    ),
    "thorough": (
        Bounds(num_blocks=3, window=1, hashes=("a", "b"), max_ref=2, capacities=(0, 1, 3)),
        Bounds(num_blocks=3, window=2, hashes=("a",), max_ref=2, capacities=(0, 1, 3)),
        Bounds(num_blocks=4, window=2, hashes=("a",), max_ref=1, capacities=(0, 1, 4)),
        Bounds(num_blocks=4, window=1, hashes=("a",), max_ref=2, capacities=(0, 1)),
    ),
}
"""Per level, the bounds searched in turn (usable blocks, window, hash values, ref
bound for requests, capacities a step is given). Every level has a window of 2
(a step that walks past more than one block) and a capacity of 0 (a step that may
select nothing); with window 1, capacities above 1 act as 1 and are left out."""


def search_all(
    bounds: tuple[Bounds, ...], validation: Validation, check: Check, unlink: bool = False
) -> Search:
    """Search each bound in turn; the first violation wins; figures add up."""
    total = Search()
    for b in bounds:
        if unlink:
            b = replace(b, queue_unlink=True)
        s = explore(b, validation, check)
        total.states += s.states
        total.transitions += s.transitions
        total.depth = max(total.depth, s.depth)
        total.seconds += s.seconds
        total.truncated |= s.truncated
        if s.violation is not None:
            total.violation = s.violation
            total.actions = s.actions
            total.trace = [f"bounds: {b}", *s.trace, s.violation]
            return total
    return total

"""Z3 obligations: the implementation's counter updates keep each counter equal to its count.

`impl/manager.py` keeps `num_evictable` (READY keys) and `num_pending` (PENDING keys)
by hand: each operation adds or subtracts what it did -- the victims it evicted, the
keys it stored, acted on, pinned or unpinned (`manager_ops.counters_after`, in words
`manager_ops.COUNTER_RULES`). `counters.<op>` proves, for any number of keys and
slots and any batch of up to B keys, from any state satisfying the manager-level
invariant (`proofs.z3.manager`), that the update of `<op>` changes each counter by
exactly the change of the number of keys in its state over the keys the call
touched (every other key is unchanged), so counter = count is kept by every call.
That the implementation's code makes exactly these updates on every reachable call
is checked by executing it: `refine.manager.*` (`proofs.refine.bridges.judge_counters`).

Each negative control is the rule forgetting one of `<op>`'s updates (`prepare_store`
forgetting the victims is the seeded bug `counter_drift_on_eviction`).

These replace the former obligations over `model.lifecycle.counter_delta`, which
proved an identity about a per-row delta that no code executes. The GPU counter
(`num_free_blocks`) is the free queue's own count, proved with the queue
(`free_queue.*`) and bound to `impl/free_queue.py` (`bridge.free_queue`).
"""

from __future__ import annotations

from evictable.model.lifecycle import Machine
from evictable.proofs.base.records import Outcome
from evictable.proofs.z3.manager import consecution_query, decide
from evictable.proofs.z3.manager_ops import MANAGER, Variant

__all__ = [
    "check_counters",
]


def _counter_claim(name: str) -> bool:
    return name.endswith("_tracks_count")


def check_counters(
    machine: Machine, op: str, batch: int, backstop_s: float, variant: Variant = MANAGER
) -> Outcome:
    """`op`'s counter update keeps each counter equal to its count."""
    return decide(
        lambda w, b: consecution_query(machine, op, b, variant, w, _counter_claim),
        batch,
        backstop_s,
    )

"""The implementation's counter updates, as one rule for the Z3 proofs and the code checks.

`impl/manager.py` keeps `num_evictable` and `num_pending` by hand: each operation
adds or subtracts what it did. `counters_after` is that arithmetic, written once over
numbers that are Python ints (a concrete call, `judge_counters` of `refine.manager.*` in
`proofs.refine.bridges`) or Z3 terms (the relations of `proofs.z3.manager_ops`, proved by
`manager.consecution.*`, whose `*_tracks_count` claims it feeds). `forgetting` breaks it
on purpose (the negative controls).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "COUNTER_RULES",
    "CallCounts",
    "CounterRule",
    "counters_after",
]


@dataclass(frozen=True)
class CallCounts:
    """What one call did, counted: the numbers the implementation updates its counters by
    (Python ints for a concrete call, Z3 terms in the relation)."""

    victims: Any = 0
    stored: Any = 0
    acted: Any = 0
    pinned: Any = 0
    """Keys of a `prepare_load` whose ref count was 0."""
    unpinned: Any = 0
    """Keys of a `complete_load` whose ref count was 1."""


def counters_after(op: str, num_evictable: Any, num_pending: Any, n: CallCounts) -> tuple[Any, Any]:
    """The counters after `op`, updated as `impl/manager.py` updates them by hand."""
    if op == "prepare_store":
        return num_evictable - n.victims, num_pending + n.stored
    if op == "complete_store.success":
        return num_evictable + n.acted, num_pending - n.acted
    if op == "complete_store.failure":
        return num_evictable, num_pending - n.acted
    if op == "prepare_load":
        return num_evictable - n.pinned, num_pending
    if op == "complete_load":
        return num_evictable + n.unpinned, num_pending
    if op == "reset_cache":
        return 0, 0
    return num_evictable, num_pending


CounterRule = Callable[[str, Any, Any, CallCounts], tuple[Any, Any]]
"""(op, num_evictable, num_pending, what the call did) -> the counters after it."""


COUNTER_RULES: dict[str, str] = {
    "prepare_store": "num_evictable -= #victims; num_pending += #stored",
    "complete_store.success": "num_evictable += #acted; num_pending -= #acted",
    "complete_store.failure": "num_pending -= #acted",
    "prepare_load": "num_evictable -= #keys whose ref was 0",
    "complete_load": "num_evictable += #keys whose ref was 1",
    "touch": "no change",
    "reset_cache": "num_evictable := 0; num_pending := 0",
}
"""The implementation's per-operation counter updates, in words (`counters_after` above)."""

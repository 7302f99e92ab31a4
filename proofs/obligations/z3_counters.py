"""`counters.*`: the implementation's counter updates keep each counter equal to its
count; each control forgets one update.
"""

from __future__ import annotations

from functools import partial

from evictable.model import lifecycle
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation
from evictable.proofs.controls.encodings import forgetting
from evictable.proofs.z3.counter_rules import COUNTER_RULES
from evictable.proofs.z3.counters import check_counters
from evictable.proofs.z3.manager import BATCH
from evictable.proofs.z3.manager_ops import OPS, Variant

FORGOTTEN: dict[str, tuple[str, str]] = {
    "prepare_store": ("victims", "num_evictable -= #victims"),
    "complete_store.success": ("acted", "its updates by #acted"),
    "complete_store.failure": ("acted", "num_pending -= #acted"),
    "prepare_load": ("pinned", "num_evictable -= #keys at ref 0"),
    "complete_load": ("unpinned", "num_evictable += #keys at ref 1"),
    "reset_cache": ("reset", "the zeroing of both counters"),
}
"""The update each control forgets (a `CallCounts` field, and in words)."""


def obligations(level: Level) -> list[Obligation]:
    """`counters.<op>` for every operation that updates a counter (the claims about the
    table in `model.lifecycle` now, the controls about the reference table)."""
    machine = lifecycle.CPU_MACHINE
    b = BATCH[level]
    out = []
    for op in OPS:
        if op not in FORGOTTEN:
            continue  # touch updates no counter (its consecution covers it)
        what, text = FORGOTTEN[op]
        out.append(
            Obligation(
                f"counters.{op}",
                f"{op}'s counter update ({COUNTER_RULES[op]}) keeps num_evictable and "
                "num_pending equal to the number of READY and PENDING keys",
                partial(check_counters, machine, op, b),
                partial(
                    check_counters, machine, op, b, variant=Variant(counters=forgetting(op, what))
                ),
                f"{op} forgetting {text} is refuted",
                kind=Kind.BOUNDED,
                bounds=f"any number of keys and slots, batches of <= {b} keys",
            )
        )
    return out

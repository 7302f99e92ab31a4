"""`manager.*`: the manager-level inductive invariant over an unbounded key sort,
its consecution per operation, non-vacuity and row reachability, each with a broken
relation.
"""

from __future__ import annotations

from functools import partial

from evictable.model import lifecycle
from evictable.model.lifecycle import CpuState
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import (
    Kind,
    Obligation,
)
from evictable.proofs.controls.encodings import consecution_controls
from evictable.proofs.controls.tables import dead_row_table, replace_state
from evictable.proofs.z3.manager import (
    BATCH,
    WITNESS_WORLD,
    check_consecution,
    check_initiation,
    check_nonvacuity,
    check_rows,
)
from evictable.proofs.z3.manager_ops import (
    OPS,
    Variant,
)
from evictable.proofs.z3.manager_state import (
    REFERENCE,
)


def obligations(level: Level) -> list[Obligation]:
    """The manager-level obligations at `level` (the batch bound grows with it).

    The claims are about the table in `model.lifecycle` now; the negative controls
    break the reference table (so they stay meaningful whatever table is tested).
    """
    machine = lifecycle.CPU_MACHINE
    ref = REFERENCE
    b = BATCH[level]
    bounds = f"any number of keys and slots, batches of <= {b} keys"
    witness = f"witnesses in {WITNESS_WORLD.name}, batches of <= {min(b, 2)} keys"
    wb = min(b, 2)
    out = [
        Obligation(
            "manager.initiation",
            "a fresh manager satisfies the manager-level invariant",
            lambda t: check_initiation(machine, t),
            lambda t: check_initiation(replace_state(ref, CpuState.ABSENT, flag=True), t),
            "a manager whose absent keys start listed is refuted",
            kind=Kind.UNBOUNDED,
        )
    ]
    controls = consecution_controls(ref)
    for op in OPS:
        variant, text = controls[op]
        out.append(
            Obligation(
                f"manager.consecution.{op}",
                f"{op} keeps listed ⇔ READY, the slot partition and ownership, and its "
                "counters equal to the counts; a rejected call changes nothing",
                partial(check_consecution, machine, op, b),
                partial(check_consecution, ref, op, b, variant=variant),
                f"{text} is refuted",
                kind=Kind.BOUNDED,
                bounds=bounds,
            )
        )
    out.append(
        Obligation(
            "manager.nonvacuity",
            "every branch of every operation happens from some state satisfying the invariant",
            lambda t: check_nonvacuity(machine, wb, t),
            lambda t: check_nonvacuity(ref, wb, t, Variant(victims_listed=False)),
            "a policy whose victims are unlisted keys makes eviction vacuous: refuted",
            kind=Kind.BOUNDED,
            bounds=witness,
        )
    )
    out.append(
        Obligation(
            "manager.rows",
            "every row of the table fires in some operation from a state satisfying the "
            "invariant (no dead row)",
            lambda t: check_rows(machine, wb, t),
            lambda t: check_rows(dead_row_table(ref), wb, t),
            "a table where evict on LOADING is a row (never executed) is refuted",
            kind=Kind.BOUNDED,
            bounds=witness,
        )
    )
    return out

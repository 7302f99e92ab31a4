"""`manager.*`: the manager-level inductive invariant over an unbounded key sort,
its consecution per operation, non-vacuity and row reachability, each with a broken
relation.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from evictable.model import lifecycle
from evictable.model.lifecycle import CpuState
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import (
    Kind,
    Obligation,
    Outcome,
    every_refuted,
    targeted,
)
from evictable.proofs.controls.encodings import (
    consecution_controls,
    fold_controls,
    more_consecution_controls,
)
from evictable.proofs.controls.tables import dead_row_table, replace_state
from evictable.proofs.z3.manager import (
    BATCH,
    SEARCH_BATCH,
    check_consecution,
    check_initiation,
    check_nonvacuity,
    check_rows,
    counterexample_world,
    unbounded_in_batch,
    witness_world,
)
from evictable.proofs.z3.manager_fold import AGREEMENT_BATCH, ASSUMPTIONS, LemmaCache
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
    witness = f"witnesses in {witness_world(b).name}, batches of <= {b} keys"
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
    more = more_consecution_controls(ref)
    own = fold_controls(ref)
    for op in OPS:
        sb = SEARCH_BATCH
        searched = (
            f"counterexamples sought first in {counterexample_world(sb, b + 1).name}, "
            f"calls of <= {sb} keys"
            if op != "reset_cache"
            else f"counterexamples sought first in {counterexample_world(sb, b + 1).name}"
        )
        variants = [controls[op], *more.get(op, [])]
        cache: LemmaCache = {}  # the walk control's steps are the claim's: one lemma
        checks: list[tuple[str, Callable[[float], Outcome]]] = [
            (text, partial(check_consecution, ref, op, b, variant=variant))
            for variant, text in variants
        ]
        checks += [
            (
                text,
                targeted(
                    partial(check_consecution, ref, op, b, variant=variant, cache=cache), claims
                ),
            )
            for variant, text, claims in own.get(op, [])
        ]
        unbounded = unbounded_in_batch(op)
        out.append(
            Obligation(
                f"manager.consecution.{op}",
                f"{op} keeps listed ⇔ READY, the slot partition and ownership, and its "
                "counters equal to the counts; a rejected call changes nothing; an "
                "accepted call's keys are distinct"
                + (
                    " (any batch length: the fold lemma over the relation's own steps; "
                    "the relation's walk held to the lemma's for calls of <= "
                    f"{AGREEMENT_BATCH} keys)"
                    if op != "reset_cache" and unbounded
                    else ""
                ),
                partial(check_consecution, machine, op, b, cache=cache),
                checks[0][1] if len(checks) == 1 else partial(every_refuted, checks),
                "; ".join(text for text, _ in checks)
                + (" is refuted" if len(checks) == 1 else ": each refuted"),
                kind=Kind.UNBOUNDED if unbounded else Kind.BOUNDED,
                assumptions=ASSUMPTIONS.get(op, ()) if op != "reset_cache" else (),
                bounds=(
                    f"any number of keys and slots (no batch); {searched}"
                    if op == "reset_cache"
                    else f"any number of keys, slots and batch length; {searched}"
                    if unbounded
                    else f"any number of keys and slots, batches of <= {b} keys (B = {b}); "
                    f"{searched}"
                ),
            )
        )
    out.append(
        Obligation(
            "manager.nonvacuity",
            "every branch of every operation happens from some state satisfying the "
            f"invariant, among them, per operation, an accepted call of {b} distinct keys "
            "that all act",
            lambda t: check_nonvacuity(machine, b, t),
            lambda t: check_nonvacuity(ref, b, t, Variant(victims_listed=False)),
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
            lambda t: check_rows(machine, b, t),
            lambda t: check_rows(dead_row_table(ref), b, t),
            "a table where evict on LOADING is a row (never executed) is refuted",
            kind=Kind.BOUNDED,
            bounds=witness,
        )
    )
    return out

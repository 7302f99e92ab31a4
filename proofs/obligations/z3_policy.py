"""`policy.lru.<op>`: the LRU's own state in Z3 (`proofs.z3.policy_lru`), composed
with the manager relation, per operation (`proofs.z3.policy_compose`), each with
the broken hook relations of `proofs.controls.policy_relations` as its control.
"""

from __future__ import annotations

from functools import partial

from evictable.model import lifecycle
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation, every_refuted
from evictable.proofs.controls.policy_relations import LRU_CONTROLS
from evictable.proofs.z3.manager import BATCH, counterexample_world
from evictable.proofs.z3.manager_ops import OPS
from evictable.proofs.z3.manager_state import REFERENCE
from evictable.proofs.z3.policy_compose import check_lru

__all__ = ["obligations"]

_CLAIMS: dict[str, str] = {
    "prepare_store": "its victims are evictable keys outside the batch, least recent first, "
    "and no evictable key outside the batch and the victims is older than a victim",
    "complete_store.success": "the keys it makes evictable are the most recent, in input order",
    "complete_load": "the keys it makes evictable are the most recent, in input order",
    "touch": "the first listed key it touches ends the most recent",
}


def obligations(level: Level) -> list[Obligation]:
    """`policy.lru.<op>` for every operation, calls of up to B keys (`manager.BATCH`)."""
    machine = lifecycle.CPU_MACHINE
    b = BATCH[level]
    out = []
    for op in OPS:
        controls = [
            (what, partial(check_lru, REFERENCE, op, b, hooks=hooks))
            for what, hooks in LRU_CONTROLS[op]
        ]
        claim = _CLAIMS.get(op)
        searched = f"controls' counterexamples shown in {counterexample_world(b, b + 1).name}"
        out.append(
            Obligation(
                f"policy.lru.{op}",
                f"{op} composed with the LRU's hook relations keeps the LRU's list equal to "
                "the evictable set (resident, ref 0), its stamps below the clock and "
                "distinct" + (f"; {claim}" if claim else ""),
                partial(check_lru, machine, op, b, search=False),
                partial(every_refuted, controls),
                "; ".join(what for what, _ in controls) + ": each refuted",
                tags=("z3", "policy", "lru"),
                kind=Kind.UNBOUNDED if op == "reset_cache" else Kind.BOUNDED,
                bounds=(
                    f"any number of keys and slots (no batch); {searched}"
                    if op == "reset_cache"
                    else f"any number of keys and slots, batches of <= {b} keys (B = {b}); "
                    f"{searched}"
                ),
            )
        )
    return out

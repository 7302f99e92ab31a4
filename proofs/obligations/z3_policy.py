"""`policy.lru.<op>` and `policy.arc.<op>`: each policy's own state in Z3
(`proofs.z3.policy_lru`, `policy_arc`), composed with the manager relation, per
operation (`proofs.z3.policy_compose`), each with the broken hook relations of
`proofs.controls.policy_relations` as its control.
"""

from __future__ import annotations

from functools import partial

from evictable.model import lifecycle
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation, every_refuted, targeted
from evictable.proofs.controls.policy_relations import ARC_CONTROLS, BREAKS, LRU_CONTROLS
from evictable.proofs.z3.manager import BATCH, counterexample_world
from evictable.proofs.z3.manager_ops import OPS
from evictable.proofs.z3.manager_state import REFERENCE, BoundedWorld
from evictable.proofs.z3.policy_compose import check_arc, check_lru

__all__ = ["ARC_WORLD", "obligations"]

ARC_WORLD: dict[Level, tuple[BoundedWorld, int]] = {
    "quick": (BoundedWorld(keys=5, slots=2), 2),
    "default": (BoundedWorld(keys=7, slots=3), 2),
    "thorough": (BoundedWorld(keys=9, slots=4), 3),
}
"""`policy.arc.*`'s finite world and batch bound per level: keys >= 2 x slots + 1, so
that both a full ghost list and full residency leave a key to store (the ghost bound
can be met)."""

_CLAIMS: dict[str, str] = {
    "prepare_store": "its victims are evictable keys outside the batch, least recent first, "
    "and no evictable key outside the batch and the victims is older than a victim",
    "complete_store.success": "the keys it makes evictable are the most recent, in input order",
    "complete_load": "the keys it makes evictable are the most recent, in input order",
    "touch": "the first listed key it touches ends the most recent",
}


def obligations(level: Level) -> list[Obligation]:
    """`policy.lru.<op>` for every operation, calls of up to B keys (`manager.BATCH`),
    and `policy.arc.<op>` in the finite world of `ARC_WORLD`."""
    machine = lifecycle.CPU_MACHINE
    b = BATCH[level]
    out = []
    for op in OPS:
        controls = [
            (what, targeted(partial(check_lru, REFERENCE, op, b, hooks=hooks), BREAKS[what]))
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
    world, ab = ARC_WORLD[level]
    for op in OPS:
        arc_controls = [
            (
                what,
                targeted(partial(check_arc, REFERENCE, op, world, ab, hooks=hooks), BREAKS[what]),
            )
            for what, hooks in ARC_CONTROLS[op]
        ]
        out.append(
            Obligation(
                f"policy.arc.{op}",
                f"{op} composed with ARC's hook relations keeps ARC's idle view equal to "
                "the evictable set (resident, ref 0), T1 and T2 disjoint and together the "
                "residents, B1 and B2 disjoint and not resident, the target within "
                "[0, capacity] and each ghost list at most capacity long"
                + ", resident stamps distinct within T1 and T2 and below their clock"
                + (
                    "; its victims are evictable keys outside the batch"
                    if op == "prepare_store"
                    else "; its first key, if resident, ends the most recent of its list"
                    if op == "touch"
                    else ""
                ),
                partial(check_arc, machine, op, world, ab),
                partial(every_refuted, arc_controls),
                "; ".join(what for what, _ in arc_controls) + ": each refuted",
                tags=("z3", "policy", "arc"),
                kind=Kind.BOUNDED,
                bounds=f"{world.name} (capacity {world.slots}), batches of <= {ab} keys",
            )
        )
    return out

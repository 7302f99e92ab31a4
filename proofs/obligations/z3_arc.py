"""`arc.z3.*`: ARC's adaptive target stays in [0, N] and its per-key relations are
inductive (Z3), each with a broken encoding.
"""

from __future__ import annotations

from evictable.model.arc import target_after_b1_hit, target_after_b2_hit
from evictable.proofs.base.records import Kind, Obligation, every_refuted
from evictable.proofs.controls.arc_models import (
    floor_division_b1_hit,
    floor_division_b2_hit,
    leaky_touch_relation,
)
from evictable.proofs.z3.arc import (
    RELATIONS,
    check_encoding,
    check_target_range,
    inductive_check,
)


def obligations(level: str) -> list[Obligation]:
    """The ARC target-range proofs (reals) and the membership induction over keys."""
    obs: list[Obligation] = [
        Obligation(
            "arc.z3.target_b1_hit_in_range",
            "0 ≤ t ≤ N ∧ 1 ≤ |B1| ⇒ 0 ≤ min(t + max(1, |B2|/|B1|), N) ≤ N (reals, unbounded)",
            check_target_range("b1", broken=False),
            check_target_range("b1", broken=True),
            "a B1 hit without the cap at N is refuted",
            tags=("z3", "arc"),
            kind=Kind.UNBOUNDED,
        ),
        Obligation(
            "arc.z3.target_b2_hit_in_range",
            "0 ≤ t ≤ N ∧ 1 ≤ |B2| ⇒ 0 ≤ max(t − max(1, |B1|/|B2|), 0) ≤ N (reals, unbounded)",
            check_target_range("b2", broken=False),
            check_target_range("b2", broken=True),
            "a B2 hit without the floor at 0 is refuted",
            tags=("z3", "arc"),
            kind=Kind.UNBOUNDED,
        ),
        Obligation(
            "arc.z3.target_encoding_matches_model",
            "the Z3 target terms compute model.arc's target functions (N ≤ 4, all sizes)",
            check_encoding(target_after_b1_hit, target_after_b2_hit),
            lambda backstop_s: every_refuted(
                [
                    ("b1 // b2", check_encoding(floor_division_b1_hit, target_after_b2_hit)),
                    ("b2 // b1", check_encoding(target_after_b1_hit, floor_division_b2_hit)),
                ],
                backstop_s,
            ),
            "a B1 hit, and a B2 hit beside a non-empty B1, computed with integer division "
            "are each told apart from the encoding",
            tags=("z3", "arc"),
            kind=Kind.EXPLORED,
            bounds="N <= 4, every list size, the 7 targets i*N/6 per N",
        ),
    ]
    obs.append(
        Obligation(
            "arc.z3.membership_inductive",
            "T1 ∩ T2 = ∅, B1 ∩ B2 = ∅, residents ∩ ghosts = ∅, T1 ∪ T2 = residents: true "
            "initially and kept by every ARC event, for any number of keys (per-key "
            "relation of evictable.proofs.z3.arc; each event non-vacuous)",
            inductive_check(RELATIONS),
            inductive_check({**RELATIONS, "touch": leaky_touch_relation}),
            "a touch relation that adds the key to T2 without taking it out of T1 is refuted",
            tags=("z3", "arc"),
            kind=Kind.UNBOUNDED,
        )
    )
    return obs

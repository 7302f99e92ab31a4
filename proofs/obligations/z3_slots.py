"""`slots.*`: the slot allocator keeps fresh ⊎ free ⊎ owned and reuses freed slots LIFO
(bounded Z3), each with a broken allocator.
"""

from __future__ import annotations

from dataclasses import replace

from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Obligation
from evictable.proofs.z3.slots import Allocator, bind, check_lifo_reuse, check_slot_step

SLOTS: dict[str, int] = {"quick": 4, "default": 6, "thorough": 7}
"""N, the number of slot ids, per level."""


def obligations(level: Level) -> list[Obligation]:
    """The slot obligations for N slot ids (N per level)."""
    ns = SLOTS[level]
    alloc = Allocator()
    return [
        bind(
            "slots.partition.alloc",
            f"allocation (fresh first, then LIFO) keeps fresh ⊎ free ⊎ owned ({ns} slots) "
            "and hands out an unowned id",
            check_slot_step,
            {"step": "alloc", "slots": ns, "alloc": alloc},
            {"step": "alloc", "slots": ns, "alloc": replace(alloc, bumps_high_water=False)},
            "an allocator that does not advance the high-water mark is refuted",
            f"N={ns} slots",
        ),
        bind(
            "slots.partition.free",
            f"freeing an owned id keeps fresh ⊎ free ⊎ owned ({ns} slots)",
            check_slot_step,
            {"step": "free", "slots": ns, "alloc": alloc},
            {"step": "free", "slots": ns, "alloc": replace(alloc, pushes_on_free=False)},
            "a free that does not push the id is refuted",
            f"N={ns} slots",
        ),
        bind(
            "slots.partition.reset",
            f"reset makes every id fresh and keeps the partition ({ns} slots)",
            check_slot_step,
            {"step": "reset", "slots": ns, "alloc": alloc},
            {"step": "reset", "slots": ns, "alloc": replace(alloc, reset_clears_stack=False)},
            "a reset that keeps the free stack is refuted",
            f"N={ns} slots",
        ),
        bind(
            "slots.lifo_reuse",
            f"once fresh ids are used up, the last freed id is reused first ({ns} slots)",
            check_lifo_reuse,
            {"slots": ns, "alloc": alloc},
            {"slots": ns, "alloc": replace(alloc, pops_top=False)},
            "a FIFO allocator is refuted",
            f"N={ns} slots",
        ),
    ]

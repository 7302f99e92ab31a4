"""`eviction.lru.*`, `slots.*`: bounded Z3 obligations of the evictable-list eviction,
the list's recency order and the slot allocator, each with a broken encoding.
"""

from __future__ import annotations

from dataclasses import replace

from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Obligation
from evictable.proofs.obligations.z3_slots import obligations as slot_obligations
from evictable.proofs.z3.eviction import (
    ListOps,
    Walk,
    check_exact_victims,
    check_least_recent,
    check_list_order,
)
from evictable.proofs.z3.slots import bind as _ob

BLOCKS: dict[str, int] = {"quick": 4, "default": 8, "thorough": 10}
"""N, the number of blocks (eviction, list order), per level."""


def obligations(level: Level) -> list[Obligation]:
    """Eviction and slot obligations for N blocks / slots (N per level)."""
    n = BLOCKS[level]
    ok, lo = Walk(), ListOps()
    return [*_eviction_obligations(n, ok, lo), *slot_obligations(level)]


def _eviction_obligations(n: int, ok: Walk, lo: ListOps) -> list[Obligation]:
    return [
        _ob(
            "eviction.lru.exact_victims",
            f"walking the evictable list ({n} blocks) takes exactly n listed unprotected "
            "victims, or fails with no change when fewer exist",
            check_exact_victims,
            {"blocks": n, "walk": ok},
            {"blocks": n, "walk": replace(ok, skips_protected=False)},
            "an eviction that ignores protection is refuted",
            f"N={n} blocks",
        ),
        _ob(
            "eviction.lru.least_recent",
            f"the victims are exactly the n least-recent eligible blocks ({n} blocks)",
            check_least_recent,
            {"blocks": n, "walk": ok},
            {"blocks": n, "walk": replace(ok, from_lru_end=False)},
            "an eviction that walks from the most-recent end is refuted",
            f"N={n} blocks",
        ),
        _ob(
            "eviction.lru.order.mark_evictable",
            f"appending at the most-recent end keeps the list in recency order ({n} blocks)",
            check_list_order,
            {"op": "mark_evictable", "blocks": n, "ops": lo},
            {"op": "mark_evictable", "blocks": n, "ops": replace(lo, append_at_mru_end=False)},
            "mark_evictable inserting at the least-recent end is refuted",
            f"N={n} blocks",
        ),
        _ob(
            "eviction.lru.order.remove",
            f"removing an entry keeps the list in recency order ({n} blocks)",
            check_list_order,
            {"op": "remove", "blocks": n, "ops": lo},
            {"op": "remove", "blocks": n, "ops": replace(lo, remove_shifts=False)},
            "a remove that swaps the last entry into the hole is refuted",
            f"N={n} blocks",
        ),
        _ob(
            "eviction.lru.order.touch",
            f"touch moves the entry to the most-recent end, keeping recency order ({n} blocks)",
            check_list_order,
            {"op": "touch", "blocks": n, "ops": lo},
            {"op": "touch", "blocks": n, "ops": replace(lo, touch_moves=False)},
            "a touch that refreshes the timestamp in place is refuted",
            f"N={n} blocks",
        ),
    ]

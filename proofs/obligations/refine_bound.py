"""`bound.*`: the eviction and slot encodings evaluated on concrete inputs against
the code, each with planted bugs.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import (
    Kind,
    Obligation,
    Outcome,
    Status,
    refuted,
)
from evictable.proofs.controls.encodings import (
    ARC_BUGS,
    LRU_EVICTION_BUGS,
    LRU_ORDER_BUGS,
    SLOT_BUGS,
)
from evictable.proofs.refine.bound import (
    check_arc,
    check_lru_eviction,
    check_lru_order,
    check_slots,
)

LIST_KEYS: dict[str, int] = {"quick": 3, "default": 4, "thorough": 5}
"""N, the longest evictable list, per level."""


SLOT_IDS: dict[str, int] = {"quick": 3, "default": 4, "thorough": 5}
"""N, the slot ids of the allocator, per level."""


ARC_WORLDS: dict[str, tuple[tuple[int, int], ...]] = {
    "quick": ((1, 3),),
    "default": ((1, 3), (2, 3)),
    "thorough": ((1, 3), (2, 4), (3, 4)),
}
"""(N, keys) of `bound.eviction.arc` (each event rebuilds an implementation policy, so
these are smaller than the model's `arc.bounded.*` worlds)."""


def _planted(check: Callable[[Any], Outcome], bugs: dict[str, Any]) -> Outcome:
    """Every planted bug must be caught (a counterexample); their texts, joined."""
    found = []
    for name, cls in bugs.items():
        out = check(cls)
        if out.status is not Status.COUNTEREXAMPLE:
            return Outcome(
                Status.PROVED if out.status is Status.PROVED else out.status,
                f"the planted bug '{name}' was not caught",
            )
        found.append(f"{name}: {out.counterexample}")
    return refuted("\n".join(found))


def _run(check: Callable[..., Outcome], *args: Any) -> Callable[[float], Outcome]:
    return lambda _t: check(*args)


def obligations(level: Level) -> list[Obligation]:
    """The encodings of `eviction.*` and `slots.*` bound to the code, at `level`'s N."""
    k, n, arcs = LIST_KEYS[level], SLOT_IDS[level], ARC_WORLDS[level]
    return [
        Obligation(
            "bound.eviction.lru",
            f"on every evictable list of <= {k} keys, protected set and n, the encoded "
            "eviction walk gives the model's and the implementation's victims and list",
            _run(check_lru_eviction, k),
            lambda _t: _planted(partial(check_lru_eviction, k), LRU_EVICTION_BUGS),
            "each bug of eviction.lru.*'s controls planted in the implementation is caught: "
            + ", ".join(LRU_EVICTION_BUGS),
            kind=Kind.EXPLORED,
            bounds=f"every list of <= {k} keys, every protected set, every n",
        ),
        Obligation(
            "bound.eviction.lru.order",
            f"on every list of <= {k} keys, the encoded mark_evictable, remove and touch "
            "leave the order the model and the implementation leave",
            _run(check_lru_order, k),
            lambda _t: _planted(partial(check_lru_order, k), LRU_ORDER_BUGS),
            "each bug of eviction.lru.order.*'s controls planted in the implementation is "
            "caught: " + ", ".join(LRU_ORDER_BUGS),
            kind=Kind.EXPLORED,
            bounds=f"every list of <= {k} keys, every position",
        ),
        Obligation(
            "bound.eviction.arc",
            "on every reachable ARC state and event, impl.policies.arc's step (eviction "
            "included) satisfies the per-key relations the Z3 ARC induction proves",
            _run(check_arc, arcs),
            lambda _t: _planted(partial(check_arc, arcs), ARC_BUGS),
            "each ARC bug planted in the implementation is caught: " + ", ".join(ARC_BUGS),
            kind=Kind.EXPLORED,
            bounds=", ".join(f"N={c}/{n} keys" for c, n in arcs),
        ),
        Obligation(
            "bound.slots",
            f"on every allocator state of {n} ids, the encoded alloc, free and reset leave "
            "the state impl.slots.SlotAllocator leaves, and a bulk take(count, released) -- "
            "the manager's path -- leaves what the encoding's frees and count allocations "
            "leave (handing out its ids and the model's)",
            _run(check_slots, n),
            lambda _t: _planted(partial(check_slots, n), SLOT_BUGS),
            "each bug of slots.*'s controls planted in the implementation is caught: "
            + ", ".join(SLOT_BUGS),
            kind=Kind.EXPLORED,
            bounds=f"every state of {n} slot ids, every step, bulk takes of every count "
            "after releasing up to 2 ids",
        ),
    ]

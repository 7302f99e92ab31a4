"""The worlds the tiering records explore, per verification level.

Each family is the smallest world that shows its bug classes (the world's bounds are
stated in its record): `scan` (the scheduler's path: scans, promotions, loads, stores,
cascades, finalisation; a prefix longer than the primary), `peer` (a serving tier in
front of a storage tier: peers' lookups served at steps and poll rounds, a reset with a
peer store awaiting its fetch), `faults` (a tier whose submit raises, that reports a job
it was never given or keys a promotion does not have, and a reset), `stale` (GPU
completions of work a reset cancelled, failed GPU stores), `async` (a tier answering
lookups through asynchronous probes). `quick` keeps one small world per family that
still catches every control; `thorough` adds larger ones.
"""

from __future__ import annotations

from evictable.model.tiering_types import TierSpec
from evictable.proofs.base.levels import Level
from evictable.proofs.explore.tiering_world import TieringBounds

__all__ = ["FAMILIES", "WORLDS"]

_SYNC = TierSpec("storage")
_PEER = TierSpec("peer", serving=True)
_ASYNC = TierSpec("storage", async_lookup=True)

_SCAN_ONE = TieringBounds(keys=2, slots=1, tiers=(_SYNC,), requests=(2,), copies=((0, 1),))
"""One request whose prefix (both keys, both in the tier) is longer than the primary."""
_SCAN_TWO = TieringBounds(keys=2, slots=1, tiers=(_SYNC,), requests=(2, 1), copies=((0, 1),))
"""The same, and a second request competing for the one slot."""
_SCAN_WIDE = TieringBounds(keys=2, slots=2, tiers=(_SYNC,), requests=(2, 1), copies=((0, 1),))
_SCAN_THREE = TieringBounds(keys=3, slots=2, tiers=(_SYNC,), requests=(3,), copies=((0, 1, 2),))

_PEER_EVICT = TieringBounds(
    keys=2,
    slots=1,
    tiers=(_PEER, _SYNC),
    requests=(),
    primary=1,
    copies=((), (0, 1)),
    peers=((0, 2), (0, 1)),
    resets=1,
    timeouts=1,
)
"""A key in the primary, both in the storage tier: a peer's lookup of both promotes one;
a parked lookup may reach its deadline."""
_PEER_RESET = TieringBounds(
    keys=2,
    slots=2,
    tiers=(_PEER, _SYNC),
    requests=(),
    primary=1,
    copies=((), (1,)),
    peers=((0, 2), (0, 1)),
    resets=1,
    timeouts=1,
)
"""Two slots: peers' stores await their fetch across a reset."""
_PEER_REQUEST = TieringBounds(
    keys=2, slots=1, tiers=(_PEER, _SYNC), requests=(1,), copies=((), (0, 1)), peers=((0, 2),)
)

_FAULT_SUBMIT = TieringBounds(keys=2, slots=1, tiers=(_SYNC,), requests=(1,), raises=1, resets=1)
_FAULT_REPORTS = TieringBounds(
    keys=2,
    slots=1,
    tiers=(_SYNC,),
    requests=(2,),
    copies=((0, 1),),
    strays=1,
    garbage=True,
    resets=1,
)
_FAULT_TWO = TieringBounds(
    keys=2, slots=2, tiers=(_SYNC,), requests=(1, 1), copies=((0, 1),), raises=1
)
"""Two requests' promotions flushed in one step, the second submit raising."""

_STALE = TieringBounds(
    keys=2,
    slots=1,
    tiers=(_SYNC,),
    requests=(1, 1),
    resets=1,
    stale=True,
    store_failures=True,
)
_STALE_ONE = TieringBounds(keys=1, slots=1, tiers=(_SYNC,), requests=(1, 1), resets=1, stale=True)
"""Two requests storing the one key across a reset, its cancelled completions still
coming."""

_ASYNC_TWO = TieringBounds(keys=2, slots=1, tiers=(_ASYNC,), requests=(2, 1), copies=((0, 1),))
_ASYNC_ONE = TieringBounds(keys=2, slots=1, tiers=(_ASYNC,), requests=(2,), copies=((0, 1),))

FAMILIES: tuple[str, ...] = ("scan", "peer", "faults", "stale", "async")

WORLDS: dict[Level, dict[str, tuple[TieringBounds, ...]]] = {
    "quick": {
        "scan": (_SCAN_ONE,),
        "peer": (_PEER_EVICT,),
        "faults": (_FAULT_SUBMIT,),
        "stale": (_STALE_ONE,),
        "async": (_ASYNC_ONE,),
    },
    "default": {
        "scan": (_SCAN_TWO,),
        "peer": (_PEER_EVICT, _PEER_RESET),
        "faults": (_FAULT_SUBMIT, _FAULT_REPORTS),
        "stale": (_STALE,),
        "async": (_ASYNC_TWO,),
    },
    "thorough": {
        "scan": (_SCAN_TWO, _SCAN_WIDE, _SCAN_THREE),
        "peer": (_PEER_EVICT, _PEER_RESET, _PEER_REQUEST),
        "faults": (_FAULT_SUBMIT, _FAULT_REPORTS, _FAULT_TWO),
        "stale": (_STALE,),
        "async": (_ASYNC_TWO,),
    },
}
"""Per level and family, the worlds searched in turn."""

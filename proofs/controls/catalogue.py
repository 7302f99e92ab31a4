"""The whole catalogue of seeded bugs, each tagged with what it breaks and why it is here.

Every deliberately broken variant of `proofs.controls` as one `SeededBug` record:
CPU managers and policies (`manager`, `policies`), free queues and block pools
(`gpu`), lazy offload scanners (`scanners`). `klass` says which kind of miss each
stands for (`CLASSES`): the engines must catch every one of them (`hunt`).
"""

from __future__ import annotations

from evictable.proofs.controls.bug import SeededBug
from evictable.proofs.controls.gpu import SEEDED_POOLS, SEEDED_QUEUES
from evictable.proofs.controls.manager import MANAGER_BUGS
from evictable.proofs.controls.policies import ARC_BUGS, POLICY_BUGS
from evictable.proofs.controls.scanners import MACHINE_SCANNERS, SEEDED_SCANNERS

__all__ = ["CATALOGUE", "CLASSES", "by_name"]

CLASSES: dict[str, str] = {
    "baseline": "the bugs seeded before (lifecycle, atomicity, slots, counters, LRU, ARC, GPU)",
    "observation": "no verdict before: a corrupted intrusive list, or a call that never returns",
    "alphabet": "inputs the alphabets rarely made: READY/LOADING keys in a commit, "
    "copies and pickles, counts, constructors",
    "faults": "a fault after a hook changed the policy, or in clear",
    "lazy": "the lazy scanner: an abort edge, a window of two, a capacity of zero",
    "iterators": "a mutating queue call of each kind while an iterator is live",
    "bounds": "victim order, visible only when one call evicts several blocks",
    "arc": "ARC depth: both ghost lists filled early, long runs (heap compaction)",
    "orders": "ARC's idle index with five blocks going idle out of order, a protected key "
    "or a refused eviction (the ARC orders family)",
    "targets": "ARC with a fractional target: ghost hits of both kinds on ghost lists of "
    "two and three keys (the ARC targets family, three slots)",
    "machine": "what only the lazy lock-step machine's inputs reach: a query, malformed "
    "batches, bad constructor arguments",
    "errors": "an error of the right type whose attributes are wrong",
    "counts": "a negative count refused with the wrong error",
}
"""The kinds of miss the catalogue covers, by name."""

_GPU_CLASSES: dict[str, str] = {
    "prepend_trusts_own_blocks": "observation",
    "prepend_keeps_iterators_alive": "iterators",
    "count_error_swaps_arguments": "errors",
    "negative_count_is_insufficient": "counts",
    "constructor_links_unchecked": "alphabet",
    "num_free_counts_null": "alphabet",
    "size_coerced_with_int": "alphabet",
    "abort_records_offloaded": "lazy",
    "cursor_on_first_kept": "lazy",
    "zero_capacity_unlimited": "lazy",
    "wrap_around_scan": "observation",
    "offloaded_inverted": "machine",
    "complete_unchecked": "machine",
    "abort_unchecked": "machine",
    "capacity_unchecked": "machine",
}


def _doc(obj: object) -> str:
    return " ".join((getattr(obj, "__doc__", None) or "").split())


CATALOGUE: tuple[SeededBug, ...] = (
    *MANAGER_BUGS,
    *POLICY_BUGS,
    *ARC_BUGS,
    *(
        SeededBug(name, _doc(f), f, target="queue", klass=_GPU_CLASSES.get(name, "baseline"))
        for name, f in SEEDED_QUEUES.items()
    ),
    *(
        SeededBug(name, _doc(f), f, target="pool", klass=_GPU_CLASSES.get(name, "baseline"))
        for name, f in SEEDED_POOLS.items()
    ),
    *(
        SeededBug(name, _doc(f), f, target="scanner", klass=_GPU_CLASSES.get(name, "baseline"))
        for name, f in {**SEEDED_SCANNERS, **MACHINE_SCANNERS}.items()
    ),
)
"""Every seeded bug, CPU side first."""


def by_name(name: str) -> SeededBug:
    """The catalogue's bug called `name` (`KeyError` if there is none)."""
    for bug in CATALOGUE:
        if bug.name == name:
            return bug
    raise KeyError(name)

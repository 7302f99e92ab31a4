"""The managers the benchmarks compare, by name, and why any of them is missing.

* `impl-lru`, `impl-arc` -- `impl.manager.CPUOffloadingManager` (arc only when the
  policy is registered in `impl.policies.factory`);
* `model-lru` -- `model.manager.ModelManager`: the executable specification's own cost;
* `naive` -- `bench.naive.NaiveLruManager`: scans every block for ref_cnt 0 on eviction;
* `skeleton` -- `bench.skeleton.SkeletonManager`: a bare dict and OrderedDict, no checks;
* `skeleton-split` -- the same with idle blocks only in the OrderedDict (a layout study);
* `dict-floor` -- `bench.skeleton.DictFloorManager`: only the dict work the trace forces on
  any manager (absent lookups, victim deletes, inserts): the memory floor, not a manager.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.naive import NaiveLruManager
from bench.skeleton import DictFloorManager, SkeletonManager, SplitSkeletonManager
from bench.workloads import Manager

__all__ = ["IMPL", "Factory", "available"]

Factory = Callable[[int], Manager]

IMPL = "impl-lru"
"""The contender every ratio is taken of."""


def available() -> tuple[dict[str, Factory], dict[str, str]]:
    """Factories of the contenders that can be built here, and a reason for each one that can't."""
    factories: dict[str, Factory] = {}
    missing: dict[str, str] = {}
    try:
        from evictable.impl.manager import CPUOffloadingManager
    except ImportError as exc:
        missing[IMPL] = f"impl.manager not importable: {exc}"
    else:
        factories[IMPL] = lambda n: CPUOffloadingManager(n, "lru")
        try:
            from evictable.impl.policies.factory import known_policies

            if "arc" in known_policies():
                factories["impl-arc"] = lambda n: CPUOffloadingManager(n, "arc")
            else:
                missing["impl-arc"] = "policy 'arc' is not registered in impl.policies.factory"
        except ImportError as exc:
            missing["impl-arc"] = f"impl.policies.factory not importable: {exc}"
    try:
        from evictable.model.manager import ModelManager
    except ImportError as exc:
        missing["model-lru"] = f"model.manager not importable: {exc}"
    else:
        factories["model-lru"] = lambda n: ModelManager(n, "lru")
    factories["naive"] = NaiveLruManager
    factories["skeleton"] = SkeletonManager
    factories["skeleton-split"] = SplitSkeletonManager
    factories["dict-floor"] = DictFloorManager
    return factories, missing

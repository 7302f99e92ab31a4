"""Which groups of obligations `evictable verify` runs, in order.

Each group is a module exposing `obligations(level) -> list[Obligation]`, where
`level` is "quick", "default" or "thorough" (bounds and example counts grow with
it). Z3 proofs, the explorer and the conformance runs are all obligations, so one
runner and one report cover them.
"""

from __future__ import annotations

import importlib
from dataclasses import replace

from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation
from evictable.proofs.z3.solver import evidenced

__all__ = ["GROUPS", "collect", "load_group"]

GROUPS: tuple[str, ...] = (
    "evictable.proofs.obligations.z3_lifecycle",
    "evictable.proofs.obligations.z3_enabledness",
    "evictable.proofs.obligations.z3_manager",
    "evictable.proofs.obligations.z3_bmc",
    "evictable.proofs.obligations.z3_policy",
    "evictable.proofs.obligations.refine_bridges",
    "evictable.proofs.obligations.refine_manager",
    "evictable.proofs.obligations.z3_eviction",
    "evictable.proofs.obligations.refine_bound",
    "evictable.proofs.obligations.explore_manager",
    "evictable.proofs.obligations.explore_coverage",
    "evictable.proofs.obligations.lockstep_conformance",
    "evictable.proofs.obligations.lockstep_long_run",
    "evictable.proofs.obligations.z3_arc",
    "evictable.proofs.obligations.explore_arc",
    "evictable.proofs.obligations.lockstep_arc_orders",
    "evictable.proofs.obligations.lockstep_arc_targets",
    "evictable.proofs.obligations.z3_free_queue",
    "evictable.proofs.obligations.lockstep_gpu_machines",
    "evictable.proofs.obligations.explore_gpu",
    "evictable.proofs.obligations.explore_lazy_cursor",
    "evictable.proofs.obligations.explore_lazy_fixed",
    "evictable.proofs.obligations.z3_tiering",
    "evictable.proofs.obligations.explore_tiering",
    "evictable.proofs.obligations.lockstep_probes",
    "evictable.proofs.obligations.lockstep_queue_probes",
    "evictable.proofs.obligations.lockstep_policy_probe",
)


def load_group(mod_name: str, level: Level) -> list[Obligation]:
    """The obligations of one group module at `level` (import errors propagate). The
    check of every proof record (kind `unbounded` or `bounded`) is `evidenced`: it
    may print `proved` only when a Z3 query decided it."""
    mod = importlib.import_module(mod_name)
    return [
        replace(ob, check=evidenced(ob.check)) if ob.kind in _PROOFS else ob
        for ob in mod.obligations(level)
    ]


_PROOFS = (Kind.UNBOUNDED, Kind.BOUNDED)


def collect(level: Level, groups: tuple[str, ...] = GROUPS) -> list[Obligation]:
    """Every obligation of every group, in group order."""
    return [ob for mod_name in groups for ob in load_group(mod_name, level)]

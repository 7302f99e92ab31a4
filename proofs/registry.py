"""Which groups of obligations `evictable verify` runs, in order.

Each group is a module exposing `obligations(level) -> list[Obligation]`, where
`level` is "quick", "default" or "thorough" (bounds and example counts grow with
it). Z3 proofs, the explorer and the conformance runs are all obligations, so one
runner and one report cover them.
"""

from __future__ import annotations

import importlib

from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Obligation

__all__ = ["GROUPS", "collect", "load_group"]

GROUPS: tuple[str, ...] = (
    "evictable.proofs.z3.lifecycle",
    "evictable.proofs.z3.enabledness",
    "evictable.proofs.z3.manager",
    "evictable.proofs.z3.bmc",
    "evictable.proofs.z3.bridges",
    "evictable.proofs.z3.counters",
    "evictable.proofs.z3.eviction",
    "evictable.proofs.z3.bound",
    "evictable.proofs.explore.manager",
    "evictable.proofs.explore.coverage",
    "evictable.proofs.lockstep.conformance",
    "evictable.proofs.lockstep.long_run",
    "evictable.proofs.z3.arc",
    "evictable.proofs.explore.arc",
    "evictable.proofs.z3.free_queue",
    "evictable.proofs.lockstep.gpu_machines",
    "evictable.proofs.explore.gpu",
    "evictable.proofs.explore.lazy_cursor",
    "evictable.proofs.explore.lazy_fixed",
    "evictable.proofs.lockstep.own_table",
    "evictable.proofs.lockstep.probes",
    "evictable.proofs.lockstep.queue_probes",
    "evictable.proofs.lockstep.policy_probe",
)


def load_group(mod_name: str, level: Level) -> list[Obligation]:
    """The obligations of one group module at `level` (import errors propagate)."""
    mod = importlib.import_module(mod_name)
    return list(mod.obligations(level))


def collect(level: Level, groups: tuple[str, ...] = GROUPS) -> list[Obligation]:
    """Every obligation of every group, in group order."""
    return [ob for mod_name in groups for ob in load_group(mod_name, level)]

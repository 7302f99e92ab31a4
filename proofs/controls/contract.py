"""Broken managers and registries for the probes and the no-shared-table engines
(`lockstep.probes`, `base.own_table`): each gets one check of the generic path wrong.

Each is the implementation itself with one edit (`controls.mutant`), or a wrapper
of it through its public interface.
"""

from __future__ import annotations

from typing import Any

from evictable.impl.manager import CPUOffloadingManager
from evictable.model.validate import check_enable_events, check_num_blocks
from evictable.proofs.base.own_table import own_table_name
from evictable.proofs.controls.mutant import Edit, lines, mutant

__all__ = [
    "OwnTableKeepsAborted",
    "TrustsPolicyVictims",
    "UncheckedRegistry",
    "events_checked_first",
    "register_unchecked",
]

TrustsPolicyVictims = mutant(
    "evictable.impl.manager",
    "CPUOffloadingManager",
    Edit(
        "CPUOffloadingManager.prepare_store",
        lines("victims = self._accept(answer, need, protected)", 20),
        lines("victims = answer  # BUG: no contract check", 20),
    ),
    name="TrustsPolicyVictims",
    doc="Takes whatever a pluggable policy's `evict` returns as its victims, unchecked.",
)


def events_checked_first(
    num_blocks: object, policy: object = "lru", enable_events: object = False
) -> CPUOffloadingManager:
    """A constructor that checks `enable_events` before the policy name: a call with
    both wrong names the wrong argument."""
    check_num_blocks(num_blocks)
    check_enable_events(enable_events)  # BUG: before the policy name
    return CPUOffloadingManager(num_blocks, policy, enable_events)


_KeepsAborted = mutant(
    "evictable.impl.manager",
    "CPUOffloadingManager",
    Edit(
        "CPUOffloadingManager.complete_store",
        lines(
            """
            if self._own_table:
                for key in acted:
                    del blocks[key]
        """,
            12,
        ),
        lines("# BUG: the keys stay filed in the manager's own table", 12),
    ),
    name="_KeepsAborted",
    doc="A failed store leaves its keys in the manager's own key table.",
)


def OwnTableKeepsAborted(num_blocks: int, policy: str = "lru", enable_events: bool = False) -> Any:
    """With a policy that shares no table, a failed store leaves its keys in the
    manager's own table (the shared-table path needs no such deletion, so only the
    generic path has the bug)."""
    return _KeepsAborted(num_blocks, own_table_name(policy), enable_events)


UncheckedRegistry = mutant(
    "evictable.impl.policies.factory",
    "PolicyRegistry",
    Edit(
        "PolicyRegistry.register",
        lines("""
            _check_entry(name, cls)
            table = self._registrations()
            current = table.get(name)
            if current is not None and current is not cls:
                raise InvalidArgumentError(
                    f"policy name {name!r} is already registered to {current.__name__}"
                )
        """),
        lines("table = self._registrations()  # BUG: nothing checked"),
    ),
    name="UncheckedRegistry",
    doc="A policy registry whose `register` takes any name and any class, unchecked.",
)


def register_unchecked() -> Any:
    """A fresh policy registry whose `register` checks nothing: any name, any class
    (for `lockstep.probes.registry_probe`)."""
    return UncheckedRegistry()

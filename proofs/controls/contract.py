"""Broken managers for the probes and the no-shared-table engines (`lockstep.probes`,
`base.own_table`): each gets one check of the manager's generic path wrong."""

from __future__ import annotations

from collections.abc import Sequence, Set
from typing import Any

from evictable.impl.block import BlockStatus
from evictable.impl.manager import CPUOffloadingManager
from evictable.model.types import Key
from evictable.model.validate import check_enable_events, check_num_blocks
from evictable.proofs.base.own_table import own_table_name

__all__ = [
    "OwnTableKeepsAborted",
    "TrustsPolicyVictims",
    "events_checked_first",
    "register_unchecked",
]


class TrustsPolicyVictims(CPUOffloadingManager):
    """Takes whatever a pluggable policy's `evict` returns as its victims, unchecked."""

    __slots__ = ()

    def _accept(
        self, chosen: object, need: int, protected: Set[Key]
    ) -> list[tuple[Key, BlockStatus]]:
        return chosen  # type: ignore[return-value]  # BUG: no contract check


def events_checked_first(
    num_blocks: object, policy: object = "lru", enable_events: object = False
) -> CPUOffloadingManager:
    """A constructor that checks `enable_events` before the policy name: a call with
    both wrong names the wrong argument."""
    check_num_blocks(num_blocks)
    check_enable_events(enable_events)  # BUG: before the policy name
    return CPUOffloadingManager(num_blocks, policy, enable_events)  # type: ignore[arg-type]


class _KeepsAborted(CPUOffloadingManager):
    __slots__ = ()

    def complete_store(self, keys: Sequence[Key], success: bool = True) -> list[Key]:
        kept = {k: b for k in keys if (b := self._blocks.get(k)) is not None and b.ref_cnt < 0}
        acted = super().complete_store(keys, success)
        if not success and self._own_table:
            self._blocks.update((k, kept[k]) for k in acted)  # BUG: the keys stay filed
        return acted


def OwnTableKeepsAborted(num_blocks: int, policy: str = "lru", enable_events: bool = False) -> Any:
    """With a policy that shares no table, a failed store leaves its keys in the
    manager's own table (the shared-table path needs no such deletion, so only the
    generic path has the bug)."""
    return _KeepsAborted(num_blocks, own_table_name(policy), enable_events)


def register_unchecked(name: Any, cls: Any) -> None:
    """`register_policy` without its checks: any name, any class."""
    from evictable.impl.policies import factory

    factory._registered[name] = cls  # BUG: nothing checked

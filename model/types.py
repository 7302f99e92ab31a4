"""Result and snapshot types shared by the model and the implementation.

All are frozen (immutable, comparable), so that a conformance check can compare
a model result with an implementation result, or two snapshots, with `==`.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import NewType

from evictable.model.lifecycle import CpuState

__all__ = [
    "ArcPolicySnapshot",
    "BlockEntry",
    "BlockId",
    "Key",
    "LookupResult",
    "LruPolicySnapshot",
    "ManagerSnapshot",
    "OffloadingEvent",
    "OpaquePolicySnapshot",
    "PolicySnapshot",
    "PrepareStoreOutput",
    "SlotId",
    "evictable_view",
]

Key = Hashable
"""A CPU block key: any hashable value (vLLM uses `bytes` block hashes)."""

SlotId = NewType("SlotId", int)
"""A CPU slot index in `[0, num_blocks)`."""

BlockId = NewType("BlockId", int)
"""A GPU block id in `[0, num_gpu_blocks)`; 0 is the null block."""


class LookupResult(enum.Enum):
    """What `lookup(key)` reports."""

    MISS = "miss"  # ABSENT
    HIT_PENDING = "hit_pending"  # PENDING: resident but not yet readable
    HIT = "hit"  # READY or LOADING


@dataclass(frozen=True)
class PrepareStoreOutput:
    """The answer of `prepare_store`: which keys to store, where, and who was evicted."""

    keys_to_store: list[Key] = field(default_factory=list)
    slot_ids: list[int] = field(default_factory=list)
    evicted_keys: list[Key] = field(default_factory=list)


@dataclass(frozen=True)
class OffloadingEvent:
    """Keys that became stored (`removed=False`) or were evicted (`removed=True`).

    `metadata_only` marks vLLM 0.33's notice that failed stores released their keys
    (the `vllm-0.33` profile); the seed profile never emits one.
    """

    keys: tuple[Key, ...]
    removed: bool
    metadata_only: bool = False


@dataclass(frozen=True)
class BlockEntry:
    """One resident block as seen in a snapshot."""

    key: Key
    state: CpuState
    ref_cnt: int
    slot: int


@dataclass(frozen=True)
class LruPolicySnapshot:
    """LRU: the evictable list, least recent first."""

    evictable: tuple[Key, ...]


@dataclass(frozen=True)
class ArcPolicySnapshot:
    """ARC: the four lists, least recent first, the adaptive target, and the keys the
    policy holds as evictable (its idle view, kept by `mark_evictable` /
    `mark_non_evictable`; None when an adapter cannot report it)."""

    t1: tuple[Key, ...]
    t2: tuple[Key, ...]
    b1: tuple[Key, ...]
    b2: tuple[Key, ...]
    target: float
    evictable: frozenset[Key] | None = None


@dataclass(frozen=True)
class OpaquePolicySnapshot:
    """A third-party policy's state, as whatever comparable value it reports."""

    name: str
    state: Hashable


PolicySnapshot = LruPolicySnapshot | ArcPolicySnapshot | OpaquePolicySnapshot


def evictable_view(policy: PolicySnapshot) -> frozenset[Key] | None:
    """The keys a policy snapshot holds as evictable (LRU: its list; ARC: its idle
    view), or None when the snapshot does not say (an opaque policy)."""
    if isinstance(policy, LruPolicySnapshot):
        return frozenset(policy.evictable)
    if isinstance(policy, ArcPolicySnapshot):
        return policy.evictable
    return None


@dataclass(frozen=True)
class ManagerSnapshot:
    """Everything observable about a manager, identical in shape for model and impl.

    `blocks` holds one entry per resident key (a set: keys need not be orderable);
    `free_stack` lists freed slot ids bottom to top (the next reuse is the last);
    `high_water` is the number of slot ids ever handed out (fresh ids start there).
    """

    num_blocks: int
    blocks: frozenset[BlockEntry]
    free_stack: tuple[int, ...]
    high_water: int
    num_evictable: int
    num_pending: int
    pending_events: tuple[OffloadingEvent, ...]
    policy: PolicySnapshot

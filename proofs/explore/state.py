"""State encoding for the explorer: a manager snapshot as a hashable tuple.

The explorer never restates a manager rule. Transitions are made by the real
`model.manager.ModelManager`; this module only turns the resulting
`ManagerSnapshot` (the manager's whole observable state, docs/semantics.md, "snapshot") into a
compact tuple used as the key of the visited set.

**Canonical form (key-renaming symmetry).** The manager treats keys as opaque
identities: renaming keys bijectively maps every run to a run. Two states that
differ only by such a renaming are therefore explored once. The canonical form
relabels every key the state mentions by its first appearance in a traversal that
never looks at key values:

1. resident blocks in ascending slot order (slots of resident blocks are distinct,
   so this order is total and itself name-free);
2. then the policy's lists in order (LRU: the evictable list; ARC: T1, T2, B1, B2,
   which adds the ghost keys);
3. then the keys of the pending events, oldest first.

Every structure that depends on order (LRU order, ARC lists, free stack, events)
is kept as is, with labels in place of keys, and slot ids are kept: only names are
forgotten. Two states get the same canonical form exactly when one is a renaming
of the other. (The implementation is then checked on one representative per
class: an implementation that looks at key values is fully covered only without
canonicalisation.) A third-party `OpaquePolicySnapshot` may hide keys in its state, so
for it the canonical form falls back to the plain encoding (no reduction).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from evictable.model.lifecycle import CpuState
from evictable.model.types import (
    ArcPolicySnapshot,
    BlockEntry,
    Key,
    LruPolicySnapshot,
    ManagerSnapshot,
)

__all__ = ["Code", "encode", "mentioned_keys"]

Code = tuple[Any, ...]
"""An encoded state: hashable, comparable, cheap to pickle."""

_STATE_CODE: dict[CpuState, int] = {s: i for i, s in enumerate(CpuState)}


def _slot_of(entry: BlockEntry) -> int:
    return entry.slot


def _key_order(snap: ManagerSnapshot, residents: list[BlockEntry]) -> list[Key]:
    """Every key the state mentions, in canonical traversal order (see module doc)."""
    order: list[Key] = [e.key for e in residents]
    seen: set[Key] = set(order)
    pol = snap.policy
    lists: tuple[tuple[Key, ...], ...] = ()
    if isinstance(pol, LruPolicySnapshot):
        lists = (pol.evictable,)
    elif isinstance(pol, ArcPolicySnapshot):
        lists = (pol.t1, pol.t2, pol.b1, pol.b2)
    for lst in lists:
        for k in lst:
            if k not in seen:
                seen.add(k)
                order.append(k)
    for ev in snap.pending_events:
        for k in ev.keys:
            if k not in seen:
                seen.add(k)
                order.append(k)
    return order


def mentioned_keys(snap: ManagerSnapshot) -> list[Key]:
    """The keys a state mentions (residents, policy lists, pending events)."""
    return _key_order(snap, sorted(snap.blocks, key=_slot_of))


def _policy_code(snap: ManagerSnapshot, label: dict[Key, Hashable]) -> Hashable:
    pol = snap.policy
    if isinstance(pol, LruPolicySnapshot):
        return tuple(label[k] for k in pol.evictable)
    if isinstance(pol, ArcPolicySnapshot):
        return (
            tuple(label[k] for k in pol.t1),
            tuple(label[k] for k in pol.t2),
            tuple(label[k] for k in pol.b1),
            tuple(label[k] for k in pol.b2),
            pol.target,
        )
    return (pol.name, pol.state)


def encode(snap: ManagerSnapshot, canonical: bool) -> tuple[Code, list[Key]]:
    """The state's code and the keys it mentions (in canonical traversal order).

    With `canonical`, keys are replaced by their traversal position; otherwise the
    keys themselves are kept (and the code distinguishes renamed states).
    """
    residents = sorted(snap.blocks, key=_slot_of)
    order = _key_order(snap, residents)
    relabel = canonical and isinstance(snap.policy, (LruPolicySnapshot, ArcPolicySnapshot))
    label: dict[Key, Hashable] = (
        {k: i for i, k in enumerate(order)} if relabel else {k: k for k in order}
    )
    blocks = tuple((e.slot, label[e.key], _STATE_CODE[e.state], e.ref_cnt) for e in residents)
    events = tuple((tuple(label[k] for k in ev.keys), ev.removed) for ev in snap.pending_events)
    code: Code = (
        blocks,
        snap.free_stack,
        snap.high_water,
        snap.num_evictable,
        snap.num_pending,
        events,
        _policy_code(snap, label),
    )
    return code, order

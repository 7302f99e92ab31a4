"""Deliberately broken hook relations: the negative controls of `policy.lru.*` and
`policy.arc.*`.

Each is `proofs.z3.policy_lru.LruHooks` (or `policy_arc.ArcHooks`) with one hook
relation broken, restated from
a seeded implementation bug where there is one (`controls.policies`): the
semantics' hooks stay in `proofs.z3.policy_lru`, the broken copies live here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import z3

from evictable.proofs.z3.arc import b1_hit_term, b2_hit_term
from evictable.proofs.z3.policy_arc import ARC_HOOKS, ArcHooks, ArcState
from evictable.proofs.z3.policy_lru import LRU_HOOKS, LruHooks, LruState

__all__ = ["ARC_CONTROLS", "BREAKS", "LRU_CONTROLS"]

Term = Any


def _stays(p: LruState, key: Term, when: Term) -> LruState:
    """A hook that forgets to change the list."""
    del key, when
    return p


_lists = LRU_HOOKS.became_evictable
"""A hook that puts the key in the list at the most-recent end: the semantics' own
`became_evictable`, put where another hook belongs."""


def _joins_least_recent(p: LruState, key: Term, when: Term) -> LruState:
    """`became_evictable` at the least-recent end (a stamp below every other)."""
    return LruState(
        p.listed.set(key, z3.BoolVal(True), when),
        p.stamp.set(key, -p.clock, when),
        p.clock + z3.If(when, 1, 0),
    )


def _forward_touch(p: LruState, keys: list[tuple[Term, Term]]) -> LruState:
    """`ForwardTouch`: the keys walked first to last (the last ends most recent)."""
    for key, moved in keys:
        p = _lists(p, key, z3.And(moved, p.listed(key)))
    return p


def _touch_moves_pinned(p: LruState, keys: list[tuple[Term, Term]]) -> LruState:
    """`TouchMovesPinned`: every resident key touched moves in, listed or not."""
    for key, moved in reversed(keys):
        p = _lists(p, key, moved)
    return p


LRU_CONTROLS: dict[str, list[tuple[str, LruHooks]]] = {
    "prepare_store": [
        ("evict leaves its victims in the list", replace(LRU_HOOKS, evict=_stays)),
        (
            "victims chosen most recent first (VictimsMostRecentFirst's order)",
            replace(LRU_HOOKS, oldest_first=False),
        ),
    ],
    "complete_store.success": [
        ("became_evictable lists nothing", replace(LRU_HOOKS, became_evictable=_stays)),
        (
            "became_evictable joins at the least-recent end",
            replace(LRU_HOOKS, became_evictable=_joins_least_recent),
        ),
    ],
    "complete_store.failure": [
        ("aborted lists the failed key", replace(LRU_HOOKS, aborted=_lists)),
    ],
    "prepare_load": [
        ("became_pinned leaves the key listed", replace(LRU_HOOKS, became_pinned=_stays)),
    ],
    "complete_load": [
        ("became_evictable lists nothing", replace(LRU_HOOKS, became_evictable=_stays)),
        (
            "became_evictable joins at the least-recent end",
            replace(LRU_HOOKS, became_evictable=_joins_least_recent),
        ),
    ],
    "touch": [
        ("touch walks first to last (ForwardTouch)", replace(LRU_HOOKS, touch=_forward_touch)),
        (
            "touch lists pinned and pending keys (TouchMovesPinned)",
            replace(LRU_HOOKS, touch=_touch_moves_pinned),
        ),
    ],
    "reset_cache": [("clear keeps the list", replace(LRU_HOOKS, clears=False))],
}
"""Per operation, the broken hook relations its record's control must refute."""


def _arc_stays(p: ArcState, key: Term, when: Term) -> ArcState:
    """A hook that forgets to change anything (`PinnedStaysIdle` for became_pinned)."""
    del key, when
    return p


def _arc_abort_keeps(p: ArcState, key: Term, when: Term) -> ArcState:
    """`aborted` that leaves the key in T1 (only the idle view forgets it)."""
    return replace(p, idle=p.idle.set(key, z3.BoolVal(False), when))


def _insert_keeps_clock(p: ArcState, key: Term, when: Term) -> ArcState:
    """`stored` that stamps the key with the resident clock but does not advance it."""
    stored = ARC_HOOKS.stored(p, key, when)
    return replace(stored, rclock=p.rclock)


def _b2_hit_unfloored(target: Term, b1: Term, b2: Term) -> Term:
    """A B2 hit that subtracts without the floor at 0 (the target can go negative)."""
    return b2_hit_term(target, b1, b2, floored=False)


def _b2_hit_grows(target: Term, b1: Term, b2: Term) -> Term:
    """`B2HitGrowsTarget`: a B2 hit adds instead of subtracting (no cap either)."""
    return b1_hit_term(target, b2, b1, 0, capped=False)


ARC_CONTROLS: dict[str, list[tuple[str, ArcHooks]]] = {
    "prepare_store": [
        ("B1 never trimmed", replace(ARC_HOOKS, trims=frozenset({"b2"}))),
        ("B2 never trimmed", replace(ARC_HOOKS, trims=frozenset({"b1"}))),
        (
            "stored does not advance the resident clock",
            replace(ARC_HOOKS, stored=_insert_keeps_clock),
        ),
    ],
    "complete_store.success": [
        ("became_evictable leaves the idle view", replace(ARC_HOOKS, became_evictable=_arc_stays)),
    ],
    "complete_store.failure": [
        ("aborted leaves the key in T1", replace(ARC_HOOKS, aborted=_arc_abort_keeps)),
    ],
    "prepare_load": [
        (
            "became_pinned leaves the key idle (PinnedStaysIdle)",
            replace(ARC_HOOKS, became_pinned=_arc_stays),
        ),
    ],
    "complete_load": [
        ("became_evictable leaves the idle view", replace(ARC_HOOKS, became_evictable=_arc_stays)),
    ],
    "touch": [
        ("a B2 hit grows the target (B2HitGrowsTarget)", replace(ARC_HOOKS, b2_hit=_b2_hit_grows)),
        ("a B2 hit below 0 (no floor)", replace(ARC_HOOKS, b2_hit=_b2_hit_unfloored)),
        ("a touch leaves the key's place in its list", replace(ARC_HOOKS, touch_reorders=False)),
    ],
    "reset_cache": [("clear keeps the idle view", replace(ARC_HOOKS, clears_idle=False))],
}
"""Per operation, the broken ARC hook relations its record's control must refute."""


_LIST = ("lru_list_is_the_evictable_set",)
_IDLE = ("arc_idle_is_the_evictable_set",)
BREAKS: dict[str, tuple[str, ...]] = {
    "evict leaves its victims in the list": _LIST,
    "victims chosen most recent first (VictimsMostRecentFirst's order)": (
        "victims_least_recent_first",
        "victims_are_the_least_recent",
    ),
    "became_evictable lists nothing": _LIST,
    "became_evictable joins at the least-recent end": ("joined",),
    "aborted lists the failed key": _LIST,
    "became_pinned leaves the key listed": _LIST,
    "touch walks first to last (ForwardTouch)": ("touch_first_key_most_recent",),
    "touch lists pinned and pending keys (TouchMovesPinned)": _LIST,
    "clear keeps the list": _LIST,
    "B1 never trimmed": ("arc_ghosts_bounded",),
    "B2 never trimmed": ("arc_ghosts_bounded",),
    "stored does not advance the resident clock": (
        "arc_resident_stamps_below_clock",
        "arc_resident_stamps_distinct",
    ),
    "became_evictable leaves the idle view": _IDLE,
    "aborted leaves the key in T1": ("arc_t1_t2_partition_residents",),
    "became_pinned leaves the key idle (PinnedStaysIdle)": _IDLE,
    "a B2 hit grows the target (B2HitGrowsTarget)": ("arc_target_within_0_capacity",),
    "a B2 hit below 0 (no floor)": ("arc_target_within_0_capacity",),
    "a touch leaves the key's place in its list": ("arc_touched_first_most_recent",),
    "clear keeps the idle view": _IDLE,
}
"""Per control (by its text): the claims it is built to break. Its record refutes it
only on one of them (`records.targeted`): a control that fails on another clause says
nothing of the claim it stands for."""

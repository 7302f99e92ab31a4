"""The bugs the eviction and slot encodings' negative controls describe, planted in code.

`proofs/z3/eviction.py` and `proofs/z3/slots.py` refute broken *encodings* (an
eviction that ignores protection, an allocator that does not advance the high-water
mark, ...). The obligations of `proofs.refine.bound` evaluate those encodings on
concrete inputs against the implementation itself; their negative controls are
these implementations with exactly those bugs, which must be caught.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import replace
from typing import Any

from evictable.impl.block import BlockStatus
from evictable.impl.policies.arc import ARCCachePolicy
from evictable.impl.policies.lru import LRUCachePolicy, unlink
from evictable.impl.slots import SlotAllocator
from evictable.model.lifecycle import CpuEvent, CpuState, Hook, Machine
from evictable.model.types import Key
from evictable.proofs.controls.mutant import Edit, lines, mutant
from evictable.proofs.controls.policies import (
    EvictionIgnoresProtected,
    LruSkipsToNewest,
    TouchPromotesPending,
)
from evictable.proofs.controls.tables import overriding
from evictable.proofs.z3.counter_rules import CallCounts, CounterRule, counters_after
from evictable.proofs.z3.lifecycle import row_index
from evictable.proofs.z3.manager_ops import (
    Variant,
)

__all__ = [
    "ARC_BUGS",
    "COUNTER_UPDATES",
    "LRU_EVICTION_BUGS",
    "LRU_ORDER_BUGS",
    "SLOT_BUGS",
    "ArcEvictsPinned",
    "LruEvictsMostRecent",
    "LruLinksAtLeastRecentEnd",
    "LruRemoveSwapsLast",
    "LruSkipsToNewest",
    "LruTouchInPlace",
    "SlotsBulkReuseOldestFirst",
    "SlotsFifoReuse",
    "SlotsFreeForgets",
    "SlotsNoHighWaterBump",
    "SlotsResetKeepsStack",
    "consecution_controls",
    "forgetting",
    "hook_dropped",
    "hook_misclassed_drop",
    "more_consecution_controls",
]

LRU = "evictable.impl.policies.lru"
"""The module the LRU bugs that need its internals are compiled from (`controls.mutant`)."""


class LruEvictsMostRecent(LRUCachePolicy):
    """`evict` walks the evictable list from the most-recent end."""

    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:  # type: ignore[override]
        chosen = [b for b in reversed(list(self.listed())) if b.key not in protected][:n]
        if len(chosen) < n:
            return None
        unlink(chosen)
        for b in chosen:
            del self.blocks[b.key]
        return [(b.key, b) for b in chosen]


LruLinksAtLeastRecentEnd = mutant(
    LRU,
    "LRUCachePolicy",
    Edit(
        "LRUCachePolicy.mark_evictable",
        lines("link_last(self.ring, (block,))"),
        lines("self._relink([block, *self.listed()])  # BUG: at the least-recent end"),
    ),
    Edit(  # the same mistake in the manager's batch path
        "LRUCachePolicy.became_evictable",
        lines("link_last(self.ring, blocks)"),
        lines("""
            for block in blocks:
                self._relink([block, *self.listed()])  # BUG: at the least-recent end
        """),
    ),
    name="LruLinksAtLeastRecentEnd",
    doc="`mark_evictable` links the key at the least-recent end (it is evicted first).",
)

LruRemoveSwapsLast = mutant(
    LRU,
    "LRUCachePolicy",
    Edit(
        "LRUCachePolicy.mark_non_evictable",
        lines("unlink((block,))"),
        lines("""
            order = list(self.listed())
            at = order.index(block)
            last = order.pop()
            if at < len(order):
                order[at] = last  # BUG: the hole filled with the most recent entry
            self._relink(order)
            block.prev = block.next = None
        """),
    ),
    Edit(  # the manager's batch path takes the keys one by one, with the mistake
        "LRUCachePolicy.became_pinned",
        lines("unlink(blocks)"),
        lines("""
            for block in blocks:
                self.mark_non_evictable(block.key)
        """),
    ),
    name="LruRemoveSwapsLast",
    doc="`mark_non_evictable` fills the hole with the most recent entry (swap-remove).",
)


class LruTouchInPlace(LRUCachePolicy):
    """`touch` refreshes a key where it stands instead of moving it to the recent end."""

    def touch(self, keys: Iterable[Key]) -> None:
        return


LRU_EVICTION_BUGS: dict[str, type[LRUCachePolicy]] = {
    "ignores protection": EvictionIgnoresProtected,
    "walks from the most-recent end": LruEvictsMostRecent,
    "skips a protected oldest key to the most-recent end (three idle keys)": LruSkipsToNewest,
}
LRU_ORDER_BUGS: dict[str, type[LRUCachePolicy]] = {
    "links at the least-recent end": LruLinksAtLeastRecentEnd,
    "swaps the last entry into the hole": LruRemoveSwapsLast,
    "refreshes in place": LruTouchInPlace,
}


class SlotsNoHighWaterBump(SlotAllocator):
    """Handing out a fresh id does not advance the high-water mark."""

    def take(self, count: int, released: Iterable[int] = ()) -> list[int]:
        high = self.high_water
        out = super().take(count, released)
        if high < self.capacity:
            self.high_water = high
        return out


class SlotsFreeForgets(SlotAllocator):
    """A freed id is never pushed on the free stack."""

    def release(self, ids: Iterable[int]) -> None:
        return


class SlotsResetKeepsStack(SlotAllocator):
    """Reset makes every id fresh but keeps the free stack."""

    def reset(self) -> None:
        self.high_water = 0


class SlotsFifoReuse(SlotAllocator):
    """Freed ids are reused oldest first (a queue) instead of last first."""

    def take(self, count: int, released: Iterable[int] = ()) -> list[int]:
        self.freed.extend(released)
        fresh = min(count, self.capacity - self.high_water)
        out = list(range(self.high_water, self.high_water + fresh))
        self.high_water += fresh
        rest = count - fresh
        out += self.freed[:rest]
        del self.freed[:rest]
        return out


SlotsBulkReuseOldestFirst: type[SlotAllocator] = mutant(
    "evictable.impl.slots",
    "SlotAllocator",
    Edit("SlotAllocator.take", lines("reused.reverse()"), lines("pass  # BUG: not reversed")),
    name="SlotsBulkReuseOldestFirst",
    doc="""A bulk take hands its reused ids out oldest first (the stack's top taken as
    a slice, not reversed): a take of one id is right, so only a bulk take shows it.""",
)


SLOT_BUGS: dict[str, type[SlotAllocator]] = {
    "does not advance the high-water mark": SlotsNoHighWaterBump,
    "does not push a freed id": SlotsFreeForgets,
    "keeps the free stack on reset": SlotsResetKeepsStack,
    "reuses the oldest freed id (FIFO)": SlotsFifoReuse,
    "hands a bulk take's reused ids out oldest first": SlotsBulkReuseOldestFirst,
}


class ArcEvictsPinned(ARCCachePolicy):
    """`evict` takes any resident entry, pinned (loading) or pending ones too: it reads
    every resident as idle (the bug of the ARC model control `EvictsPinned`)."""

    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:  # type: ignore[override]
        for block in list(self.table.values()):
            if block.ref_cnt != 0:  # BUG: every resident counts as idle
                block.ref_cnt = 0
                self.mark_evictable(block.key)
        return super().evict(n, protected)


ARC_BUGS: dict[str, type[ARCCachePolicy]] = {
    "touch promotes a pending key": TouchPromotesPending,
    "evicts pinned entries": ArcEvictsPinned,
}


def hook_dropped(machine: Machine, event: CpuEvent, source: CpuState, target: CpuState) -> Variant:
    return Variant(hook=overriding(machine, row_index(machine, event, source, target), Hook.NONE))


def hook_misclassed_drop(
    machine: Machine, event: CpuEvent, source: CpuState, target: CpuState
) -> Variant:
    """The row's flip classed DROP ("leaves the list by leaving residency"): for a row
    whose target is resident no hook is called at all, so the key stays listed."""
    return Variant(hook=overriding(machine, row_index(machine, event, source, target), Hook.DROP))


def consecution_controls(machine: Machine) -> dict[str, tuple[Variant, str]]:
    """One broken relation per operation, each a mistake a real manager makes (more
    for some operations: `more_consecution_controls`)."""
    e, s = CpuEvent, CpuState
    return {
        "prepare_store": (
            Variant(counters=forgetting("prepare_store", "victims")),
            "an eviction that forgets num_evictable -= #victims",
        ),
        "complete_store.success": (
            hook_dropped(machine, e.STORE_COMMIT, s.PENDING, s.READY),
            "a store commit that forgets mark_evictable",
        ),
        "complete_store.failure": (
            Variant(keeps_slot_on=frozenset({"complete_store.failure"})),
            "a failed store that keeps its slot",
        ),
        "prepare_load": (
            hook_dropped(machine, e.LOAD_BEGIN, s.READY, s.LOADING),
            "a first load that forgets mark_non_evictable",
        ),
        "complete_load": (
            hook_dropped(machine, e.LOAD_END, s.LOADING, s.READY),
            "a last load end that forgets mark_evictable",
        ),
        "touch": (Variant(touch_lists=True), "a touch that lists pinned and pending keys"),
        "reset_cache": (Variant(reset_clears_stack=False), "a reset that keeps the free stack"),
    }


COUNTER_UPDATES: dict[str, tuple[str, str]] = {
    "prepare_store": ("victims", "num_evictable -= #victims"),
    "complete_store.success": ("acted", "its updates by #acted"),
    "complete_store.failure": ("acted", "num_pending -= #acted"),
    "prepare_load": ("pinned", "num_evictable -= #keys at ref 0"),
    "complete_load": ("unpinned", "num_evictable += #keys at ref 1"),
    "reset_cache": ("reset", "the zeroing of both counters"),
}
"""Per operation that updates a counter: the update `counter_rules.counters_after`
makes (a `CallCounts` field, "reset" for the zeroing) and, in words, what a manager
forgetting it forgets."""


def more_consecution_controls(machine: Machine) -> dict[str, list[tuple[Variant, str]]]:
    """Further broken relations of some operations, each refuted as well: among them,
    per operation that updates a counter, the update forgotten (`COUNTER_UPDATES`;
    `prepare_store`'s is its first control, the seeded `counter_drift_on_eviction`)."""
    e, s = CpuEvent, CpuState
    out: dict[str, list[tuple[Variant, str]]] = {
        "prepare_load": [
            (
                hook_misclassed_drop(machine, e.LOAD_BEGIN, s.READY, s.LOADING),
                "a first load whose flip is classed DROP (no mark_non_evictable)",
            )
        ],
    }
    out["prepare_store"] = [
        (
            Variant(victim_shortfall=1),
            "an eviction fold that takes one victim fewer than needed (the store fold runs "
            "out of slots)",
        )
    ]
    for op, (what, text) in COUNTER_UPDATES.items():
        if op != "prepare_store":
            variant = Variant(counters=forgetting(op, what))
            out.setdefault(op, []).append((variant, f"{op} forgetting {text}"))
    out["reset_cache"].append(
        (
            Variant(counters=forgetting("reset_cache", "reset_pending")),
            "reset_cache forgetting the zeroing of num_pending alone (each counter's "
            "claim is made, not only the first's)",
        )
    )
    return out


_POSITIONAL: dict[str, tuple[CpuEvent, CpuState, CpuState, Hook]] = {
    "prepare_store": (CpuEvent.STORE_BEGIN, CpuState.ABSENT, CpuState.PENDING, Hook.FLAG_ON),
    "complete_store.success": (CpuEvent.STORE_COMMIT, CpuState.PENDING, CpuState.READY, Hook.NONE),
    "complete_store.failure": (
        CpuEvent.STORE_ABORT,
        CpuState.PENDING,
        CpuState.ABSENT,
        Hook.FLAG_ON,
    ),
    "prepare_load": (CpuEvent.LOAD_BEGIN, CpuState.READY, CpuState.LOADING, Hook.NONE),
    "complete_load": (CpuEvent.LOAD_END, CpuState.LOADING, CpuState.READY, Hook.NONE),
    "touch": (CpuEvent.TOUCH, CpuState.READY, CpuState.READY, Hook.FLAG_OFF),
}
"""Per operation the fold lemma covers: the row a positional control breaks, and the
hook it gives that row instead (so the key's list bit goes wrong)."""


def positional_hook(
    machine: Machine, event: CpuEvent, source: CpuState, target: CpuState, hook: Hook
) -> Variant:
    """A relation whose row (`event`, `source` -> `target`) calls `hook` instead, from
    the second key of a call on (the first key is right)."""
    return Variant(
        hook=overriding(machine, row_index(machine, event, source, target), hook), hook_from=1
    )


def fold_controls(machine: Machine) -> dict[str, list[tuple[Variant, str, tuple[str, ...]]]]:
    """Per operation the fold lemma covers, the broken relations that only the
    unbounded record's own parts can refute, each with the claims it must be refuted
    on: one whose *step* goes wrong from the second key on (the one-key search cannot
    see it; the agreement cannot either, as both walks take the broken step; only the
    lemma's step, at any position, does), one whose *walk* leaves out every key from
    the third on (the lemma's steps are sound: only the agreement sees it), and, where
    duplicates are refused, one whose duplicate check stops after the second key (the
    lemma's accepted_keys_distinct); `prepare_store` also one that evicts although
    refused (the exit) and one whose victims may be its own keys (the eviction step's
    input_keys_not_evicted)."""
    out: dict[str, list[tuple[Variant, str, tuple[str, ...]]]] = {}
    for op, (event, source, target, hook) in _POSITIONAL.items():
        out[op] = [
            (
                positional_hook(machine, event, source, target, hook),
                f"a {event.value} {source.name}->{target.name} that calls "
                f"{hook.name} from the second key of a call on",
                ("fold lemma",),
            ),
            (
                Variant(drops_from=2),
                "a relation whose walk leaves out every key from the third on",
                ("agreement/",),
            ),
        ]
        if op == "prepare_store":
            out[op].append(
                (
                    Variant(evicts_when_refused=True),
                    "a prepare_store that takes its victims although the call is refused",
                    ("fold lemma",),
                )
            )
            out[op].append(
                (
                    Variant(protects_input=False),
                    "a prepare_store whose policy may hand back a key of the call itself",
                    ("fold lemma",),
                )
            )
        if op != "touch":  # touch takes duplicates
            out[op].append(
                (
                    Variant(duplicates_until=2),
                    "a duplicate check that compares only the first two keys of a call",
                    ("fold lemma",),
                )
            )
    return out


def forgetting(op: str, what: str) -> CounterRule:
    """`counters_after`, except that `op` forgets the update by `what` (a `CallCounts`
    field; "reset" for `reset_cache`'s zeroing of both counters, "reset_pending" for
    its zeroing of num_pending alone)."""

    def rule(name: str, ne: Any, np_: Any, n: CallCounts) -> tuple[Any, Any]:
        if name != op:
            return counters_after(name, ne, np_, n)
        if what == "reset":
            return ne, np_
        if what == "reset_pending":
            return counters_after(name, ne, np_, n)[0], np_
        return counters_after(name, ne, np_, replace(n, **{what: 0}))

    return rule

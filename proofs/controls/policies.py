"""Deliberately broken eviction policies (LRU and ARC), each with one realistic mistake.

A mistake made through the policy's public interface is a subclass of the built-in
policy; one inside its internals is the built-in class itself with one edit
(`controls.mutant`: compiled again from `impl/policies/arc.py` or `arc_index.py`,
the mistake marked `# BUG`). Nothing is registered: each bug's factory builds an
unmodified `CPUOffloadingManager` that uses the broken policy in place of "lru" or
"arc", under a `seeded-…` name known only while the manager is constructed
(`bug.with_policy`, `impl.policies.factory.policy_scope`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Set

from evictable.impl.block import BlockStatus
from evictable.impl.policies.arc import ARCCachePolicy
from evictable.impl.policies.lru import LRUCachePolicy, link_last, unlink
from evictable.model.types import Key
from evictable.model.validate import touch_keys
from evictable.proofs.controls.bug import SeededBug, with_policy
from evictable.proofs.controls.mutant import Edit, lines, mutant, mutant_function

__all__ = ["ARC_BUGS", "POLICY_BUGS"]

ARC = "evictable.impl.policies.arc"
"""The module the ARC bugs that need its internals are compiled from (`controls.mutant`)."""


class TouchMovesPinned(LRUCachePolicy):
    """`touch` moves every resident key to the most-recent end -- pinned (loading) and
    pending ones too, which puts them in the evictable list."""

    def touch(self, keys: Iterable[Key]) -> None:
        for key in reversed(touch_keys(keys)):
            block = self.blocks.get(key)
            if block is not None:  # BUG: no check that the key is evictable
                _move_to_recent_end(self.ring, block)


class EvictionIgnoresProtected(LRUCachePolicy):
    """`evict` takes the least-recent evictable keys even when they are being stored
    in the very same `prepare_store` call (the protected set is ignored)."""

    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:  # type: ignore[override]
        return super().evict(n, frozenset())  # BUG: protected dropped


class ForwardTouch(LRUCachePolicy):
    """`touch` walks the keys first to last, so the *last* key ends up most recent."""

    def touch(self, keys: Iterable[Key]) -> None:
        for key in touch_keys(keys):  # BUG: should walk in reverse
            block = self.blocks.get(key)
            if block is not None and block.prev is not None:
                _move_to_recent_end(self.ring, block)


class TouchWithoutUnlink(LRUCachePolicy):
    """`touch` re-links an evictable key at the most-recent end without unlinking it
    first: the keys after it drop out of the list, and when the key already was the
    most recent one it links to itself -- a walk of the list would circle forever."""

    def touch(self, keys: Iterable[Key]) -> None:
        for key in reversed(touch_keys(keys)):
            block = self.blocks.get(key)
            if block is not None and block.prev is not None:
                link_last(self.ring, (block,))  # BUG: no unlink first


class EvictionWrapsAround(LRUCachePolicy):
    """`evict` treats the list as a circle: past the most recent key it starts again
    at the least recent one until it has n victims -- when protected keys leave fewer
    than n candidates, it never returns."""

    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:  # type: ignore[override]
        ring = self.ring
        if n == 0 or ring.next is ring:
            return super().evict(n, protected)
        chosen: list[BlockStatus] = []
        block = ring.next
        while len(chosen) < n:  # BUG: no bound on the walk
            if block is ring:
                block = ring.next
                continue
            if block is not None and block.key not in protected and block not in chosen:
                chosen.append(block)
            block = block.next if block is not None else ring
        unlink(chosen)
        for b in chosen:
            del self.blocks[b.key]
        return [(b.key, b) for b in chosen]


class VictimsMostRecentFirst(LRUCachePolicy):
    """`evict` picks the right victims but returns them most recent first (it stacked
    them): their slots are freed, and their eviction reported, in the wrong order --
    visible only when one call evicts several blocks."""

    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:  # type: ignore[override]
        victims = super().evict(n, protected)
        return None if victims is None else victims[::-1]  # BUG: reversed


class CopyLosesRecency(LRUCachePolicy):
    """A copy (pickle or `copy.deepcopy`) carries the evictable keys sorted instead of
    in recency order: the copy evicts different keys than the original would."""

    def __getstate__(self) -> tuple[int, dict[Key, BlockStatus], BlockStatus, list[Key]]:
        capacity, blocks, ring, order = super().__getstate__()
        return capacity, blocks, ring, sorted(order, key=repr)  # BUG: order lost


def _move_to_recent_end(ring: BlockStatus, block: BlockStatus) -> None:
    """Unlink `block` if it is listed, then link it at the most-recent end."""
    if block.prev is not None:
        unlink((block,))
    link_last(ring, (block,))


class LruSkipsToNewest(LRUCachePolicy):
    """`evict` takes the least-recent unprotected key, except that when the least-recent
    key is protected it takes the *most* recent unprotected ones instead (a walk that
    restarts from the wrong end): the same victims whenever at most two keys are
    idle, the wrong one with three idle keys and the oldest protected."""

    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:  # type: ignore[override]
        order = list(self.listed())
        if order and order[0].key in protected:  # BUG: restarts from the most-recent end
            order.reverse()
        chosen = [b for b in order if b.key not in protected][:n]
        if len(chosen) < n:
            return None
        unlink(chosen)
        for b in chosen:
            del self.blocks[b.key]
        return [(b.key, b) for b in chosen]


POLICY_BUGS: tuple[SeededBug, ...] = (
    SeededBug(
        "touch_moves_pinned",
        TouchMovesPinned.__doc__ or "",
        with_policy("lru", "seeded-touch-moves-pinned", TouchMovesPinned),
    ),
    SeededBug(
        "eviction_ignores_protected",
        EvictionIgnoresProtected.__doc__ or "",
        with_policy("lru", "seeded-eviction-ignores-protected", EvictionIgnoresProtected),
    ),
    SeededBug(
        "forward_touch",
        ForwardTouch.__doc__ or "",
        with_policy("lru", "seeded-forward-touch", ForwardTouch),
    ),
    *(
        SeededBug(
            name,
            cls.__doc__ or "",
            with_policy("lru", f"seeded-{name.replace('_', '-')}", cls),
            klass=klass,
        )
        for name, cls, klass in (
            ("touch_without_unlink", TouchWithoutUnlink, "observation"),
            ("eviction_wraps_around", EvictionWrapsAround, "observation"),
            ("victims_most_recent_first", VictimsMostRecentFirst, "bounds"),
            ("victims_skip_to_newest", LruSkipsToNewest, "bounds"),
            ("copy_loses_recency", CopyLosesRecency, "alphabet"),
        )
    ),
)


class NoT1Fallback(ARCCachePolicy):
    """`evict` gives up when T1 is below its target and T2 has no idle entry, although
    T1 still has idle entries (vLLM's original ARC loop has no T1 fallback)."""

    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:  # type: ignore[override]
        lists = self.snapshot()
        t1, taken = len(lists.t1), set[Key]()
        for _ in range(n):
            pick = None
            if t1 >= int(self.target_t1_size):
                pick = _first_idle(self, lists.t1, protected, taken)
                t1 -= pick is not None
            if pick is None:
                pick = _first_idle(self, lists.t2, protected, taken)
            if pick is None:
                return None  # BUG: no fallback to T1
            taken.add(pick)
        return super().evict(n, protected)


IgnoresTarget = mutant(
    ARC,
    "ARCCachePolicy",
    Edit(
        "ARCCachePolicy.evict",
        "self.t1_size - int(self.target_t1_size) >= n - 1",
        "self.t1_size >= n - 1",
    ),
    Edit(
        "ARCCachePolicy.evict",
        "int(self.target_t1_size), n, protected)",
        "0, n, protected)  # BUG: the target is ignored",
    ),
    name="IgnoresTarget",
    doc="`evict` takes T1's least recent idle entry first whatever the adaptive target "
    "(T2 only when T1 has none): an ARC that never adapts which list it evicts from.",
)


TouchPromotesPending = mutant(
    ARC,
    "ARCCachePolicy",
    Edit(
        "ARCCachePolicy.touch",
        lines("self._to_mru(block, block.in_t2 or block.ref_cnt >= 0)", 16),
        lines("self._to_mru(block, True)  # BUG: a pending key is promoted like a ready one", 16),
    ),
    name="TouchPromotesPending",
    doc="""`touch` promotes a T1 key to T2 whatever its state -- a pending (still storing)
    key too, although a pending key only moves to T1's most-recent end.""",
)


class GhostsNeverTrimmed(ARCCachePolicy):
    """`evict` appends ghosts to B1/B2 but never trims them to N."""

    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:  # type: ignore[override]
        capacity, self.cache_capacity = self.cache_capacity, 1 << 30
        try:
            return super().evict(n, protected)  # BUG: trims to "infinity"
        finally:
            self.cache_capacity = capacity


EvictableMovesToMru = mutant(
    ARC,
    "ARCCachePolicy",
    Edit(
        "ARCCachePolicy.mark_evictable",
        lines("if block is not None and block.prev is None:"),
        lines("""
            if block is not None:
                self._to_mru(block, to_t2=block.in_t2)  # BUG: position lost
            if block is not None and block.prev is None:
        """),
    ),
    Edit(  # the same mistake in the manager's batch path
        "ARCCachePolicy.became_evictable",
        lines("""
            for record in records:
                if record.in_t2 or record.next is not None:
        """),
        lines("""
            for record in records:
                self._to_mru(record, to_t2=record.in_t2)  # BUG: position lost
                if record.prev is not None:
                    continue
                if record.in_t2 or record.next is not None:
        """),
    ),
    name="EvictableMovesToMru",
    doc="""`mark_evictable` re-files the entry at the most-recent end of its list (the easy
    way to keep the idle index ordered) -- so a load end or a store commit changes
    the ARC order, which must not move.""",
)


class PinnedStaysIdle(ARCCachePolicy):
    """`became_pinned` does nothing: a record whose ref count left 0 stays in its idle
    ring, so the policy counts a block being read among the evictable ones."""

    def became_pinned(self, blocks: Sequence[BlockStatus]) -> None:
        return None  # BUG: the records stay where evict() looks for victims


class B2HitGrowsTarget(ARCCachePolicy):
    """A ghost hit in B2 grows the target like a B1 hit (sign slip), instead of
    shrinking it."""

    def touch(self, keys: Iterable[Key]) -> None:
        for key in reversed(list(keys)):
            if key in self.b2 and key not in self.b1:
                step = max(1.0, len(self.b1) / len(self.b2))
                self.target_t1_size = min(self.target_t1_size + step, float(self.cache_capacity))
                self.b2.move_to_end(key)  # BUG: + instead of -
            else:
                super().touch([key])


class B1HitInvertedRatio(ARCCachePolicy):
    """A ghost hit in B1 grows the target by max(1, |B1|/|B2|) instead of max(1,
    |B2|/|B1|) (the ratio upside down): wrong only once both ghost lists are filled
    and B1 is the longer one."""

    def touch(self, keys: Iterable[Key]) -> None:
        for key in reversed(touch_keys(keys)):
            if key not in self.table and key in self.b1 and len(self.b2):
                step = max(1.0, len(self.b1) / len(self.b2))  # BUG: inverted ratio
                self.target_t1_size = min(self.target_t1_size + step, float(self.cache_capacity))
                self.b1.move_to_end(key)
            else:
                super().touch([key])


_GarbageKeepingIndex = mutant(
    "evictable.impl.policies.arc_index",
    "IdleIndex",
    Edit(
        "IdleIndex.compact",
        "if e[1].next is HEAPED and e[1].stamp == e[0]]",
        "if not (e[1].next is HEAPED and e[1].stamp == e[0])]  # BUG: the test is inverted",
    ),
    name="_GarbageKeepingIndex",
    doc="An ARC idle index whose compaction keeps the stale heap entries, drops the live.",
)

CompactionKeepsGarbage = mutant(
    ARC,
    "ARCCachePolicy",
    name="CompactionKeepsGarbage",
    doc="""Compacting an idle index keeps the stale heap entries and drops the live ones
    (its test is inverted): after the first compaction -- more than `COMPACT_SLACK`
    entries gone stale, so dozens of calls into a long run -- the idle records it
    held can no longer be evicted.""",
    namespace={"IdleIndex": _GarbageKeepingIndex},  # the ARC on the broken index
)


_select_keeping_t2_entries = mutant_function(
    "evictable.impl.policies.arc_index",
    "select",
    Edit(
        "select",
        "    walk2.finish()\n",
        "    pass  # BUG: T2's walk never returns what it popped\n",
    ),
    name="_select_keeping_t2_entries",
    doc="ARC's victim selection whose T2 walk never hands back its heap entries.",
)

DroppedT2WalkFinish = mutant(
    ARC,
    "ARCCachePolicy",
    name="DroppedT2WalkFinish",
    doc="""An eviction never finishes T2's walk: the heap entry it popped to look at (and
    the protected ones it skipped) are not pushed back, so those idle T2 records can
    never be evicted again -- a later eviction takes a more recent record instead.
    Visible only with T2 records that went idle out of order (a T2 heap) and an
    eviction served by T1.""",
    namespace={"select": _select_keeping_t2_entries},
)

_select_losing_heap_victims = mutant_function(
    "evictable.impl.policies.arc_index",
    "select",
    Edit(
        "select",
        lines(
            """
            for record in chosen:
                if record.next is HEAPED:  # taken from a heap: put it back
                    heappush((two if record.in_t2 else one).heap, (record.stamp, record))
        """,
            8,
        ),
        lines(
            """
            for record in chosen:
                pass  # BUG: the heap entries taken as victims are not put back
        """,
            8,
        ),
    ),
    name="_select_losing_heap_victims",
    doc="ARC's victim selection that forgets the heap victims of an eviction that fails.",
)

FailedEvictLosesHeapEntries = mutant(
    ARC,
    "ARCCachePolicy",
    name="FailedEvictLosesHeapEntries",
    doc="""An eviction that fails (too few unprotected idle records) does not put back the
    heap entries it had taken as victims: it changes nothing visible then, but those
    idle records are never evicted again. Visible only with records that went idle
    out of order (a heap) and an eviction refused because of protected keys.""",
    namespace={"select": _select_losing_heap_victims},
)


ArcRoundsTarget = mutant(
    ARC,
    "ARCCachePolicy",
    Edit(
        "ARCCachePolicy.evict",
        "chosen = select(one, self._idle2, self.t1_size, int(self.target_t1_size), n, protected)",
        "chosen = select(one, self._idle2, self.t1_size, round(self.target_t1_size), n, protected)",
    ),
    Edit(
        "ARCCachePolicy.evict",
        "if not one.heap and self.t1_size - int(self.target_t1_size) >= n - 1:",
        "if not one.heap and self.t1_size - round(self.target_t1_size) >= n - 1:",
    ),
    name="ArcRoundsTarget",
    doc="""Eviction compares `|T1|` with the target rounded instead of truncated
    (`round(target)` for `int(target)`): the same victims while the target is an
    integer, which it always is with two slots; at a target of 1.5 and one key in T1
    it takes T2's oldest instead of T1's.""",
)


def _first_idle(
    policy: ARCCachePolicy, keys: Iterable[Key], protected: Set[Key], taken: Set[Key]
) -> Key:
    return next(
        (k for k in keys if policy.table[k].ref_cnt == 0 and k not in protected and k not in taken),
        None,
    )


ARC_BUGS: tuple[SeededBug, ...] = (
    tuple(
        SeededBug(
            name, cls.__doc__ or "", with_policy("arc", f"seeded-arc-{name}", cls), policy="arc"
        )
        for name, cls in (
            ("no_t1_fallback", NoT1Fallback),
            ("ignores_target", IgnoresTarget),
            ("touch_promotes_pending", TouchPromotesPending),
            ("ghosts_never_trimmed", GhostsNeverTrimmed),
            ("evictable_moves_to_mru", EvictableMovesToMru),
            ("b2_hit_grows_target", B2HitGrowsTarget),
            ("pinned_stays_idle", PinnedStaysIdle),
        )
    )
    + tuple(
        SeededBug(
            name,
            cls.__doc__ or "",
            with_policy("arc", f"seeded-arc-{name}", cls),
            policy="arc",
            klass="arc",
        )
        for name, cls in (("b1_hit_inverted_ratio", B1HitInvertedRatio),)
    )
    + (
        SeededBug(
            "compaction_keeps_garbage",
            CompactionKeepsGarbage.__doc__ or "",
            with_policy("arc", "seeded-arc-compaction_keeps_garbage", CompactionKeepsGarbage),
            policy="arc",
            klass="arc",
            long_history=(
                "an idle index is compacted only once more than COMPACT_SLACK (32) of its heap "
                "entries are stale; each needs a record released out of recency order and then "
                "moved, so with the engines' 10 keys no trace under about 25 calls reaches it"
            ),
        ),
    )
    + tuple(
        SeededBug(
            name,
            cls.__doc__ or "",
            with_policy("arc", f"seeded-arc-{name}", cls),
            policy="arc",
            klass="orders",
            long_history=(
                "five blocks stored, pinned and four of them released out of order (a heap "
                "in the idle index), then a protected or refused eviction and one more: a "
                "trace of about a dozen calls over five slots (lockstep.arc_orders)"
            ),
        )
        for name, cls in (
            ("dropped_t2_walk_finish", DroppedT2WalkFinish),
            ("failed_evict_loses_heap_entries", FailedEvictLosesHeapEntries),
        )
    )
    + (
        SeededBug(
            "arc_rounds_target",
            ArcRoundsTarget.__doc__ or "",
            with_policy("arc", "seeded-arc-arc_rounds_target", ArcRoundsTarget),
            policy="arc",
            klass="targets",
            long_history=(
                "a fractional target needs ghost lists of two and three keys (three slots) "
                "and a ghost hit: about two dozen calls over three slots "
                "(lockstep.arc_targets)"
            ),
        ),
    )
)

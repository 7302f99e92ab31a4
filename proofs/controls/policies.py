"""Deliberately broken eviction policies (LRU and ARC), each with one realistic mistake.

Each is a subclass of the built-in policy, registered with `impl.policies.factory`
under a `seeded-…` name; its factory builds an unmodified `CPUOffloadingManager`
that uses it in place of "lru" or "arc" (`bug.with_policy`).
"""

from __future__ import annotations

from collections.abc import Iterable, Set

from evictable.impl.block import BlockStatus
from evictable.impl.policies.arc import ARCCachePolicy
from evictable.impl.policies.lru import LRUCachePolicy, link_last, unlink
from evictable.model.types import Key
from evictable.model.validate import touch_keys
from evictable.proofs.controls.bug import SeededBug, with_policy

__all__ = ["ARC_BUGS", "POLICY_BUGS"]


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

    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:
        return super().evict(n, frozenset())  # BUG: protected dropped


class ForwardTouch(LRUCachePolicy):
    """`touch` walks the keys first to last, so the *last* key ends up most recent."""

    def touch(self, keys: Iterable[Key]) -> None:
        for key in touch_keys(keys):  # BUG: should walk in reverse
            block = self.blocks.get(key)
            if block is not None and block.prev is not None:
                _move_to_recent_end(self.ring, block)


def _move_to_recent_end(ring: BlockStatus, block: BlockStatus) -> None:
    """Unlink `block` if it is listed, then link it at the most-recent end."""
    if block.prev is not None:
        unlink((block,))
    link_last(ring, (block,))


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
)


class NoT1Fallback(ARCCachePolicy):
    """`evict` gives up when T1 is below its target and T2 has no idle entry, although
    T1 still has idle entries (vLLM's original ARC loop has no T1 fallback)."""

    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:
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


class TouchPromotesPending(ARCCachePolicy):
    """`touch` promotes a T1 key to T2 whatever its state -- a pending (still storing)
    key too, although a pending key only moves to T1's most-recent end."""

    def touch(self, keys: Iterable[Key]) -> None:
        for key in reversed(touch_keys(keys)):
            block = self.table.get(key)
            if block is not None and not block.in_t2 and not block.is_ready:
                self._to_mru(block, to_t2=True)  # BUG: a pending key is promoted like a ready one
            else:
                super().touch([key])


class GhostsNeverTrimmed(ARCCachePolicy):
    """`evict` appends ghosts to B1/B2 but never trims them to N."""

    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:
        capacity, self.cache_capacity = self.cache_capacity, 1 << 30
        try:
            return super().evict(n, protected)  # BUG: trims to "infinity"
        finally:
            self.cache_capacity = capacity


class EvictableMovesToMru(ARCCachePolicy):
    """`mark_evictable` re-files the entry at the most-recent end of its list (the easy
    way to keep the idle index ordered) -- so a load end or a store commit changes
    the ARC order, which must not move."""

    def mark_evictable(self, key: Key) -> None:
        block = self.table.get(key)
        if block is not None:
            self._to_mru(block, to_t2=block.in_t2)  # BUG: position lost
        super().mark_evictable(key)


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


def _first_idle(
    policy: ARCCachePolicy, keys: Iterable[Key], protected: Set[Key], taken: Set[Key]
) -> Key:
    return next(
        (k for k in keys if policy.table[k].ref_cnt == 0 and k not in protected and k not in taken),
        None,
    )


ARC_BUGS: tuple[SeededBug, ...] = tuple(
    SeededBug(name, cls.__doc__ or "", with_policy("arc", f"seeded-arc-{name}", cls))
    for name, cls in (
        ("no_t1_fallback", NoT1Fallback),
        ("touch_promotes_pending", TouchPromotesPending),
        ("ghosts_never_trimmed", GhostsNeverTrimmed),
        ("evictable_moves_to_mru", EvictableMovesToMru),
        ("b2_hit_grows_target", B2HitGrowsTarget),
    )
)

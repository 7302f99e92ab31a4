"""Seeded bugs in the policy: `LRUCachePolicy` subclasses with one mistake each.

Each is registered with `impl.policies.factory` under a `seeded-…` name; its factory
builds an unmodified `CPUOffloadingManager` with that policy in place of "lru"
(other names pass through, so unknown names are still refused).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Set
from typing import Any

from evictable.impl.block import BlockStatus
from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.policies.factory import register_policy
from evictable.impl.policies.lru import LRUCachePolicy, link_last, unlink
from evictable.model.types import Key
from evictable.model.validate import touch_keys
from evictable.proofs.controls.bug import SeededBug

__all__ = ["POLICY_BUGS"]


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


def _with_policy(name: str, cls: type[LRUCachePolicy]) -> Callable[[int, str, bool], Any]:
    register_policy(name, cls)

    def factory(num_blocks: int, policy: str, enable_events: bool) -> CPUOffloadingManager:
        return CPUOffloadingManager(num_blocks, name if policy == "lru" else policy,
                                    enable_events)

    return factory


POLICY_BUGS: tuple[SeededBug, ...] = (
    SeededBug("touch_moves_pinned", TouchMovesPinned.__doc__ or "",
              _with_policy("seeded-touch-moves-pinned", TouchMovesPinned)),
    SeededBug("eviction_ignores_protected", EvictionIgnoresProtected.__doc__ or "",
              _with_policy("seeded-eviction-ignores-protected", EvictionIgnoresProtected)),
    SeededBug("forward_touch", ForwardTouch.__doc__ or "",
              _with_policy("seeded-forward-touch", ForwardTouch)),
)

"""vLLM 0.33's GPU free queue and block pool behind this project's GPU-side API.

* `free_queue(blocks)` -- `VllmFreeQueue`, a real
  `vllm.v1.core.kv_cache_utils.FreeKVCacheBlockQueue` over vLLM `KVCacheBlock`s
  (`free_queue.evictable_blocks` makes them: the queue machine links vLLM's own
  blocks). Every queue method is vLLM's; `cursor_for(block)` returns the block
  itself (vLLM's cursors are bare blocks), `snapshot()` walks the links.
* `block_pool(num_blocks)` -- `VllmBlockPool`, a real
  `vllm.v1.core.block_pool.BlockPool(num_blocks, enable_caching=True,
  hash_block_size=16)`. `get_new_blocks`, `touch`, `free_blocks`,
  `reset_prefix_cache` are vLLM's; `cache_block(block, name)` caches one full
  block through vLLM's `cache_full_blocks` (a request whose one block hash is
  `name`, as 32 bytes), `get_cached_block(name)` asks vLLM's `get_cached_block`
  for group 0; hashes are reported by their names.

Both declare the safety contract (this project's link generations are not
compared), builtin errors (vLLM raises `ValueError` / `RuntimeError` where this
project's errors subclass them; its asserts are `AssertionError`s) and valid calls
only: vLLM's queue trusts its caller -- appending a linked block, a duplicate in
one `append_n`, or walking after a cursor that left the queue corrupt or silently
end instead of refusing (docs/interop.md, "The free queue").
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterator, Sequence
from types import SimpleNamespace
from typing import Any

from vllm.v1.core.block_pool import BlockPool
from vllm.v1.core.kv_cache_utils import (
    BlockHash,
    FreeKVCacheBlockQueue,
    KVCacheBlock,
    make_block_hash_with_group_id,
)

from evictable.model.block_pool import BlockPoolSnapshot
from evictable.model.free_queue import FreeQueueSnapshot

__all__ = ["HASH_BLOCK_SIZE", "VllmBlockPool", "VllmFreeQueue", "block_pool", "free_queue"]

HASH_BLOCK_SIZE = 16
"""Tokens per block (and per hashed block) of the pools made here."""

logging.getLogger("vllm.v1.core.block_pool").setLevel(logging.ERROR)  # "Failed to reset ..."


def hash_bytes(name: Hashable) -> bytes:
    """The 32-byte block hash standing for a hash name (`'a'`, `'h0'`, ...)."""
    return str(name).encode().ljust(32, b"\0")[:32]


def _walk(queue: Any) -> list[Any]:
    out: list[Any] = []
    node = queue.fake_free_list_head.next_free_block
    while node is not None and node is not queue.fake_free_list_tail and len(out) < 10_000:
        out.append(node)
        node = node.next_free_block
    return out


def _queue_snapshot(queue: Any) -> FreeQueueSnapshot:
    order = tuple(b.block_id for b in _walk(queue))
    return FreeQueueSnapshot(order, tuple(0 for _ in order), int(queue.num_free_blocks))


class VllmFreeQueue:
    """vLLM's free queue with this project's cursor and snapshot API."""

    def __init__(self, blocks: Sequence[Any]) -> None:
        self.vllm = FreeKVCacheBlockQueue(list(blocks))

    @property
    def num_free_blocks(self) -> int:
        return int(self.vllm.num_free_blocks)

    def popleft(self) -> Any:
        return self.vllm.popleft()

    def popleft_n(self, n: int) -> list[Any]:
        return list(self.vllm.popleft_n(n))

    def remove(self, block: Any) -> None:
        self.vllm.remove(block)

    def append(self, block: Any) -> None:
        self.vllm.append(block)

    def append_n(self, blocks: Sequence[Any]) -> None:
        self.vllm.append_n(list(blocks))

    def prepend_n(self, blocks: Sequence[Any]) -> None:
        self.vllm.prepend_n(list(blocks))

    def get_all_free_blocks(self) -> list[Any]:
        return list(self.vllm.get_all_free_blocks())

    def cursor_for(self, block: Any) -> Any:
        """vLLM's cursor is the block itself."""
        return block

    def iter_blocks_after(self, cursor: Any = None) -> Iterator[Any]:
        return iter(self.vllm.iter_blocks_after(cursor))

    def snapshot(self) -> FreeQueueSnapshot:
        """The linked blocks front to back (no link generations: vLLM has none)."""
        return _queue_snapshot(self.vllm)


def free_queue(blocks: Sequence[Any]) -> VllmFreeQueue:
    """A vLLM free queue over `blocks` (vLLM `KVCacheBlock`s, see `evictable_blocks`)."""
    return VllmFreeQueue(blocks)


def _vllm_block(block_id: int) -> Any:
    return KVCacheBlock(block_id)


class VllmBlockPool:
    """vLLM's block pool with this project's pool API (see the module docstring)."""

    def __init__(self, num_blocks: int) -> None:
        self.vllm = BlockPool(num_blocks, True, HASH_BLOCK_SIZE)
        self.num_blocks = num_blocks
        self.names: dict[bytes, Hashable] = {}

    @property
    def blocks(self) -> list[Any]:
        return list(self.vllm.blocks)

    @property
    def free_block_queue(self) -> VllmFreeQueue:
        view = object.__new__(VllmFreeQueue)
        view.vllm = self.vllm.free_block_queue
        return view

    def get_num_free_blocks(self) -> int:
        return int(self.vllm.get_num_free_blocks())

    def get_new_blocks(self, n: int) -> list[Any]:
        return list(self.vllm.get_new_blocks(n))

    def touch(self, blocks: Sequence[Any]) -> None:
        self.vllm.touch(list(blocks))

    def free_blocks(self, blocks: Sequence[Any]) -> None:
        self.vllm.free_blocks(list(blocks))

    def cache_block(self, block: Any, name: Hashable) -> None:
        """Cache `block` (in use) as holding the content `name`, through vLLM."""
        h = hash_bytes(name)
        self.names[bytes(make_block_hash_with_group_id(BlockHash(h), 0))] = name
        request = SimpleNamespace(block_hashes=[BlockHash(h)])
        self.vllm.cache_full_blocks(request, [block], 0, 1, HASH_BLOCK_SIZE, 0)

    def get_cached_block(self, name: Hashable) -> Any:
        got = self.vllm.get_cached_block(BlockHash(hash_bytes(name)), [0])
        return None if not got else got[0]

    def reset_prefix_cache(self) -> bool:
        return bool(self.vllm.reset_prefix_cache())

    def name_of(self, block_hash: bytes | None) -> Hashable | None:
        """A vLLM block hash (with group id) by the name it was cached under."""
        if block_hash is None:
            return None
        return self.names.get(bytes(block_hash), bytes(block_hash))

    def snapshot(self) -> BlockPoolSnapshot:
        """vLLM's pool in this project's snapshot shape (the null block at ref 0)."""
        pool = self.vllm
        refs = tuple(0 if b.is_null else int(b.ref_cnt) for b in pool.blocks)
        hashes = tuple(self.name_of(b.block_hash) for b in pool.blocks)
        cached: list[tuple[Hashable, tuple[int, ...]]] = []
        for key, held in pool.cached_block_hash_to_block._cache.items():
            ids = (held.block_id,) if isinstance(held, KVCacheBlock) else tuple(held)
            cached.append((self.name_of(key), ids))
        return BlockPoolSnapshot(
            num_blocks=self.num_blocks,
            enable_caching=bool(pool.enable_caching),
            ref_cnts=refs,
            block_hashes=hashes,
            free_queue=_queue_snapshot(pool.free_block_queue),
            cached=frozenset(cached),
        )


def block_pool(num_blocks: int) -> VllmBlockPool:
    """A vLLM block pool of `num_blocks` blocks (block 0 is vLLM's null block)."""
    return VllmBlockPool(num_blocks)


_GPU_CONTRACT = {"mode": "safety", "errors": "builtin", "valid_only": True}
free_queue.evictable_contract = _GPU_CONTRACT  # type: ignore[attr-defined]
free_queue.evictable_blocks = _vllm_block  # type: ignore[attr-defined]
block_pool.evictable_contract = _GPU_CONTRACT  # type: ignore[attr-defined]
block_pool.evictable_blocks = _vllm_block  # type: ignore[attr-defined]

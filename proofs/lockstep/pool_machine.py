"""Lock-step conformance of the GPU block pool: model vs impl.

A Hypothesis `RuleBasedStateMachine` drives `model/block_pool.py` and an
implementation side by side: allocation, prefix-hit touch, free, caching, the free
block count, bad constructor arguments, bad input of every kind (counts out of
range, foreign and null blocks, double frees, caching a free block), cursors that
go stale, and iterators over the free queue that are live while a pool call
changes it (each kind of changing pool call, on purpose). After every step it
compares results, errors (type and attributes) and snapshots, checks both sides'
invariants, and, whenever a call raised, that neither side changed.

`pool_machine(factory)` builds the machine class for any pool factory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from evictable.impl.block_pool import BlockPool
from evictable.impl.free_queue import Cursor, KVCacheBlock
from evictable.model.block_pool import ModelBlockPool, check_pool_snapshot
from evictable.model.free_queue import ModelCursor
from evictable.model.types import BlockId
from evictable.proofs.base.contract import DEFAULT, Contract
from evictable.proofs.lockstep.gpu import (
    MAX_ITERS,
    POOL_BLOCKS,
    LockStep,
    bare,
    ids_of,
    keep_message,
)

__all__ = ["BAD_POOL_SIZES", "POOL_MUTATIONS", "PoolFactory", "pool_machine"]

PoolFactory = Callable[[int], BlockPool]

BAD_POOL_SIZES: tuple[object, ...] = (0, -1, True, False, 2.0, "3", None)
"""Pool sizes both sides must refuse (a pool needs at least the null block)."""

POOL_MUTATIONS: tuple[str, ...] = ("get_new_blocks", "touch", "free_blocks")
"""The pool calls that change its free queue."""


class _PoolMachine(LockStep):
    factory: PoolFactory
    block: Callable[[int], Any] = KVCacheBlock

    def __init__(self) -> None:
        super().__init__()
        self.m = ModelBlockPool(POOL_BLOCKS)
        self.i = type(self).factory(POOL_BLOCKS)
        self.foreign = type(self).block(POOL_BLOCKS)
        self.cursors: list[tuple[ModelCursor, Cursor]] = []

    def snapshots(self) -> tuple[Any, Any]:
        return self.m.snapshot(), self.i.snapshot()

    def observations(self) -> tuple[Any, Any]:
        ids = [BlockId(b) for b in range(POOL_BLOCKS)]
        model = (
            tuple(self.m.free_queue.get_all_free_blocks()),
            tuple(self.m.ref_cnt(b) for b in ids),
            tuple(self.m.get_cached_block(h) for h in "xyz"),
        )
        cached = [self.i.get_cached_block(h) for h in "xyz"]
        impl = (
            tuple(b.block_id for b in self.i.free_block_queue.get_all_free_blocks()),
            tuple(0 if b == 0 else self.i.blocks[b].ref_cnt for b in ids),
            tuple(None if blk is None else blk.block_id for blk in cached),
        )
        return model, impl

    def _block(self, b: int) -> KVCacheBlock:
        return self.i.blocks[b] if b < POOL_BLOCKS else self.foreign

    def _blocks(self, bs: Sequence[int]) -> list[KVCacheBlock]:
        return [self._block(b) for b in bs]

    @rule(n=st.one_of(st.integers(-1, 4), st.just(False)))
    def get_new_blocks(self, n: int) -> None:
        self.both(
            f"get_new_blocks({n!r})",
            lambda: self.m.get_new_blocks(n),
            lambda: self.i.get_new_blocks(n),
            ids_of,
        )

    @rule()
    def get_num_free_blocks(self) -> None:
        self.both("get_num_free_blocks()", self.m.get_num_free_blocks, self.i.get_num_free_blocks)

    @rule(which=st.integers(0, len(BAD_POOL_SIZES) - 1))
    def construct_bad(self, which: int) -> None:
        """`BlockPool(n)` for a size both sides must refuse, with the same error."""
        n: Any = BAD_POOL_SIZES[which]
        got = self.both(
            f"BlockPool({n!r})",
            lambda: ModelBlockPool(n).snapshot(),
            lambda: type(self).factory(n).snapshot(),
        )
        if not got.raised:
            self.fail(f"BlockPool({n!r}) was accepted")

    @rule(kind=st.sampled_from(POOL_MUTATIONS), b=st.integers(1, POOL_BLOCKS - 1))
    def mutate_with_live_iterator(self, kind: str, b: int) -> None:
        """Open a walk over the free queue, step it, make one pool call of `kind` that
        changes the queue, step the walk again: both sides must raise
        `ConcurrentModificationError`."""
        self.open_iterator(-1)
        if self.iters:
            self.step_iterators(len(self.iters) - 1)
        free = list(self.m.free_queue.order)
        in_use = [x for x in range(1, POOL_BLOCKS) if self.m.ref_cnt(BlockId(x)) > 0]
        if kind == "free_blocks" and not in_use:
            kind = "get_new_blocks"
        if kind != "free_blocks" and not free:
            kind = "free_blocks" if in_use else "get_new_blocks"
        if kind == "get_new_blocks":
            self.get_new_blocks(1 if free else 0)
        elif kind == "touch":
            self.touch([int(free[b % len(free)])])
        else:
            self.free_blocks([in_use[b % len(in_use)]])
        if self.iters:
            self.step_iterators(len(self.iters) - 1)

    @rule(bs=st.lists(st.integers(0, POOL_BLOCKS), max_size=4))
    def touch(self, bs: list[int]) -> None:
        self.both(
            f"touch({bs})",
            lambda: self.m.touch([BlockId(b) for b in bs]),
            lambda: self.i.touch(self._blocks(bs)),
        )

    @rule(bs=st.lists(st.integers(0, POOL_BLOCKS), max_size=4))
    def free_blocks(self, bs: list[int]) -> None:
        self.both(
            f"free_blocks({bs})",
            lambda: self.m.free_blocks([BlockId(b) for b in bs]),
            lambda: self.i.free_blocks(self._blocks(bs)),
        )

    @rule(data=st.data(), n=st.integers(1, 3), cache=st.lists(st.booleans(), max_size=3))
    def allocate_cache_free(self, data: st.DataObject, n: int, cache: list[bool]) -> None:
        """A request's life: allocate, cache some blocks, free all in-use blocks."""
        got = self.both(
            f"get_new_blocks({n})",
            lambda: self.m.get_new_blocks(n),
            lambda: self.i.get_new_blocks(n),
            ids_of,
        )
        if not got.raised:
            for b, h in zip(got.value, cache, strict=False):
                if h:
                    self.cache_block(b, "xyz"[b % 3])
        in_use = [b for b in range(1, POOL_BLOCKS) if self.m.ref_cnt(BlockId(b)) > 0]
        self.free_blocks(data.draw(st.permutations(in_use)))

    @rule(b=st.integers(1, POOL_BLOCKS - 1))
    def stale_cursor_scenario(self, b: int) -> None:
        """Cursor on b, b is hit (touched) and freed again, then a walk from the cursor."""
        self.take_cursor(b)
        self.touch([b])
        self.free_blocks([b])
        self.open_iterator(len(self.cursors) - 1)

    @rule(b=st.integers(0, POOL_BLOCKS), h=st.sampled_from(["x", "y", "z", None]))
    def cache_block(self, b: int, h: str | None) -> None:
        """Any block id: valid for a block in use, else a bad input (foreign, null,
        None hash, free block, already cached). A refusal is an
        `InvalidArgumentError` for several reasons, which only its message tells
        apart: both sides must give the same one."""
        messages: list[str] = []
        got = self.both(
            f"cache_block({b}, {h!r})",
            keep_message(lambda: self.m.cache_block(BlockId(b), h), messages),
            keep_message(lambda: self.i.cache_block(self._block(b), h), messages),
        )
        if got.raised and len(messages) == 2 and messages[0] != messages[1]:
            self.fail(f"cache_block({b}, {h!r}) refused for another reason: {messages}")

    @rule(data=st.data(), h=st.sampled_from(["x", "y", "z"]))
    def cache_in_use_block(self, data: st.DataObject, h: str) -> None:
        """Cache a block a request holds (the only blocks that may be cached)."""
        in_use = [b for b in range(1, POOL_BLOCKS) if self.m.ref_cnt(BlockId(b)) > 0]
        if in_use:
            self.cache_block(data.draw(st.sampled_from(in_use)), h)

    @rule(data=st.data(), h=st.sampled_from(["x", "y", "z"]))
    def cache_free_block(self, data: st.DataObject, h: str) -> None:
        """Bad input: cache a free block (hashed or not). Both sides must refuse it with
        the same error and the same message naming the block, and change nothing."""
        free = list(self.m.free_queue.order)
        if not free:
            return
        b = int(data.draw(st.sampled_from(free)))
        if not self.strict:  # the message checks below are this project's own
            self.cache_block(b, h)
            return
        messages: list[str] = []
        got = self.both(
            f"cache_block({b}, {h!r})  # free block",
            keep_message(lambda: self.m.cache_block(BlockId(b), h), messages),
            keep_message(lambda: self.i.cache_block(self._block(b), h), messages),
        )
        if not got.raised:
            self.fail(f"cache_block({b}) of a free block was accepted")
        model_msg, impl_msg = messages
        if model_msg != impl_msg or f"free block: block {b} " not in model_msg:
            self.fail(f"free-block messages: model {model_msg!r}, impl {impl_msg!r}")

    @rule(h=st.sampled_from(["x", "y", "z"]))
    def get_cached_block(self, h: str) -> None:
        self.both(
            f"get_cached_block({h!r})",
            lambda: self.m.get_cached_block(h),
            lambda: self.i.get_cached_block(h),
            lambda blk: None if blk is None else blk.block_id,
        )

    @rule()
    def reset_prefix_cache(self) -> None:
        self.both("reset_prefix_cache()", self.m.reset_prefix_cache, self.i.reset_prefix_cache)

    @rule(b=st.integers(0, POOL_BLOCKS - 1))
    def take_cursor(self, b: int) -> None:
        pair: list[Any] = []
        got = self.both(
            f"cursor_for({b})",
            lambda: pair.append(self.m.free_queue.cursor_for(BlockId(b))),
            lambda: pair.append(self.i.free_block_queue.cursor_for(self.i.blocks[b])),
        )
        if not got.raised:
            self.cursors = [*self.cursors[-3:], (pair[0], pair[1])]

    @rule(c=st.integers(-1, 3))
    def open_iterator(self, c: int) -> None:
        mcur: ModelCursor | None = None
        icur: Cursor | None = None
        if c >= 0 and self.cursors:
            mcur, icur = self.cursors[c % len(self.cursors)]
        label = f"iter_blocks_after({mcur})"
        made: list[Any] = []
        got = self.both(
            label,
            lambda: made.append(self.m.free_queue.iter_blocks_after(mcur)),
            lambda: made.append(self.i.free_block_queue.iter_blocks_after(icur)),
            alt_model_call=lambda: made.append(self.m.free_queue.iter_blocks_after(bare(mcur))),
        )
        if not got.raised:
            self.iters = [*self.iters[-(MAX_ITERS - 1) :], (label, made[0], made[1])]

    @invariant()
    def agree(self) -> None:
        self.guarded("(checking snapshots and invariants)", self._agree)

    def _agree(self) -> None:
        m, i = self.observe("(after the step)")
        if m != i:
            self.fail(f"snapshots differ:\n model {m}\n impl  {i}")
        if check_pool_snapshot(self.m.snapshot()):
            self.fail(f"model invariants broken: {check_pool_snapshot(self.m.snapshot())}")
        if hasattr(self.i, "check_invariants"):
            self.impl_invariants(self.i.check_invariants)


def pool_machine(
    factory: PoolFactory = BlockPool,
    contract: Contract = DEFAULT,
    block: Callable[[int], Any] = KVCacheBlock,
) -> type[RuleBasedStateMachine]:
    """The pool machine class, driving `factory`'s pools against the model under
    `contract`; `block(i)` makes the foreign block (one the pool does not own)."""
    return type(
        "BlockPoolConformance",
        (_PoolMachine,),
        {
            "factory": staticmethod(factory),
            "block": staticmethod(block),
            "contract": contract,
            "stats": {"examples": 0, "calls": 0},
        },
    )

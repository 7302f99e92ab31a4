"""Lock-step conformance of the GPU free queue and block pool: model vs impl.

Two Hypothesis `RuleBasedStateMachine`s drive the specification (`model/free_queue.py`,
`model/block_pool.py`) and an implementation side by side, with valid calls and every
kind of bad input (counts out of range, double links, duplicates, foreign and unlinked
blocks, stale cursors, iterators used after the queue changed). After every step they
compare results, errors (type and attributes) and snapshots, check the invariants of
both sides, and, whenever a call raised, that neither side changed.

* `queue_machine(factory)` / `pool_machine(factory)` -- the machine classes (pytest
  uses `.TestCase`); a factory builds the implementation under test.
* `run_machine(machine, examples, steps)` -- one run without pytest, as an `Outcome`.
* `obligations(level)` -- `conformance.free_queue` and `conformance.block_pool`, each
  with a negative control: every seeded broken variant (`proofs/gpu_seeded.py`) must
  be refuted by the same run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import Phase
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

from evictable.impl.block_pool import BlockPool
from evictable.impl.free_queue import Cursor, FreeKVCacheBlockQueue, KVCacheBlock
from evictable.model.block_pool import ModelBlockPool, check_pool_snapshot
from evictable.model.free_queue import ModelCursor, ModelFreeQueue, check_queue_snapshot
from evictable.model.types import BlockId
from evictable.proofs.controls.gpu import SEEDED_POOLS, SEEDED_QUEUES
from evictable.proofs.lockstep.compare import describe, invoke
from evictable.proofs.lockstep.gpu import (
    MAX_ITERS,
    POOL_BLOCKS,
    UNIVERSE,
    GpuConformanceFailure,
    LockStep,
    ids_of,
    keep_message,
    one_id,
)
from evictable.proofs.lockstep.guard import guard_session
from evictable.proofs.lockstep.settings import engine_settings
from evictable.proofs.obligations import Kind, Obligation, Outcome, Status, proved, refuted
from evictable.proofs.registry import Level

__all__ = [
    "GpuConformanceFailure",
    "PoolFactory",
    "QueueFactory",
    "obligations",
    "pool_machine",
    "queue_machine",
    "run_machine",
]

QueueFactory = Callable[[Sequence[KVCacheBlock]], FreeKVCacheBlockQueue]
PoolFactory = Callable[[int], BlockPool]


class _QueueMachine(LockStep):
    factory: QueueFactory

    def __init__(self) -> None:
        super().__init__()
        owners: dict[BlockId, ModelFreeQueue] = {}
        ids = [BlockId(i) for i in range(UNIVERSE)]
        self.mq = [ModelFreeQueue(ids[0:4], owners), ModelFreeQueue(ids[4:6], owners)]
        self.blocks = [KVCacheBlock(i) for i in range(UNIVERSE)]
        self.iq = [type(self).factory(self.blocks[0:4]), type(self).factory(self.blocks[4:6])]
        # held cursors: (queue index, model cursor, impl cursor)
        self.cursors: list[tuple[int, ModelCursor, Cursor]] = []

    def snapshots(self) -> tuple[Any, Any]:
        return tuple(q.snapshot() for q in self.mq), tuple(q.snapshot() for q in self.iq)

    def _blocks(self, ids: Sequence[int]) -> list[KVCacheBlock]:
        return [self.blocks[i] for i in ids]

    @rule(q=st.integers(0, 1))
    def popleft(self, q: int) -> None:
        self.both(f"q{q}.popleft()", self.mq[q].popleft, self.iq[q].popleft, one_id)

    @rule(q=st.integers(0, 1), n=st.one_of(st.integers(-1, 5), st.just(True)))
    def popleft_n(self, q: int, n: int) -> None:
        self.both(
            f"q{q}.popleft_n({n!r})",
            lambda: self.mq[q].popleft_n(n),
            lambda: self.iq[q].popleft_n(n),
            ids_of,
        )

    @rule(q=st.integers(0, 1), b=st.integers(0, UNIVERSE - 1))
    def remove(self, q: int, b: int) -> None:
        self.both(
            f"q{q}.remove({b})",
            lambda: self.mq[q].remove(BlockId(b)),
            lambda: self.iq[q].remove(self.blocks[b]),
        )

    @rule(q=st.integers(0, 1), b=st.integers(0, UNIVERSE - 1))
    def append(self, q: int, b: int) -> None:
        self.both(
            f"q{q}.append({b})",
            lambda: self.mq[q].append(BlockId(b)),
            lambda: self.iq[q].append(self.blocks[b]),
        )

    @rule(
        q=st.integers(0, 1),
        front=st.booleans(),
        bs=st.lists(st.integers(0, UNIVERSE - 1), max_size=4),
    )
    def link_n(self, q: int, front: bool, bs: list[int]) -> None:
        op = "prepend_n" if front else "append_n"
        ids = [BlockId(b) for b in bs]
        self.both(
            f"q{q}.{op}({bs})",
            lambda: getattr(self.mq[q], op)(ids),
            lambda: getattr(self.iq[q], op)(self._blocks(bs)),
        )

    @rule(
        q=st.integers(0, 1),
        b=st.integers(0, UNIVERSE - 1),
        kind=st.sampled_from(["append", "remove", "popleft_n(0)", "append_n([])"]),
    )
    def no_change(self, q: int, b: int, kind: str) -> None:
        """A call that fails or is a no-op: live iterators must survive it."""
        linked = self.mq[q].owners.get(BlockId(b)) is not None
        if kind == "append" and linked:
            self.append(q, b)
        elif kind == "remove" and not linked:
            self.remove(q, b)
        elif kind == "popleft_n(0)":
            self.popleft_n(q, 0)
        else:
            self.link_n(q, False, [])

    @rule(q=st.integers(0, 1), b=st.integers(0, UNIVERSE - 1), back=st.booleans())
    def stale_cursor_scenario(self, q: int, b: int, back: bool) -> None:
        """Cursor on b, b leaves and rejoins, then a walk from the old cursor."""
        self.take_cursor(q, b)
        self.relink_cursor_block(len(self.cursors) - 1, back)
        self.open_iterator(q, "cursor", b, len(self.cursors) - 1)

    @rule(
        q=st.integers(0, 1),
        b=st.integers(0, UNIVERSE - 1),
        kind=st.sampled_from(["append", "remove", "popleft_n(0)", "append_n([])"]),
    )
    def iterate_across_no_change(self, q: int, b: int, kind: str) -> None:
        """Open a walk, step it, make a failing or no-op call, step again."""
        self.open_iterator(q, "none", b, 0)
        self.step_iterators(len(self.iters) - 1)
        self.no_change(q, b, kind)
        if self.iters:
            self.step_iterators(len(self.iters) - 1)

    @rule(c=st.integers(0, 3), back=st.booleans())
    def relink_cursor_block(self, c: int, back: bool) -> None:
        """Take a held cursor's block out and link it again (the lazy scan's hazard)."""
        if not self.cursors:
            return
        q, cursor, _ = self.cursors[c % len(self.cursors)]
        b = cursor.block_id
        self.remove(q, b)
        if back:
            self.append(q, b)
        else:
            self.link_n(q, True, [b])

    @rule(q=st.integers(0, 1), n=st.integers(2, 4), front=st.booleans(), other=st.booleans())
    def pop_and_relink(self, q: int, n: int, front: bool, other: bool) -> None:
        """Pop n blocks and link them back, in order, here or in the other queue."""
        got = self.both(
            f"q{q}.popleft_n({n})",
            lambda: self.mq[q].popleft_n(n),
            lambda: self.iq[q].popleft_n(n),
            ids_of,
        )
        if not got.raised:
            self.link_n(1 - q if other else q, front, got.value)

    @rule(q=st.integers(0, 1), b=st.integers(0, UNIVERSE - 1))
    def take_cursor(self, q: int, b: int) -> None:
        pair: list[Any] = []
        got = self.both(
            f"q{q}.cursor_for({b})",
            lambda: pair.append(self.mq[q].cursor_for(BlockId(b))),
            lambda: pair.append(self.iq[q].cursor_for(self.blocks[b])),
        )
        if not got.raised:
            self.cursors = [*self.cursors[-3:], (q, pair[0], pair[1])]

    @rule(
        q=st.integers(0, 1),
        kind=st.sampled_from(["none", "block", "cursor"]),
        b=st.integers(0, UNIVERSE - 1),
        c=st.integers(0, 3),
    )
    def open_iterator(self, q: int, kind: str, b: int, c: int) -> None:
        mcur: BlockId | ModelCursor | None = None
        icur: KVCacheBlock | Cursor | None = None
        if kind == "block":
            mcur, icur = BlockId(b), self.blocks[b]
        elif kind == "cursor" and self.cursors:
            _, mcur, icur = self.cursors[c % len(self.cursors)]
        label = f"q{q}.iter_blocks_after({kind} {b if kind == 'block' else c})"
        made: list[Any] = []
        got = self.both(
            label,
            lambda: made.append(self.mq[q].iter_blocks_after(mcur)),
            lambda: made.append(self.iq[q].iter_blocks_after(icur)),
        )
        if not got.raised:
            self.iters = [*self.iters[-(MAX_ITERS - 1) :], (label, made[0], made[1])]

    @rule(q=st.integers(0, 1), b=st.integers(-1, UNIVERSE - 1))
    def scan_suffix(self, q: int, b: int) -> None:
        """A whole walk equals the model's list suffix after the cursor block."""
        order = list(self.mq[q].order)
        if b >= 0 and BlockId(b) not in order:
            return
        expected = order[order.index(BlockId(b)) + 1 :] if b >= 0 else order
        queue = self.iq[q]

        def walk() -> list[KVCacheBlock]:
            cursor = queue.cursor_for(self.blocks[b]) if b >= 0 else None
            return list(queue.iter_blocks_after(cursor))

        got = self.guarded(f"q{q}.walk after {b}", lambda: invoke(walk))
        self.trace.append(f"q{q}.walk after {b} {describe(got)}")
        if got.raised or ids_of(got.value) != expected:
            self.fail(f"walk after {b} on q{q}: expected {expected}, impl {describe(got)}")

    @invariant()
    def agree(self) -> None:
        self.guarded("(checking snapshots and invariants)", self._agree)

    def _agree(self) -> None:
        m, i = self.observe("(after the step)")
        if m != i:
            self.fail(f"snapshots differ: model {m} impl {i}")
        for snap in m:
            if check_queue_snapshot(snap):
                self.fail(f"model invariants broken: {check_queue_snapshot(snap)}")
        for q in self.iq:
            observed = invoke(q.check_invariants)
            if observed.raised:
                self.fail(f"impl invariants broken: {describe(observed)}")


class _PoolMachine(LockStep):
    factory: PoolFactory

    def __init__(self) -> None:
        super().__init__()
        self.m = ModelBlockPool(POOL_BLOCKS)
        self.i = type(self).factory(POOL_BLOCKS)
        self.foreign = KVCacheBlock(POOL_BLOCKS)
        self.cursors: list[tuple[ModelCursor, Cursor]] = []

    def snapshots(self) -> tuple[Any, Any]:
        return self.m.snapshot(), self.i.snapshot()

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
        None hash, free block, already cached)."""
        self.both(
            f"cache_block({b}, {h!r})",
            lambda: self.m.cache_block(BlockId(b), h),
            lambda: self.i.cache_block(self._block(b), h),
        )

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
        if check_pool_snapshot(m):
            self.fail(f"model invariants broken: {check_pool_snapshot(m)}")
        observed = invoke(self.i.check_invariants)
        if observed.raised:
            self.fail(f"impl invariants broken: {describe(observed)}")


def queue_machine(factory: QueueFactory = FreeKVCacheBlockQueue) -> type[RuleBasedStateMachine]:
    """The queue machine class, driving `factory`'s queues against the model."""
    return type(
        "FreeQueueConformance",
        (_QueueMachine,),
        {"factory": staticmethod(factory), "stats": {"examples": 0, "calls": 0}},
    )


def pool_machine(factory: PoolFactory = BlockPool) -> type[RuleBasedStateMachine]:
    """The pool machine class, driving `factory`'s pools against the model."""
    return type(
        "BlockPoolConformance",
        (_PoolMachine,),
        {"factory": staticmethod(factory), "stats": {"examples": 0, "calls": 0}},
    )


# ------------------------------------------------------------------ obligations

BUDGET: dict[str, tuple[int, int]] = {
    "quick": (30, 30),
    "default": (100, 50),
    "thorough": (600, 80),
}


def run_machine(
    machine: type[RuleBasedStateMachine], examples: int, steps: int, shrink: bool = True
) -> Outcome:
    """Run a machine without pytest; a disagreement is a counterexample with its trace.

    `shrink=False` stops at the first failure found (enough for a negative control).
    """
    phases = list(Phase) if shrink else [Phase.explicit, Phase.reuse, Phase.generate]
    config = engine_settings(examples, steps, derandomize=True, phases=phases)
    try:
        with guard_session():  # a hanging call, once found, is shrunk under a short bound
            run_state_machine_as_test(machine, settings=config)
    except GpuConformanceFailure as failure:
        return refuted(failure.reason + "\n" + "\n".join(failure.trace))
    return proved()


def _seeded(machines: dict[str, type[RuleBasedStateMachine]], examples: int, steps: int) -> Outcome:
    """Refuted only when every seeded broken variant is caught.

    Detection stops at the first failure (no shrinking), so the budget is larger
    than the positive run's: at least 200 examples.
    """
    caught: list[str] = []
    for name, machine in machines.items():
        out = run_machine(machine, max(3 * examples, 200), steps, shrink=False)
        if out.status is not Status.COUNTEREXAMPLE:
            return proved()  # this variant slipped through: the control fails
        caught.append(f"{name}: {out.counterexample.splitlines()[0]}")
    return refuted("\n".join(caught))


def obligations(level: Level) -> list[Obligation]:
    examples, steps = BUDGET[level]
    queues = {name: queue_machine(f) for name, f in SEEDED_QUEUES.items()}
    pools = {name: pool_machine(f) for name, f in SEEDED_POOLS.items()}
    return [
        Obligation(
            name="conformance.free_queue",
            statement=f"impl free queue ≡ model in lock-step ({examples} examples × "
            f"{steps} steps, bad input and cursors included)",
            check=lambda _t: run_machine(queue_machine(), examples, steps),
            negative=lambda _t: _seeded(queues, examples, steps),
            negative_statement=f"each of {len(queues)} seeded broken queues is refuted",
            tags=("conformance", "gpu"),
            kind=Kind.TESTED,
            bounds=f"{examples} examples x {steps} steps, derandomized",
        ),
        Obligation(
            name="conformance.block_pool",
            statement=f"impl block pool ≡ model in lock-step ({examples} examples × "
            f"{steps} steps, bad input and cursors included)",
            check=lambda _t: run_machine(pool_machine(), examples, steps),
            negative=lambda _t: _seeded(pools, examples, steps),
            negative_statement=f"each of {len(pools)} seeded broken pools is refuted",
            tags=("conformance", "gpu"),
            kind=Kind.TESTED,
            bounds=f"{examples} examples x {steps} steps, derandomized",
        ),
    ]

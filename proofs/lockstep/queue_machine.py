"""Lock-step conformance of the GPU free queue: model vs impl, two queues sharing blocks.

A Hypothesis `RuleBasedStateMachine` drives two model queues (`model/free_queue.py`,
sharing one `owners` map) and two implementation queues over the same block ids,
with valid calls and every kind of bad input: counts out of range, double links,
duplicates, foreign and unlinked blocks, stale cursors, bad constructor arguments,
and iterators used after the queue changed -- **every** mutating call (popleft,
popleft_n, remove, append, append_n, prepend_n) is made on purpose while an
iterator is live, so invalidation is checked for each, not found by luck. After
every step it compares results, errors (type and attributes), snapshots and
`num_free_blocks`, checks both sides' invariants, and, whenever a call raised,
that neither side changed.

`queue_machine(factory)` builds the machine class for any queue factory (pytest
uses `.TestCase`; `lockstep.gpu_machines.run_machine` runs it without pytest).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from evictable.impl.free_queue import Cursor, FreeKVCacheBlockQueue, KVCacheBlock
from evictable.model.free_queue import ModelCursor, ModelFreeQueue, check_queue_snapshot
from evictable.model.types import BlockId
from evictable.proofs.base.compare import describe, invoke
from evictable.proofs.base.contract import DEFAULT, Contract
from evictable.proofs.lockstep.gpu import MAX_ITERS, UNIVERSE, LockStep, bare, ids_of, one_id

__all__ = ["MUTATIONS", "QueueFactory", "queue_machine"]

QueueFactory = Callable[[Sequence[KVCacheBlock]], FreeKVCacheBlockQueue]

MUTATIONS: tuple[str, ...] = ("popleft", "popleft_n", "remove", "append", "append_n", "prepend_n")
"""Every kind of call that changes a queue's contents or order."""


class _QueueMachine(LockStep):
    factory: QueueFactory
    block: Callable[[int], Any] = KVCacheBlock

    def __init__(self) -> None:
        super().__init__()
        owners: dict[BlockId, ModelFreeQueue] = {}
        ids = [BlockId(i) for i in range(UNIVERSE)]
        self.mq = [ModelFreeQueue(ids[0:4], owners), ModelFreeQueue(ids[4:6], owners)]
        self.blocks = [type(self).block(i) for i in range(UNIVERSE)]
        self.iq = [type(self).factory(self.blocks[0:4]), type(self).factory(self.blocks[4:6])]
        # held cursors: (queue index, model cursor, impl cursor)
        self.cursors: list[tuple[int, ModelCursor, Cursor]] = []

    def snapshots(self) -> tuple[Any, Any]:
        return tuple(q.snapshot() for q in self.mq), tuple(q.snapshot() for q in self.iq)

    def observations(self) -> tuple[Any, Any]:
        return (
            tuple((tuple(q.get_all_free_blocks()), q.num_free_blocks) for q in self.mq),
            tuple(
                (tuple(b.block_id for b in q.get_all_free_blocks()), q.num_free_blocks)
                for q in self.iq
            ),
        )

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

    @rule(q=st.integers(0, 1))
    def count(self, q: int) -> None:
        """The queue's own `num_free_blocks` attribute (not only through a snapshot)."""
        self.both(
            f"q{q}.num_free_blocks",
            lambda: self.mq[q].num_free_blocks,
            lambda: self.iq[q].num_free_blocks,
        )

    @rule(bs=st.lists(st.integers(0, UNIVERSE - 1), min_size=1, max_size=3), dup=st.booleans())
    def construct_bad(self, bs: list[int], dup: bool) -> None:
        """A constructor over duplicates or blocks linked elsewhere: both sides refuse it
        with the same error and link nothing. (A valid one -- only unlinked blocks, no
        duplicate -- is compared too: it must link them in order.)"""
        ids = [*bs, bs[0]] if dup else bs
        made: list[Any] = []

        def model() -> Any:
            made.append(ModelFreeQueue([BlockId(b) for b in ids], self.mq[0].owners))
            return made[-1].snapshot()

        def impl() -> Any:
            made.append(type(self).factory(self._blocks(ids)))
            return made[-1].snapshot()

        got = self.both(f"FreeKVCacheBlockQueue({ids})", model, impl)
        if not got.raised and len(made) == 2:
            # A valid new queue took the blocks: give them back so the two queues stay
            # the machine's whole world (each side unlinks through its own queue).
            mnew, inew = made
            for b in ids:
                self.both(
                    f"new_queue.remove({b})",
                    partial(mnew.remove, BlockId(b)),
                    partial(inew.remove, self.blocks[b]),
                )

    @rule(
        q=st.integers(0, 1),
        kind=st.sampled_from(MUTATIONS),
        b=st.integers(0, UNIVERSE - 1),
        from_cursor=st.booleans(),
    )
    def mutate_with_live_iterator(self, q: int, kind: str, b: int, from_cursor: bool) -> None:
        """Open a walk (from the front, or from a cursor on block b), step it, make one
        call of `kind` that really changes the queue, then step the walk again: both
        sides must raise `ConcurrentModificationError` on that step."""
        mq = self.mq[q]
        if from_cursor and BlockId(b) in mq.order:
            self.take_cursor(q, b)
            self.open_iterator(q, "cursor", b, len(self.cursors) - 1)
        else:
            self.open_iterator(q, "none", b, 0)
        if self.iters:
            self.step_iterators(len(self.iters) - 1)
        self._mutate(q, kind, b)
        if self.iters:
            self.step_iterators(len(self.iters) - 1)

    def _mutate(self, q: int, kind: str, b: int) -> None:
        """One call of `kind` on queue q chosen so that it succeeds (when it can)."""
        order = list(self.mq[q].order)
        free = [i for i in range(UNIVERSE) if BlockId(i) not in self.mq[q].owners]
        if kind in ("popleft", "popleft_n", "remove") and not order:
            kind = "append"
        if kind in ("append", "append_n", "prepend_n") and not free:
            kind = "popleft"
        if kind == "popleft":
            self.popleft(q)
        elif kind == "popleft_n":
            self.popleft_n(q, 1 + b % len(order))
        elif kind == "remove":
            self.remove(q, int(order[b % len(order)]))
        elif kind == "append":
            self.append(q, free[b % len(free)])
        else:
            picked = free[b % len(free) :][:2] or free[:1]
            self.link_n(q, kind == "prepend_n", picked)

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
            alt_model_call=lambda: made.append(self.mq[q].iter_blocks_after(bare(mcur))),
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
        for mq in self.mq:
            if check_queue_snapshot(mq.snapshot()):
                self.fail(f"model invariants broken: {check_queue_snapshot(mq.snapshot())}")
        self.impl_invariants(
            *(q.check_invariants for q in self.iq if hasattr(q, "check_invariants"))
        )


def queue_machine(
    factory: QueueFactory = FreeKVCacheBlockQueue,
    contract: Contract = DEFAULT,
    block: Callable[[int], Any] = KVCacheBlock,
) -> type[RuleBasedStateMachine]:
    """The queue machine class, driving `factory`'s queues against the model under
    `contract`; `block(i)` makes the i-th block the queues link."""
    return type(
        "FreeQueueConformance",
        (_QueueMachine,),
        {
            "factory": staticmethod(factory),
            "block": staticmethod(block),
            "contract": contract,
            "stats": {"examples": 0, "calls": 0},
        },
    )

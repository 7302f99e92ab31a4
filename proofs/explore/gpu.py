"""Exhaustive exploration of the GPU free queue and the block pool (small bounds).

Two subjects of the one engine (`explore.engine.search`), built by replay
(`explore.replay_subject`, because a live iterator cannot be copied):

* `QueueSubject` -- two free queues sharing a few blocks (the second one makes
  blocks "linked elsewhere"), one held cursor and one live iterator on the first
  queue. The alphabet is every queue call over those blocks -- `popleft`,
  `popleft_n` with counts from -1 past the length (and a bool), `remove`,
  `append`, `append_n` / `prepend_n` over every batch of at most two blocks
  (duplicates included), `cursor_for`, `iter_blocks_after` from the front, the held
  cursor or a block, one step of the live iterator, and constructors that must be
  refused.
* `PoolSubject` -- a block pool (null block included) with one held cursor and one
  live iterator on its free queue; the alphabet is every pool call: allocation with
  any count, touch and free of single blocks, pairs and duplicates (the null block
  and a foreign block included), caching with a hash or None, the cache lookup, the
  reset, `get_num_free_blocks`, cursors, iteration, and refused constructors.

Every action is made on the model and the implementation and judged by the one
comparator (`base.compare.judge`: results, error identity, all-or-nothing); every
state is checked (equal snapshots, the model's invariants, the implementation's
`check_invariants()`). States are identified up to link generation numbers (which
matter only through "is the cursor still at its link"): the first failure comes
with a shortest trace. `obligations(level)` makes `explore.free_queue` and
`explore.block_pool`, each with every seeded broken variant of `proofs.controls.gpu`
as its negative control.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from evictable.impl.block_pool import BlockPool
from evictable.impl.free_queue import FreeKVCacheBlockQueue, KVCacheBlock
from evictable.model.block_pool import ModelBlockPool, check_pool_snapshot
from evictable.model.free_queue import ModelFreeQueue, check_queue_snapshot
from evictable.model.types import BlockId
from evictable.proofs.base.compare import describe, invoke
from evictable.proofs.explore.engine import Result, search
from evictable.proofs.explore.gpu_scan import (
    Act,
    Scan,
    World,
    judged,
    probe,
    scan_action,
    scan_actions,
    scan_key,
)
from evictable.proofs.explore.replay_subject import ReplaySubject

__all__ = [
    "Act",
    "PoolBounds",
    "PoolSubject",
    "QueueBounds",
    "QueueSubject",
    "explore_gpu",
    "trace_text",
]

QueueFactory = Callable[[Sequence[KVCacheBlock]], FreeKVCacheBlockQueue]
PoolFactory = Callable[[int], BlockPool]


# ------------------------------------------------------------------ the free queue


@dataclass(frozen=True)
class QueueBounds:
    """Blocks initially in the first queue, in the second one, and unlinked."""

    first: int = 2
    second: int = 1
    unlinked: int = 1

    def describe(self) -> str:
        return (
            f"queues of {self.first} and {self.second} blocks plus {self.unlinked} "
            "unlinked, batches <= 2, one cursor and one iterator"
        )


class _QueueWorld(World):
    def __init__(self, bounds: QueueBounds, factory: QueueFactory) -> None:
        n = bounds.first + bounds.second + bounds.unlinked
        ids = [BlockId(i) for i in range(n)]
        owners: dict[BlockId, ModelFreeQueue] = {}
        f, s = bounds.first, bounds.first + bounds.second
        self.mq = [ModelFreeQueue(ids[:f], owners), ModelFreeQueue(ids[f:s], owners)]
        self.blocks = [KVCacheBlock(i) for i in range(n)]
        self.factory = factory
        self.iq = [factory(self.blocks[:f]), factory(self.blocks[f:s])]
        self.scan = Scan()

    def observe(self) -> tuple[Any, Any]:
        return tuple(q.snapshot() for q in self.mq), tuple(q.snapshot() for q in self.iq)


class QueueSubject(ReplaySubject[_QueueWorld, Act]):
    """Two free queues, a cursor and an iterator on the first (see the module doc)."""

    def __init__(self, bounds: QueueBounds, factory: QueueFactory = FreeKVCacheBlockQueue) -> None:
        super().__init__()
        self.bounds, self.factory = bounds, factory
        self.n = bounds.first + bounds.second + bounds.unlinked
        every = range(self.n)
        batches: list[tuple[int, ...]] = [()]
        batches += [(b,) for b in every]
        batches += [(b, c) for b in every for c in every if b != c]
        batches += [(b, b) for b in every]
        self._fixed: list[Act] = []
        for n in (-1, 0, 1, 2, self.n, True):
            self._fixed.append(Act("popleft_n", (0, n), f"q.popleft_n({n!r})"))
        for q, name in ((0, "q"), (1, "q1")):
            self._fixed.append(Act("popleft", (q,), f"{name}.popleft()"))
            for b in every:
                self._fixed.append(Act("remove", (q, b), f"{name}.remove({b})"))
                self._fixed.append(Act("append", (q, b), f"{name}.append({b})"))
        for op in ("append_n", "prepend_n"):
            self._fixed += [Act(op, (0, bs), f"q.{op}({list(bs)})") for bs in batches]
        self._fixed += [
            Act("new", (bs,), f"FreeKVCacheBlockQueue({list(bs)})")
            for bs in ((0, 0), (self.n - 1, 0))
        ]

    def fresh(self) -> _QueueWorld:
        return _QueueWorld(self.bounds, self.factory)

    def quiet(self, world: _QueueWorld, on: bool) -> None:
        world.judging, world.cached = not on, None

    def probe(self, world: _QueueWorld) -> Act | None:
        return probe(world.scan, world.mq[0])

    def actions(self, world: _QueueWorld) -> list[Act]:
        return self._fixed + scan_actions(world.scan, range(self.n))

    def key(self, world: _QueueWorld) -> Hashable:
        return (
            tuple(world.mq[0].order),
            tuple(world.mq[1].order),
            scan_key(world.scan, world.mq[0]),
        )

    def check(self, world: _QueueWorld) -> str | None:
        try:
            m, i = world.seen_now()
        except Exception as exc:
            return f"a snapshot raised {type(exc).__name__}: {exc}"
        if m != i:
            return f"snapshots differ: model {m}, impl {i}"
        for snap in m:
            bad = check_queue_snapshot(snap)
            if bad:
                return f"model invariants broken: {bad} (model bug)"
        for q in world.iq:
            got = invoke(q.check_invariants)
            if got.raised:
                return f"impl invariants broken: {describe(got)}"
        return None

    def apply(self, world: _QueueWorld, act: Act) -> str | None:
        label = str(act)
        if act.op in ("cursor", "iter", "next"):
            return scan_action(
                label,
                act,
                world.scan,
                world,
                world.mq[0],
                world.iq[0],
                world.blocks.__getitem__,
            )
        if act.op == "new":
            ids = act.args[0]
            owners = world.mq[0].owners
            return judged(
                label,
                world,
                lambda: ModelFreeQueue([BlockId(b) for b in ids], owners) and None,
                lambda: world.factory([world.blocks[b] for b in ids]) and None,
            )[2]
        q = act.args[0]
        arg: Any = act.args[1] if len(act.args) > 1 else 0
        mq, iq = world.mq[q], world.iq[q]
        if act.op == "popleft":
            calls: tuple[Callable[[], Any], Callable[[], Any]] = (mq.popleft, iq.popleft)
        elif act.op == "popleft_n":
            calls = (lambda: mq.popleft_n(arg), lambda: iq.popleft_n(arg))
        elif act.op in ("remove", "append"):
            calls = (
                lambda: getattr(mq, act.op)(BlockId(arg)),
                lambda: getattr(iq, act.op)(world.blocks[arg]),
            )
        else:
            calls = (
                lambda: getattr(mq, act.op)([BlockId(b) for b in arg]),
                lambda: getattr(iq, act.op)([world.blocks[b] for b in arg]),
            )
        return judged(label, world, *calls)[2]


# ------------------------------------------------------------------ the block pool


@dataclass(frozen=True)
class PoolBounds:
    """Usable blocks (the pool also has the null block 0), hash values, ref bound."""

    blocks: int = 3
    hashes: tuple[str, ...] = ("x",)
    max_ref: int = 2
    caching: bool = True
    """False: a pool built with `enable_caching=False` (the factory's second argument)."""

    def describe(self) -> str:
        cache = "" if self.caching else ", caching off"
        return (
            f"{self.blocks} blocks + the null block, hashes {list(self.hashes)}, "
            f"ref <= {self.max_ref}{cache}, one cursor and one iterator"
        )


BAD_POOL_SIZES: tuple[object, ...] = (0, -1, True, 2.0, "3", None)


class _PoolWorld(World):
    def __init__(self, bounds: PoolBounds, factory: PoolFactory) -> None:
        self.n = bounds.blocks + 1
        self.m = ModelBlockPool(self.n, bounds.caching)
        self.i = factory(self.n) if bounds.caching else factory(self.n, False)  # type: ignore[call-arg]
        self.factory = factory
        self.foreign = KVCacheBlock(self.n)
        self.scan = Scan()

    def block(self, b: int) -> KVCacheBlock:
        return self.i.blocks[b] if b < self.n else self.foreign

    def observe(self) -> tuple[Any, Any]:
        return self.m.snapshot(), self.i.snapshot()


class PoolSubject(ReplaySubject[_PoolWorld, Act]):
    """A block pool, a cursor and an iterator on its free queue (see the module doc)."""

    def __init__(self, bounds: PoolBounds, factory: PoolFactory = BlockPool) -> None:
        super().__init__()
        self.bounds, self.factory = bounds, factory
        n = bounds.blocks + 1
        every = range(n + 1)  # the null block 0 and the foreign block n included
        fixed = [
            Act("get_new_blocks", (k,), f"pool.get_new_blocks({k!r})")
            for k in (-1, 0, 1, 2, n, True)
        ]
        fixed += [Act("free", (b,), f"pool.free_blocks([{b}])") for b in every]
        fixed += [
            Act("free", (1, 2), "pool.free_blocks([1, 2])"),
            Act("free", (2, 1), "pool.free_blocks([2, 1])"),
        ]
        fixed += [Act("free", (1, 1), "pool.free_blocks([1, 1])")]
        fixed += [Act("cache", (b, None), f"pool.cache_block({b}, None)") for b in (1,)]
        fixed += [
            Act("cache", (b, h), f"pool.cache_block({b}, {h!r})")
            for b in every
            for h in bounds.hashes
        ]
        fixed += [Act("cached", (h,), f"pool.get_cached_block({h!r})") for h in bounds.hashes]
        fixed += [Act("reset_prefix_cache", (), "pool.reset_prefix_cache()")]
        fixed += [Act("num_free", (), "pool.get_num_free_blocks()")]
        fixed += [Act("new", (k,), f"BlockPool({k!r})") for k in BAD_POOL_SIZES]
        self._fixed = fixed
        self._touches = [(b,) for b in every] + [(1, 2), (1, 1)]
        self._scan_blocks = range(1, n + 1)

    def fresh(self) -> _PoolWorld:
        return _PoolWorld(self.bounds, self.factory)

    def quiet(self, world: _PoolWorld, on: bool) -> None:
        world.judging, world.cached = not on, None

    def probe(self, world: _PoolWorld) -> Act | None:
        return probe(world.scan, world.m.free_queue)

    def actions(self, world: _PoolWorld) -> list[Act]:
        out = list(self._fixed)
        cap = self.bounds.max_ref
        for bs in self._touches:
            refs = [world.m.ref_cnt(BlockId(b)) for b in bs if 0 < b < world.n]
            if all(r + bs.count(b) <= cap for r, b in zip(refs, bs, strict=False)):
                out.append(Act("touch", bs, f"pool.touch({list(bs)})"))
        return out + scan_actions(world.scan, self._scan_blocks)

    def key(self, world: _PoolWorld) -> Hashable:
        snap = world.m.snapshot()
        cached = tuple(sorted(snap.cached, key=repr))
        return (
            snap.ref_cnts,
            snap.block_hashes,
            cached,
            snap.free_queue.order,
            scan_key(world.scan, world.m.free_queue),
        )

    def check(self, world: _PoolWorld) -> str | None:
        try:
            m, i = world.seen_now()
        except Exception as exc:
            return f"a snapshot raised {type(exc).__name__}: {exc}"
        if m != i:
            return f"snapshots differ: model {m}, impl {i}"
        bad = check_pool_snapshot(m)
        if bad:
            return f"model invariants broken: {bad} (model bug)"
        got = invoke(world.i.check_invariants)
        if got.raised:
            return f"impl invariants broken: {describe(got)}"
        return None

    def apply(self, world: _PoolWorld, act: Act) -> str | None:
        label = str(act)
        m, i = world.m, world.i
        if act.op in ("cursor", "iter", "next"):
            return scan_action(
                label,
                act,
                world.scan,
                world,
                m.free_queue,
                i.free_block_queue,
                world.block,
            )
        a = act.args
        ids = [BlockId(b) for b in a]
        calls: tuple[Callable[[], Any], Callable[[], Any]]
        if act.op == "get_new_blocks":
            calls = (lambda: m.get_new_blocks(a[0]), lambda: i.get_new_blocks(a[0]))
        elif act.op == "touch":
            calls = (lambda: m.touch(ids), lambda: i.touch([world.block(b) for b in a]))
        elif act.op == "free":
            calls = (lambda: m.free_blocks(ids), lambda: i.free_blocks([world.block(b) for b in a]))
        elif act.op == "cache":
            calls = (
                lambda: m.cache_block(BlockId(a[0]), a[1]),
                lambda: i.cache_block(world.block(a[0]), a[1]),
            )
        elif act.op == "cached":
            calls = (lambda: m.get_cached_block(a[0]), lambda: i.get_cached_block(a[0]))
        elif act.op == "reset_prefix_cache":
            calls = (m.reset_prefix_cache, i.reset_prefix_cache)
        elif act.op == "num_free":
            calls = (m.get_num_free_blocks, i.get_num_free_blocks)
        else:
            calls = (
                lambda: ModelBlockPool(a[0]).snapshot(),
                lambda: world.factory(a[0]).snapshot(),
            )
        return judged(label, world, *calls)[2]


def explore_gpu(
    subject: ReplaySubject[Any, Act],
    *,
    workers: int = 1,
    max_states: int = 1_000_000,
    deadline: float | None = None,
) -> Result[Act]:
    """Search every state of a GPU subject (see `explore.engine.search`)."""
    return search(subject, workers=workers, max_states=max_states, deadline=deadline)


# ------------------------------------------------------------------ obligations

QUEUE_BOUNDS: dict[str, QueueBounds] = {
    "quick": QueueBounds(first=1, second=0, unlinked=1),
    "default": QueueBounds(first=2, second=0, unlinked=1),
    "thorough": QueueBounds(first=3, second=0, unlinked=1),
}
"""The second queue starts empty (a queue built over no blocks), with an unlinked
block that either queue may take: blocks linked elsewhere are reachable, and so is
every call on an empty queue."""
POOL_BOUNDS: dict[str, PoolBounds] = {
    "quick": PoolBounds(blocks=2, max_ref=1),
    "default": PoolBounds(blocks=2, max_ref=2),
    "thorough": PoolBounds(blocks=3, max_ref=1),
}


def trace_text(run: Result[Act]) -> str:
    """A failing search as its reason and numbered calls."""
    found = run.found
    lines = [found.reason if found else "(no failure)", f"shortest trace ({len(run.path)} calls):"]
    lines += [f"  {i}. {act}" for i, act in enumerate(run.path, 1)]
    return "\n".join(lines)

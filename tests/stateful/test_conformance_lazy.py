"""Lock-step conformance of the lazy offload scanner: model vs impl.

Pool operations (allocate, prefix-hit touch, free, cache a block in use, reset of
the prefix cache) interleave with scanner steps, completions and aborts in any
order, plus bad input (among it caching a free block, which the pool refuses).
After every rule: same results, same errors (type and attributes), equal pool and
scanner snapshots, scan completeness and every scanner and pool invariant on the
model, `check_invariants()` on the impl.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from evictable.impl.block_pool import BlockPool
from evictable.impl.lazy_offload import LazyOffloadScanner
from evictable.model.block_pool import ModelBlockPool, check_pool_snapshot
from evictable.model.errors import LifecycleError
from evictable.model.lazy_offload import ModelLazyOffload, check_scan
from evictable.model.types import BlockId

HASHES = ("h0", "h1", "h2", "h3")


def _outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return ("ok", fn())
    except LifecycleError as err:
        return ("err", err.identity())


class LazyConformance(RuleBasedStateMachine):
    model: ModelLazyOffload
    scanner: LazyOffloadScanner

    @initialize(
        num_blocks=st.integers(min_value=2, max_value=7),
        window=st.integers(min_value=1, max_value=3),
    )
    def setup(self, num_blocks: int, window: int) -> None:
        self.model = ModelLazyOffload(ModelBlockPool(num_blocks), window)
        self.capacity = 0
        self.impl_pool = BlockPool(num_blocks)
        self.scanner = LazyOffloadScanner(self.impl_pool, window, lambda: self.capacity)
        self.n = num_blocks

    # ------------------------------------------------------------ helpers

    def _same(self, model_call: Callable[[], Any], impl_call: Callable[[], Any]) -> Any:
        before = (self.model.pool.snapshot(), self.model.snapshot())
        m, i = _outcome(model_call), _outcome(impl_call)
        if m[0] == "ok" and i[0] == "ok":
            assert m[1] == i[1] if not isinstance(i[1], list) else \
                m[1] == [b.block_id for b in i[1]], (m, i)
        else:
            assert m == i, (m, i)
            assert (self.model.pool.snapshot(), self.model.snapshot()) == before
        return m

    def _blocks(self, ids: list[int]) -> list[Any]:
        return [self.impl_pool.blocks[i] for i in ids]

    def _request_refs(self, b: int) -> int:
        ref = self.model.pool.phase[BlockId(b)].ref or 0
        return ref - (1 if BlockId(b) in self.model.in_flight else 0)

    # ------------------------------------------------------------ pool rules

    @rule(n=st.integers(min_value=0, max_value=4))
    def get_new_blocks(self, n: int) -> None:
        self._same(lambda: self.model.pool.get_new_blocks(n),
                   lambda: self.impl_pool.get_new_blocks(n))

    @rule(data=st.data())
    def touch(self, data: st.DataObject) -> None:
        ids = data.draw(st.lists(st.integers(1, self.n - 1), max_size=2, unique=True))
        self._same(lambda: self.model.pool.touch([BlockId(b) for b in ids]),
                   lambda: self.impl_pool.touch(self._blocks(ids)))

    @rule(data=st.data())
    def free_requests(self, data: st.DataObject) -> None:
        held = [b for b in range(1, self.n) if self._request_refs(b) > 0]
        ids = data.draw(st.lists(st.sampled_from(held), max_size=3, unique=True)) if held else []
        self._same(lambda: self.model.pool.free_blocks([BlockId(b) for b in ids]),
                   lambda: self.impl_pool.free_blocks(self._blocks(ids)))

    @rule(data=st.data())
    def free_bad(self, data: st.DataObject) -> None:
        """A free at ref 0 or a double free in one call: the same error, nothing changed."""
        b = data.draw(st.integers(1, self.n - 1))
        ids = [b, b] if self._request_refs(b) > 0 else [b]
        if self._request_refs(b) > 0 or (self.model.pool.phase[BlockId(b)].ref or 0) == 0:
            self._same(lambda: self.model.pool.free_blocks([BlockId(x) for x in ids]),
                       lambda: self.impl_pool.free_blocks(self._blocks(ids)))

    @rule(data=st.data(), h=st.sampled_from(HASHES))
    def cache_block(self, data: st.DataObject, h: str) -> None:
        # Only blocks in use can be cached (as in vLLM; `cache_bad` tries the others).
        used = [b for b in range(1, self.n)
                if (self.model.pool.phase[BlockId(b)].ref or 0) > 0]
        if used:
            b = data.draw(st.sampled_from(used))
            self._same(lambda: self.model.pool.cache_block(BlockId(b), h),
                       lambda: self.impl_pool.cache_block(self.impl_pool.blocks[b], h))

    @rule(data=st.data(), h=st.sampled_from(HASHES))
    def cache_bad(self, data: st.DataObject, h: str) -> None:
        """Caching a free block (the pool refuses it: hashed in place, it could sit
        behind the cursor) or one already cached: the same error and message, nothing
        changed."""
        pool = self.model.pool
        bad = [b for b in range(1, self.n)
               if (pool.phase[BlockId(b)].ref or 0) == 0 or BlockId(b) in pool.block_hash]
        if not bad:
            return
        b = data.draw(st.sampled_from(bad))
        messages: list[str] = []

        def keep(call: Callable[[], Any]) -> Callable[[], Any]:
            def run() -> Any:
                try:
                    return call()
                except LifecycleError as err:
                    messages.append(str(err))
                    raise
            return run

        out = self._same(keep(lambda: pool.cache_block(BlockId(b), h)),
                         keep(lambda: self.impl_pool.cache_block(self.impl_pool.blocks[b], h)))
        assert out[0] == "err" and len(messages) == 2 and messages[0] == messages[1], messages
        if (pool.phase[BlockId(b)].ref or 0) == 0:
            assert f"cannot cache a free block: block {b} " in messages[0], messages

    @rule()
    def reset_prefix_cache(self) -> None:
        self._same(self.model.pool.reset_prefix_cache, self.impl_pool.reset_prefix_cache)

    # ------------------------------------------------------------ scanner rules

    @rule(capacity=st.integers(min_value=0, max_value=3))
    def step(self, capacity: int) -> None:
        self.capacity = capacity
        self._same(lambda: self.model.step(capacity), self.scanner.step)

    @rule(capacity=st.sampled_from([-1, "2", None]))
    def step_with_bad_capacity(self, capacity: Any) -> None:
        self.capacity = capacity
        self._same(lambda: self.model.step(capacity), self.scanner.step)

    @precondition(lambda self: bool(self.model.in_flight))
    @rule(data=st.data(), ok=st.booleans())
    def finish(self, data: st.DataObject, ok: bool) -> None:
        ids = data.draw(st.permutations(list(self.model.in_flight)))
        ids = ids[: data.draw(st.integers(1, len(ids)))]
        if ok:
            self._same(lambda: self.model.complete(ids),
                       lambda: self.scanner.complete(self._blocks(ids)))
        else:
            self._same(lambda: self.model.abort(ids),
                       lambda: self.scanner.abort(self._blocks(ids)))

    @rule(data=st.data(), ok=st.booleans())
    def finish_bad(self, data: st.DataObject, ok: bool) -> None:
        """A block not in flight, or one listed twice: the same error, nothing changed."""
        b = data.draw(st.integers(1, self.n - 1))
        ids = [b, b] if BlockId(b) in self.model.in_flight else [b]
        m_call = self.model.complete if ok else self.model.abort
        i_call = self.scanner.complete if ok else self.scanner.abort
        out = self._same(lambda: m_call([BlockId(x) for x in ids]),
                         lambda: i_call(self._blocks(ids)))
        assert out[0] == "err"

    @rule()
    def reset(self) -> None:
        self._same(self.model.reset, self.scanner.reset)

    # ------------------------------------------------------------ invariants

    @invariant()
    def snapshots_agree(self) -> None:
        assert self.model.pool.snapshot() == self.impl_pool.snapshot()
        assert self.model.snapshot() == self.scanner.snapshot()

    @invariant()
    def scan_complete_and_invariants(self) -> None:
        view = self.model.view()
        assert check_scan(view) == []
        assert check_pool_snapshot(view.pool) == []
        self.scanner.check_invariants()
        self.impl_pool.check_invariants()


LazyConformance.TestCase.settings = settings(stateful_step_count=40)
test_lazy_conformance = LazyConformance.TestCase

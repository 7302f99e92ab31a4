"""Lock-step conformance of a lazy offload scanner over its block pool: model vs impl.

Pool operations (allocate, prefix-hit touch, free, cache a block in use, reset of
the prefix cache) interleave with scanner steps, completions and aborts in any
order, plus bad input (among it caching a free block, which the pool refuses).
Every call goes through the one comparator (`base.compare.judge`): same
results, same errors (type and attributes), nothing changed on an error, equal
pool and scanner snapshots. After every rule: scan completeness and every scanner
and pool invariant on the model, `check_invariants()` on the implementation.

`lazy_machine(pool_factory, scanner_factory)` builds the machine for any pool and
scanner with this project's API (`impl.block_pool.BlockPool`,
`impl.lazy_offload.LazyOffloadScanner` by default).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from evictable.impl.block_pool import BlockPool
from evictable.impl.lazy_offload import LazyOffloadScanner
from evictable.model.block_pool import ModelBlockPool, check_pool_snapshot
from evictable.model.lazy_offload import ModelLazyOffload, check_scan, require_capacity
from evictable.model.types import BlockId
from evictable.proofs.base.compare import Reply, describe, diff, invoke
from evictable.proofs.lockstep.gpu import LockStep, keep_message

__all__ = ["PoolFactory", "ScannerFactory", "lazy_machine"]

HASHES = ("h0", "h1", "h2", "h3")

BAD_SCANNERS: tuple[tuple[bool, Any, Any], ...] = (
    (False, 1, None),
    (True, 0, None),
    (True, -1, None),
    (True, True, None),
    (True, 1.5, None),
    (True, "2", None),
    (True, 1, -1),
    (True, 1, True),
    (True, 1, "2"),
)
"""(a real pool?, window, capacity) for scanners both sides must refuse."""

CAPACITY_SOURCES = ("callable", "int", "none")
"""How the scanner is given its CPU capacity (see `setup`)."""

PoolFactory = Callable[[int], Any]
"""`num_blocks -> pool` (block 0 is the null block)."""
ScannerFactory = Callable[[Any, int, Callable[[], Any]], Any]
"""`(pool, window, capacity) -> scanner`; `capacity()` is read at every step."""


def _ids(value: Any) -> Any:
    """A list of GPU blocks as their ids (anything else as it is)."""
    if isinstance(value, list) and value and hasattr(value[0], "block_id"):
        return [b.block_id for b in value]
    return value


class _LazyMachine(LockStep):
    pool_factory: PoolFactory
    scanner_factory: ScannerFactory
    model: ModelLazyOffload

    @initialize(
        num_blocks=st.integers(min_value=2, max_value=7),
        window=st.integers(min_value=1, max_value=3),
        source=st.sampled_from(CAPACITY_SOURCES),
        fixed=st.integers(min_value=0, max_value=3),
    )
    def setup(self, num_blocks: int, window: int, source: str, fixed: int) -> None:
        """The scanner's CPU capacity is read from a callable at every step (the
        drawn capacity of each `step`), fixed as an int, or None (no limit)."""
        cls = type(self)
        self.model = ModelLazyOffload(ModelBlockPool(num_blocks), window)
        self.capacity: Any = 0
        self.source = source
        self.fixed = fixed if source == "int" else num_blocks
        self.impl_pool = cls.pool_factory(num_blocks)
        given: Any = {"callable": lambda: self.capacity, "int": fixed, "none": None}[source]
        self.scanner = cls.scanner_factory(self.impl_pool, window, given)
        self.n = num_blocks
        shown = {"callable": "capacity", "int": repr(fixed), "none": "None"}[source]
        self.trace.append(
            f"pool = factory({num_blocks}); scanner = factory(pool, {window}, {shown})"
        )

    # ------------------------------------------------------------ helpers

    def snapshots(self) -> tuple[Any, Any]:
        if not hasattr(self, "model"):
            return None, None
        return (
            (self.model.pool.snapshot(), self.model.snapshot()),
            (self.impl_pool.snapshot(), self.scanner.snapshot()),
        )

    def _same(
        self, label: str, model_call: Callable[[], Any], impl_call: Callable[[], Any]
    ) -> Reply:
        return self.both(label, model_call, impl_call, _ids)

    def _blocks(self, ids: Sequence[int]) -> list[Any]:
        return [self.impl_pool.blocks[i] for i in ids]

    def _request_refs(self, b: int) -> int:
        ref = self.model.pool.phase[BlockId(b)].ref or 0
        return ref - (1 if BlockId(b) in self.model.in_flight else 0)

    # ------------------------------------------------------------ pool rules

    @rule(n=st.integers(min_value=0, max_value=4))
    def get_new_blocks(self, n: int) -> None:
        self._same(
            f"pool.get_new_blocks({n})",
            lambda: self.model.pool.get_new_blocks(n),
            lambda: self.impl_pool.get_new_blocks(n),
        )

    @rule(data=st.data())
    def touch(self, data: st.DataObject) -> None:
        ids = data.draw(st.lists(st.integers(1, self.n - 1), max_size=2, unique=True))
        self._same(
            f"pool.touch({ids})",
            lambda: self.model.pool.touch([BlockId(b) for b in ids]),
            lambda: self.impl_pool.touch(self._blocks(ids)),
        )

    @rule(data=st.data())
    def free_requests(self, data: st.DataObject) -> None:
        held = [b for b in range(1, self.n) if self._request_refs(b) > 0]
        ids = data.draw(st.lists(st.sampled_from(held), max_size=3, unique=True)) if held else []
        self._same(
            f"pool.free_blocks({ids})",
            lambda: self.model.pool.free_blocks([BlockId(b) for b in ids]),
            lambda: self.impl_pool.free_blocks(self._blocks(ids)),
        )

    @rule(data=st.data())
    def free_bad(self, data: st.DataObject) -> None:
        """A free at ref 0 or a double free in one call: the same error, nothing changed."""
        b = data.draw(st.integers(1, self.n - 1))
        ids = [b, b] if self._request_refs(b) > 0 else [b]
        if self._request_refs(b) > 0 or (self.model.pool.phase[BlockId(b)].ref or 0) == 0:
            self._same(
                f"pool.free_blocks({ids})",
                lambda: self.model.pool.free_blocks([BlockId(x) for x in ids]),
                lambda: self.impl_pool.free_blocks(self._blocks(ids)),
            )

    @rule(data=st.data(), h=st.sampled_from(HASHES))
    def cache_block(self, data: st.DataObject, h: str) -> None:
        # Only blocks in use can be cached (as in vLLM; `cache_bad` tries the others).
        used = [b for b in range(1, self.n) if (self.model.pool.phase[BlockId(b)].ref or 0) > 0]
        if used:
            b = data.draw(st.sampled_from(used))
            self._same(
                f"pool.cache_block({b}, {h!r})",
                lambda: self.model.pool.cache_block(BlockId(b), h),
                lambda: self.impl_pool.cache_block(self.impl_pool.blocks[b], h),
            )

    @rule(data=st.data(), h=st.sampled_from(HASHES))
    def cache_bad(self, data: st.DataObject, h: str) -> None:
        """Caching a free block (the pool refuses it: hashed in place, it could sit
        behind the cursor) or one already cached: the same error and message, nothing
        changed."""
        pool = self.model.pool
        bad = [
            b
            for b in range(1, self.n)
            if (pool.phase[BlockId(b)].ref or 0) == 0 or BlockId(b) in pool.block_hash
        ]
        if not bad:
            return
        b = data.draw(st.sampled_from(bad))
        messages: list[str] = []

        out = self._same(
            f"pool.cache_block({b}, {h!r})",
            keep_message(lambda: pool.cache_block(BlockId(b), h), messages),
            keep_message(lambda: self.impl_pool.cache_block(self.impl_pool.blocks[b], h), messages),
        )
        if not out.raised or len(messages) != 2 or messages[0] != messages[1]:
            self.fail(f"cache_block({b}) refusal messages differ: {messages}")
        if (
            pool.phase[BlockId(b)].ref or 0
        ) == 0 and f"cannot cache a free block: block {b} " not in messages[0]:
            self.fail(f"cache_block({b}) of a free block: message {messages[0]!r}")

    @rule()
    def reset_prefix_cache(self) -> None:
        self._same(
            "pool.reset_prefix_cache()",
            self.model.pool.reset_prefix_cache,
            self.impl_pool.reset_prefix_cache,
        )

    # ------------------------------------------------------------ scanner rules

    @rule(capacity=st.integers(min_value=0, max_value=3))
    def step(self, capacity: int) -> None:
        self.capacity = capacity
        if self.source != "callable":
            capacity = self.fixed  # the scanner's own capacity (None: the pool's size)
        self._same(
            f"scanner.step()  # capacity {capacity!r}",
            lambda: self.model.step(capacity),
            self.scanner.step,
        )

    @rule(h=st.sampled_from(HASHES))
    def queries(self, h: str) -> None:
        """The scanner's queries, against what the model's state says."""
        model, scanner = self.model, self.scanner
        self._same(
            f"scanner.is_offloaded({h!r})",
            lambda: h in model.offloaded,
            lambda: scanner.is_offloaded(h),
        )
        self._same(
            "scanner.num_in_flight", lambda: len(model.in_flight), lambda: scanner.num_in_flight
        )
        self._same(
            "scanner.in_flight_blocks()",
            lambda: [int(b) for b in model.in_flight],
            scanner.in_flight_blocks,
        )

    @precondition(lambda self: self.source == "callable")
    @rule(capacity=st.sampled_from([-1, "2", None]))
    def step_with_bad_capacity(self, capacity: Any) -> None:
        self.capacity = capacity
        self._same(
            f"scanner.step()  # capacity {capacity!r}",
            lambda: self.model.step(capacity),
            self.scanner.step,
        )

    @precondition(lambda self: bool(self.model.in_flight))
    @rule(data=st.data(), ok=st.booleans())
    def finish(self, data: st.DataObject, ok: bool) -> None:
        ids = data.draw(st.permutations(list(self.model.in_flight)))
        ids = ids[: data.draw(st.integers(1, len(ids)))]
        if ok:
            self._same(
                f"scanner.complete({ids})",
                lambda: self.model.complete(ids),
                lambda: self.scanner.complete(self._blocks(ids)),
            )
        else:
            self._same(
                f"scanner.abort({ids})",
                lambda: self.model.abort(ids),
                lambda: self.scanner.abort(self._blocks(ids)),
            )

    @rule(ok=st.booleans(), which=st.integers(0, 2))
    def finish_malformed(self, ok: bool, which: int) -> None:
        """complete/abort with an argument of the wrong shape: a list holding a non-block,
        a set, a lone block. Both sides refuse it (`InvalidArgumentError`)."""
        model_arg: Any = (["x"], {1}, 1)[which]
        impl_arg: Any = (["x"], {self.impl_pool.blocks[1]}, self.impl_pool.blocks[1])[which]
        name = "complete" if ok else "abort"
        out = self._same(
            f"scanner.{name}({model_arg!r})  # malformed",
            lambda: getattr(self.model, name)(model_arg),
            lambda: getattr(self.scanner, name)(impl_arg),
        )
        if not out.raised:
            self.fail(f"scanner.{name}({model_arg!r}) was accepted")

    @rule(data=st.data(), ok=st.booleans())
    def finish_bad(self, data: st.DataObject, ok: bool) -> None:
        """A block not in flight (once or twice), or one in flight listed twice: the same
        error, nothing changed."""
        b = data.draw(st.integers(1, self.n - 1))
        twice = BlockId(b) in self.model.in_flight or data.draw(st.booleans())
        ids = [b, b] if twice else [b]  # listed twice decides before not in flight
        m_call = self.model.complete if ok else self.model.abort
        i_call = self.scanner.complete if ok else self.scanner.abort
        out = self._same(
            f"scanner.{'complete' if ok else 'abort'}({ids})",
            lambda: m_call([BlockId(x) for x in ids]),
            lambda: i_call(self._blocks(ids)),
        )
        if not out.raised:
            self.fail(f"finishing {ids} (not in flight or listed twice) was accepted")

    @rule(which=st.integers(0, len(BAD_SCANNERS) - 1))
    def construct_bad(self, which: int) -> None:
        """A scanner built with a bad pool, window or capacity: both sides refuse it
        (the model checks the capacity at the step that reads it, so the model side
        is its constructor and its capacity check)."""
        pool, window, capacity = BAD_SCANNERS[which]
        model_pool = self.model.pool if pool else None
        impl_pool = self.impl_pool if pool else None

        def model() -> None:
            ModelLazyOffload(model_pool, window)  # type: ignore[arg-type]
            if capacity is not None:
                require_capacity(capacity)

        out = self._same(
            f"factory({'pool' if pool else 'None'}, {window!r}, {capacity!r})",
            model,
            lambda: type(self).scanner_factory(impl_pool, window, capacity) and None,
        )
        if not out.raised:
            self.fail("a scanner with a bad pool, window or capacity was built")

    @rule()
    def reset(self) -> None:
        self._same("scanner.reset()", self.model.reset, self.scanner.reset)

    # ------------------------------------------------------------ invariants

    @invariant()
    def snapshots_agree(self) -> None:
        self.guarded("(comparing snapshots)", self._snapshots_agree)

    def _snapshots_agree(self) -> None:
        m, i = self.observe("(after the step)")
        if m != i:
            self.fail(f"snapshots differ: {diff(m, i)}")

    @invariant()
    def scan_complete_and_invariants(self) -> None:
        self.guarded("(checking invariants)", self._scan_complete_and_invariants)

    def _scan_complete_and_invariants(self) -> None:
        view = self.model.view()
        bad = check_scan(view) + [f"pool.{n}" for n in check_pool_snapshot(view.pool)]
        if bad:
            self.fail(f"model invariants broken: {bad}")
        for check in (self.scanner.check_invariants, self.impl_pool.check_invariants):
            observed = invoke(check)
            if observed.raised:
                self.fail(f"impl invariants broken: {describe(observed)}")


def lazy_machine(
    pool_factory: PoolFactory = BlockPool,
    scanner_factory: ScannerFactory = LazyOffloadScanner,
) -> type[RuleBasedStateMachine]:
    """The lazy-scanner machine class, driving `scanner_factory` over `pool_factory`."""
    return type(
        "LazyScannerConformance",
        (_LazyMachine,),
        {
            "pool_factory": staticmethod(pool_factory),
            "scanner_factory": staticmethod(scanner_factory),
            "stats": {"examples": 0, "calls": 0},
        },
    )

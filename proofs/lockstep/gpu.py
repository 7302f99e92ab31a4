"""Plumbing shared by the GPU lock-step machines: observing calls, comparing, tracing.

`LockStep` runs one call on the model and on the implementation, compares the
outcomes (result, or error type and attributes), records the trace, checks that a
call that raised changed neither side, and steps the live `iter_blocks_after`
iterators. The machines themselves are in `lockstep.gpu_machines` and `lockstep.lazy_machine`.
Every call (and every observation of both sides) runs under the per-step
wall-clock bound of `lockstep.guard`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, NoReturn, TypeVar

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    precondition,
    rule,
)

from evictable.impl.free_queue import KVCacheBlock
from evictable.model.errors import LifecycleError
from evictable.model.types import BlockId
from evictable.proofs.lockstep.compare import Reply, describe, invoke, judge
from evictable.proofs.lockstep.guard import StepTimeout, step_guard
from evictable.proofs.obligations import check_deadline

__all__ = [
    "MAX_ITERS",
    "POOL_BLOCKS",
    "UNIVERSE",
    "GpuConformanceFailure",
    "LockStep",
    "ids_of",
    "keep_message",
    "no_result",
    "one_id",
]

UNIVERSE = 8  # block ids 0..7 shared by the two queues of the queue machine
POOL_BLOCKS = 7  # pool ids 0..6; id 7 names a foreign block
MAX_ITERS = 3
T = TypeVar("T")


class GpuConformanceFailure(AssertionError):
    """Model and implementation disagreed; carries the steps that led there."""

    def __init__(self, reason: str, trace: Sequence[str]) -> None:
        super().__init__(reason + "\n" + "\n".join(trace))
        self.reason = reason
        self.trace = tuple(trace)


def ids_of(blocks: Sequence[KVCacheBlock]) -> list[int]:
    return [b.block_id for b in blocks]


def one_id(block: KVCacheBlock) -> int:
    return block.block_id


def no_result(_: object) -> None:
    return None


def keep_message(call: Callable[[], T], messages: list[str]) -> Callable[[], T]:
    """`call`, recording the text of the `LifecycleError` it raises (then re-raising)."""

    def run() -> T:
        try:
            return call()
        except LifecycleError as exc:
            messages.append(str(exc))
            raise

    return run


class LockStep(RuleBasedStateMachine):
    """Shared plumbing: the trace, comparison, live iterators and held cursors."""

    stats: dict[str, int]  # per machine class: examples started, calls compared

    def __init__(self) -> None:
        super().__init__()
        self.stats["examples"] += 1
        self.trace: list[str] = []
        # live iterators: (label, model iterator, impl iterator)
        self.iters: list[tuple[str, Iterator[BlockId], Iterator[KVCacheBlock]]] = []

    def fail(self, reason: str) -> NoReturn:
        raise GpuConformanceFailure(reason, self.trace)

    def snapshots(self) -> tuple[Any, Any]:
        raise NotImplementedError

    def observe(self, label: str) -> tuple[Any, Any]:
        """Both sides' snapshots; a snapshot that raises (a broken list reports itself
        as `InvariantViolationError`, see `impl.free_queue`) fails the run."""
        try:
            return self.snapshots()
        except Exception as exc:
            self.trace.append(f"{label}  # observing both sides raised {type(exc).__name__}")
            self.fail(f"{label}: a snapshot raised {type(exc).__name__}: {exc}")

    def guarded(self, label: str, fn: Callable[[], T]) -> T:
        """`fn()` under the per-step wall-clock bound (`lockstep.guard`): a call that
        does not return in time fails the run, with its trace."""
        try:
            with step_guard():
                return fn()
        except StepTimeout as timeout:
            self.trace.append(f"{label}  # {timeout}")
            self.fail(f"{label}: the call {timeout}")

    def both(
        self,
        label: str,
        model_call: Callable[[], Any],
        impl_call: Callable[[], Any],
        convert: Callable[[Any], Any] = lambda x: x,
    ) -> Reply:
        """Run one call on both sides and `judge` it (`convert` maps the impl's result
        into the model's terms); on an error, nothing may change. Returns the model's
        reply."""
        check_deadline("GPU conformance")

        def call() -> tuple[Any, Any, Reply, Reply, Any, Any]:
            m_pre, i_pre = self.observe(label)
            m, i = invoke(model_call), invoke(impl_call)
            return (m_pre, i_pre, m, i, *self.observe(label))

        m_pre, i_pre, m, i, m_post, i_post = self.guarded(label, call)
        self.stats["calls"] += 1
        self.trace.append(f"{label} {describe(m)}")
        found = judge(m, i, m_pre, i_pre, m_post, i_post, convert)
        if found is not None:
            self.fail(f"{label}: {found.reason}")
        return m

    def step_iterators(self, first: int) -> None:
        """One step of every live iterator, starting at index `first`."""
        k = len(self.iters)
        for label, mit, iit in [self.iters[(first + j) % k] for j in range(k)]:
            got = self.both(f"next({label})", partial(next, mit), partial(next, iit), one_id)
            if got.raised:
                self.iters = [t for t in self.iters if t[1] is not mit]

    @precondition(lambda self: bool(self.iters))
    @rule(first=st.integers(0, MAX_ITERS - 1))
    def next_blocks(self, first: int) -> None:
        self.step_iterators(first)

"""Plumbing shared by the GPU lock-step machines: observing calls, comparing, tracing.

`LockStep` runs one call on the model and on the implementation, compares the
outcomes (result, or error type and attributes), records the trace, checks that a
call that raised changed neither side, and steps the live `iter_blocks_after`
iterators. The machines themselves are in `proofs/gpu_conformance.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, TypeVar

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    precondition,
    rule,
)

from evictable.impl.free_queue import KVCacheBlock
from evictable.model.errors import LifecycleError
from evictable.model.types import BlockId

__all__ = [
    "MAX_ITERS",
    "POOL_BLOCKS",
    "UNIVERSE",
    "GpuConformanceFailure",
    "LockStep",
    "Observed",
    "ids_of",
    "keep_message",
    "no_result",
    "observe",
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


Observed = tuple[str, Any]


def observe(fn: Callable[[], T], convert: Callable[[T], Any] = lambda x: x) -> Observed:
    """Call `fn`: ("ok", converted result) or ("err", error identity / crash text)."""
    try:
        value = fn()
    except StopIteration:
        return ("stop", None)
    except LifecycleError as exc:
        return ("err", exc.identity())
    except Exception as exc:  # a crash of the implementation is a disagreement too
        return ("crash", f"{type(exc).__name__}: {exc}")
    return ("ok", convert(value))


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

    def fail(self, reason: str) -> None:
        raise GpuConformanceFailure(reason, self.trace)

    def snapshots(self) -> tuple[Any, Any]:
        raise NotImplementedError

    def both(
        self,
        label: str,
        model_call: Callable[[], Any],
        impl_call: Callable[[], Any],
        convert: Callable[[Any], Any] = lambda x: x,
    ) -> Observed:
        """Run one call on both sides and compare; on an error, nothing may change."""
        before = self.snapshots()
        m = observe(model_call)
        i = observe(impl_call, convert)
        self.stats["calls"] += 1
        self.trace.append(f"{label} -> {m[0]} {m[1]!r}")
        if m != i:
            self.fail(f"{label}: model {m!r} but impl {i!r}")
        if m[0] == "err" and self.snapshots() != before:
            self.fail(f"{label}: raised {m[1][0].__name__} but state changed")
        return m

    def step_iterators(self, first: int) -> None:
        """One step of every live iterator, starting at index `first`."""
        k = len(self.iters)
        for label, mit, iit in [self.iters[(first + j) % k] for j in range(k)]:
            got = self.both(f"next({label})", partial(next, mit), partial(next, iit), one_id)
            if got[0] != "ok":
                self.iters = [t for t in self.iters if t[1] is not mit]

    @precondition(lambda self: bool(self.iters))
    @rule(first=st.integers(0, MAX_ITERS - 1))
    def next_blocks(self, first: int) -> None:
        self.step_iterators(first)

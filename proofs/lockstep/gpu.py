"""Plumbing shared by the GPU lock-step machines: observing calls, comparing, tracing.

`LockStep` runs one call on the model and on the implementation, compares the
outcomes (result, or error type and attributes), records the trace, checks that a
call that raised changed neither side, and steps the live `iter_blocks_after`
iterators. The machines themselves are in `lockstep.gpu_machines` and `lockstep.lazy_machine`.
Every call (and every observation of both sides) runs under the per-step
wall-clock bound of `base.guard`.

Every machine class carries a `base.contract.Contract` (`contract`): its error
contract decides what counts as the same error; without `invalid` calls a call the
model refuses is not made on the implementation at all; the safety contract compares
states without this project's link generations (`project`); a black box is observed
through its API only (`observations()` instead of `snapshots()`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, NoReturn, TypeVar

from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    precondition,
    rule,
)

from evictable.impl.free_queue import KVCacheBlock
from evictable.model.errors import LifecycleError, StaleCursorError
from evictable.model.types import BlockId
from evictable.proofs.base.compare import Kind, Reply, describe, invoke, judge
from evictable.proofs.base.contract import DEFAULT, Contract
from evictable.proofs.base.gpu_contract import project
from evictable.proofs.base.guard import StepBlocked, StepTimeout, step_guard
from evictable.proofs.base.records import check_deadline

__all__ = [
    "MAX_ITERS",
    "POOL_BLOCKS",
    "UNIVERSE",
    "GpuConformanceFailure",
    "LockStep",
    "bare",
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

    def __init__(self, reason: str, trace: Sequence[str], kind: Kind = Kind.STATE) -> None:
        super().__init__(reason + "\n" + "\n".join(trace))
        self.reason = reason
        self.trace = tuple(trace)
        self.kind = kind


def bare(cursor: Any) -> Any:
    """A model cursor as vLLM's bare block: the walk after its block's current position."""
    from evictable.model.free_queue import ModelCursor

    return cursor.block_id if isinstance(cursor, ModelCursor) else cursor


def _projected(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: project(convert(value))


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
    contract: Contract = DEFAULT

    def __init__(self) -> None:
        super().__init__()
        self.stats["examples"] += 1
        self.trace: list[str] = []
        # live iterators: (label, model iterator, impl iterator)
        self.iters: list[tuple[str, Iterator[BlockId], Iterator[KVCacheBlock]]] = []

    masked: frozenset[Kind] = frozenset()
    """Finding classes already reported: an example that shows one is given up
    (`hypothesis.reject`), so that the run looks for the others."""

    def fail(self, reason: str, kind: Kind = Kind.STATE) -> NoReturn:
        if kind in self.masked:
            reject()
        raise GpuConformanceFailure(reason, self.trace, kind)

    @property
    def strict(self) -> bool:
        """Exact contract, typed errors, every input: the checks that compare error
        messages and demand refusals apply only then."""
        c = self.contract
        return c.exact and c.inputs.invalid and c.errors.value == "typed"

    def snapshots(self) -> tuple[Any, Any]:
        raise NotImplementedError

    def observations(self) -> tuple[Any, Any]:
        """Both sides observed through the API only (black-box runs)."""
        raise NotImplementedError

    def views(self) -> tuple[Any, Any]:
        """Both sides' states as the contract compares them."""
        if self.contract.black_box:
            return self.observations()
        m, i = self.snapshots()
        if self.contract.safety:
            return project(m), project(i)
        return m, i

    def impl_invariants(self, *checks: Callable[[], object]) -> None:
        """Run the implementation's own `check_invariants` (where it has one, and not
        in a black-box run)."""
        if self.contract.black_box:
            return
        for check in checks:
            observed = invoke(check)
            if observed.raised:
                self.fail(f"impl invariants broken: {describe(observed)}", Kind.INVARIANT)

    def observe(self, label: str) -> tuple[Any, Any]:
        """Both sides' states as the contract compares them (`views`); an observation
        that raises (a broken list reports itself as `InvariantViolationError`, see
        `impl.free_queue`) fails the run."""
        try:
            return self.views()
        except Exception as exc:
            self.trace.append(f"{label}  # observing both sides raised {type(exc).__name__}")
            self.fail(f"{label}: a snapshot raised {type(exc).__name__}: {exc}")

    def guarded(self, label: str, fn: Callable[[], T]) -> T:
        """`fn()` under the per-step CPU-time bound (`base.guard`): a call that
        does not return in time fails the run, with its trace."""
        try:
            with step_guard(what=label):
                return fn()
        except StepTimeout as timeout:
            self.trace.append(f"{label}  # {timeout}")
            kind = Kind.BLOCKED if isinstance(timeout, StepBlocked) else Kind.HANG
            self.fail(f"{label}: the call {timeout}", kind)

    def both(
        self,
        label: str,
        model_call: Callable[[], Any],
        impl_call: Callable[[], Any],
        convert: Callable[[Any], Any] = lambda x: x,
        alt_model_call: Callable[[], Any] | None = None,
    ) -> Reply:
        """Run one call on both sides and `judge` it (`convert` maps the impl's result
        into the model's terms); on an error, nothing may change. Returns the model's
        reply. `alt_model_call`: the model's other legal answer under the safety
        contract, taken when the model refuses a relinked cursor and the impl does not."""
        check_deadline("GPU conformance")
        skipped: list[Reply] = []

        def call() -> tuple[Any, Any, Reply, Reply, Any, Any]:
            m_pre, i_pre = self.observe(label)
            m = invoke(model_call)
            alt: Reply | None = None
            stale = m.raised and isinstance(m.value, StaleCursorError)
            if self.contract.safety and stale and alt_model_call is not None:
                # A cursor whose block left and came back: the safety contract also
                # allows vLLM's answer, the walk after the block's current position.
                alt = invoke(alt_model_call)
                alt = None if alt.raised else alt
            if m.raised and alt is None and not self.contract.inputs.invalid:
                skipped.append(m)  # valid calls only: not made on the implementation
                return m_pre, i_pre, m, m, m_pre, i_pre
            i = invoke(impl_call)
            if alt is not None and not i.raised:
                m = alt  # the impl took the other legal answer
            return (m_pre, i_pre, m, i, *self.observe(label))

        m_pre, i_pre, m, i, m_post, i_post = self.guarded(label, call)
        if skipped:
            self.trace.append(f"# skipped (the model refuses it): {label} {describe(m)}")
            return m
        self.stats["calls"] += 1
        if self.contract.safety:  # results compared as states are: no link generations
            m = m if m.raised else Reply(False, project(m.value))
            convert = _projected(convert)
        note = describe(m) if describe(m) == describe(i) else f"{describe(m)}; impl {describe(i)}"
        self.trace.append(f"{label} {note}")
        found = judge(m, i, m_pre, i_pre, m_post, i_post, convert, self.contract.errors)
        if found is not None:
            self.fail(f"{label}: {found.reason}", found.kind)
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

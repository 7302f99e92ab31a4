"""Readable output of the explorer: runnable traces.

A failing trace is printed as a Python snippet that constructs the implementation
with its own factory and makes the calls of the shortest path, each commented with
the model's reply; the last call carries the expected (model) and observed
(implementation) outcome and the reason it was rejected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evictable.proofs.base.compare import Reply, describe
from evictable.proofs.base.findings import factory_source
from evictable.proofs.base.guard import StepTimeout, step_guard
from evictable.proofs.base.protocol import Factory
from evictable.proofs.explore.ops import Op, invoke

__all__ = ["render_snippet"]


def render_snippet(
    factory: Factory,
    model_factory: Factory,
    num_blocks: int,
    policy: str,
    events: bool,
    path: Sequence[Op],
    last: Op | None,
    reason: str,
) -> str:
    """The trace as runnable Python, replayed afresh on both sides for the comments."""
    imp, name = factory_source(factory)
    model = model_factory(num_blocks, policy, events)
    try:
        impl: Any = factory(num_blocks, policy, events)
    except Exception:  # the reason line already says what went wrong
        impl = None
    lines = [
        imp,
        "from contextlib import suppress",
        f"m = {name}({num_blocks!r}, {policy!r}, {events!r})",
    ]
    for op in path:
        rm = invoke(model, op)
        ri = _guarded(impl, op) if impl is not None else rm
        note = describe(rm)
        if describe(ri) != note:
            note += f"  (impl: {describe(ri)})"
        lines.append(f"{_call(op, rm.raised or ri.raised)}  # {note}")
    if last is not None:
        rm = invoke(model, last)
        ri = _guarded(impl, last) if impl is not None else Reply(True, RuntimeError("no impl"))
        lines.append(
            f"{_call(last, rm.raised or ri.raised)}  # expected (model) {describe(rm)}; "
            f"observed {describe(ri)}"
        )
    lines.append(f"# {reason}")
    lines.append("print(m.snapshot())")
    return "\n".join(lines)


def _guarded(impl: Any, op: Op) -> Reply:
    """The implementation's reply, under the per-step bound: a call that hangs is
    shown as such (and the snippet stops being replayed on it)."""
    try:
        with step_guard():
            return invoke(impl, op)
    except StepTimeout as timeout:
        return Reply(True, TimeoutError(str(timeout)))


def _call(op: Op, raises: bool) -> str:
    """The call as a statement; one that raises is wrapped so the snippet runs on."""
    return f"with suppress(Exception): m.{op.text}" if raises else f"m.{op.text}"

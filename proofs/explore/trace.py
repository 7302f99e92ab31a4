"""Readable output of the explorer: replies, snapshot differences, runnable traces.

A failing trace is printed as a Python snippet that constructs the implementation
with its own factory and makes the calls of the shortest path, each commented with
the model's reply; the last call carries the expected (model) and observed
(implementation) outcome and the reason it was rejected.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from evictable.model.errors import LifecycleError
from evictable.model.types import BlockEntry, ManagerSnapshot
from evictable.proofs.explore.ops import Op, Reply, invoke

__all__ = ["Factory", "describe", "factory_source", "render_snippet", "snapshot_diff"]

Factory = Callable[[int, str, bool], Any]
"""`(num_blocks, policy, enable_events) -> adapter` (the conformance adapter protocol)."""


def describe(reply: Reply) -> str:
    """`-> value`, or `raises Type(keys=...)` for a library error, `raises Type: msg` else."""
    raised, value = reply
    if not raised:
        return f"-> {value!r}"
    if isinstance(value, LifecycleError):
        ids = f", block_ids={value.block_ids!r}" if value.block_ids else ""
        return f"raises {type(value).__name__}(keys={value.keys!r}{ids})"
    return f"raises {type(value).__name__}: {value}"


def snapshot_diff(expected: object, observed: object) -> str:
    """The fields in which two snapshots differ, `field: expected ... != observed ...`."""
    if not isinstance(observed, ManagerSnapshot) or not isinstance(expected, ManagerSnapshot):
        return f"snapshot {observed!r} is not comparable with {expected!r}"
    parts = []
    for name in ManagerSnapshot.__dataclass_fields__:
        a, b = getattr(expected, name), getattr(observed, name)
        if a == b:
            continue
        if name == "blocks":
            only_a = sorted((_entry(e) for e in a - b), key=repr)
            only_b = sorted((_entry(e) for e in b - a), key=repr)
            parts.append(f"blocks: expected [{', '.join(only_a)}] != observed "
                         f"[{', '.join(only_b)}]")
        else:
            parts.append(f"{name}: expected {a!r} != observed {b!r}")
    return "; ".join(parts) or "(no difference)"


def _entry(e: BlockEntry) -> str:
    return f"{e.key!r}: {e.state.name} ref={e.ref_cnt} slot={e.slot}"


def factory_source(factory: object) -> tuple[str, str]:
    """An import line and the callable's name, for a snippet that calls `factory`."""
    mod = getattr(factory, "__module__", None)
    name = getattr(factory, "__qualname__", None)
    if isinstance(mod, str) and isinstance(name, str) and mod != "__main__" \
            and name.isidentifier():
        return f"from {mod} import {name}", name
    return "factory = ...  # the factory under test", "factory"


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
    lines = [imp, "from contextlib import suppress",
             f"m = {name}({num_blocks!r}, {policy!r}, {events!r})"]
    for op in path:
        rm = invoke(model, op)
        ri = invoke(impl, op) if impl is not None else rm
        note = describe(rm)
        if describe(ri) != note:
            note += f"  (impl: {describe(ri)})"
        lines.append(f"{_call(op, rm[0] or ri[0])}  # {note}")
    if last is not None:
        rm = invoke(model, last)
        ri = invoke(impl, last) if impl is not None else (True, RuntimeError("no impl"))
        lines.append(f"{_call(last, rm[0] or ri[0])}  # expected (model) {describe(rm)}; "
                     f"observed {describe(ri)}")
    lines.append(f"# {reason}")
    lines.append("print(m.snapshot())")
    return "\n".join(lines)


def _call(op: Op, raises: bool) -> str:
    """The call as a statement; one that raises is wrapped so the snippet runs on."""
    return f"with suppress(Exception): m.{op.text}" if raises else f"m.{op.text}"

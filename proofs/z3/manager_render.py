"""Rendering a manager-level Z3 model as text: a key, a call (`render_step`).

Shared by the manager-level obligations (`proofs.z3.manager`), the fold lemma
(`proofs.z3.manager_fold`) and bounded model checking (`proofs.z3.bmc`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3

from evictable.proofs.z3.manager_ops import Step
from evictable.proofs.z3.manager_state import REFERENCE, SS, MState, World

__all__ = ["render_key", "render_stack", "render_step", "value"]

Term = Any


def value(model: Any, term: Term) -> Any:
    return model.eval(term, model_completion=True)


def _state_name(model: Any, term: Term) -> str:
    return SS.decode(value(model, term)).name


def _key_names(model: Any, world: World) -> Callable[[Term], str]:
    seen: dict[str, str] = {}

    def name(key: Term) -> str:
        if world.bounded:
            return f"k{world.key_index(model, key)}"
        text = str(value(model, key))
        return seen.setdefault(text, f"k{len(seen)}")

    return name


def render_stack(model: Any, m: MState) -> list[int]:
    height = value(model, m.sp).as_long()
    return [value(model, m.stack(i)).as_long() for i in range(max(0, min(height, 8)))]


def render_key(model: Any, m: MState, key: Term) -> str:
    """One key as `model` assigns it: `READY(ref 0, listed, slot 1)`, `ABSENT`."""
    state = SS.decode(value(model, m.state(key)))
    listed = ", listed" if z3.is_true(value(model, m.listed(key))) else ""
    if not REFERENCE.spec(state).resident:
        return f"{state.name}{listed}"
    return f"{state.name}(ref {value(model, m.ref(key))}{listed}, slot {value(model, m.slot(key))})"


def render_step(model: Any, world: World, step: Step) -> str:
    """The call as `model` assigns it: each acting key before and after, then the slots
    and counters before and after."""
    name = _key_names(model, world)
    parts: dict[str, str] = {}
    for a in step.actors:
        if z3.is_true(value(model, a.active)):
            who = name(a.key)
            before = parts.get(who, f"{who}: {render_key(model, step.pre, a.key)}")
            parts[who] = before.split(" -> ")[0] + f" -> {render_key(model, step.post, a.key)}"
    pre, post = step.pre, step.post
    head = "rejected" if z3.is_true(value(model, step.rejected)) else "accepted"
    return (
        f"{step.op} ({head}): {'; '.join(parts.values()) or 'no key acts'}; "
        f"high_water {value(model, pre.hw)} -> {value(model, post.hw)}, "
        f"free stack {render_stack(model, pre)} -> {render_stack(model, post)}, "
        f"num_evictable {value(model, pre.num_evictable)} -> {value(model, post.num_evictable)}, "
        f"num_pending {value(model, pre.num_pending)} -> {value(model, post.num_pending)}"
    )

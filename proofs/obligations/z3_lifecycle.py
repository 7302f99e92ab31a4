"""`cpu.*`, `gpu.*`: the lifecycle tables' Z3 obligations (initiation, consecution of
every row, non-vacuity, hooks, ghost ref counts), each with a broken table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from evictable.model import lifecycle
from evictable.model.lifecycle import (
    Hook,
    Machine,
    RefGuard,
    Transition,
    derive_hook,
)
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation, Outcome
from evictable.proofs.controls.tables import (
    FORGETFUL_ROW,
    KEEP_REF,
    VACUOUS_ROW,
    overriding,
    replace_row,
    replace_state,
    retarget_to_other_flag,
    wrong_hook,
)
from evictable.proofs.z3.encode import (
    transition_id,
    transition_label,
)
from evictable.proofs.z3.lifecycle import (
    GHOSTS,
    check_consecution,
    check_hooks,
    check_initiation,
    check_nonvacuity,
    check_ref_counts,
    check_stutter,
    row_index,
)


def _machines() -> tuple[Machine, ...]:
    return (lifecycle.CPU_MACHINE, lifecycle.GPU_MACHINE)


def obligations(level: Level) -> list[Obligation]:
    """The lifecycle obligations of both tables (unbounded: the same at every level)."""
    del level  # unbounded proofs: nothing to scale
    out: list[Obligation] = []
    for m in _machines():
        out.extend(machine_obligations(m))
    return out


def _bind(fn: Callable[..., Outcome], *args: Any, **kw: Any) -> Callable[[float], Outcome]:
    return lambda backstop_s: fn(*args, backstop_s, **kw)


def machine_obligations(m: Machine) -> list[Obligation]:
    """Every lifecycle obligation of one machine (with its negative controls)."""
    n = m.name
    first_initial = m.initial[0]
    out = [
        Obligation(
            f"{n}.initiation",
            "every initial block satisfies the inductive invariant",
            _bind(check_initiation, m),
            _bind(
                check_initiation,
                replace_state(m, first_initial, flag=not m.spec(first_initial).flag),
            ),
            f"initial state {first_initial.name} with its flag flipped is refuted",
            kind=Kind.UNBOUNDED,
        )
    ]
    for i, t in enumerate(m.transitions):
        broken = retarget_to_other_flag(m, i)
        out.append(
            Obligation(
                f"{n}.consecution.{transition_id(t)}",
                f"{transition_label(t)} preserves ∀b. Inv(b) (one block steps, the rest stay)",
                _bind(check_consecution, m, i),
                _bind(check_consecution, broken, i),
                f"row retargeted to {transition_label(broken.transitions[i])} is refuted",
                kind=Kind.UNBOUNDED,
            )
        )
    for kind in ("ignored", "rejected"):
        # Control: a no-change pair that silently flips list membership.
        pairs = m.ignored if kind == "ignored" else tuple((r.state, r.event) for r in m.rejections)
        state, event = pairs[0]
        flip_row = Transition(event, state, state, RefGuard.ANY, KEEP_REF)
        flipped = dataclasses.replace(m, transitions=(*m.transitions, flip_row))
        hook = overriding(
            flipped, len(m.transitions), Hook.FLAG_OFF if m.spec(state).flag else Hook.FLAG_ON
        )
        out.append(
            Obligation(
                f"{n}.consecution.{kind}",
                f"every {kind} (state, event) pair leaves the block unchanged and Inv intact",
                _bind(check_stutter, m, kind),
                _bind(check_consecution, flipped, len(m.transitions), hook=hook),
                f"{event.value} on {state.name} flipping list membership is refuted",
                kind=Kind.UNBOUNDED,
            )
        )
    ev, src, dst, guard = VACUOUS_ROW[n]
    vi = row_index(m, ev, src, dst)
    out.append(
        Obligation(
            f"{n}.nonvacuity",
            "every row can fire from a state satisfying Inv",
            _bind(check_nonvacuity, m),
            _bind(check_nonvacuity, replace_row(m, vi, guard=guard)),
            f"{ev.value} {src.name}->{dst.name} guarded by '{guard.value}' is found vacuous",
            kind=Kind.UNBOUNDED,
        )
    )
    for i, t in enumerate(m.transitions):
        wrong = wrong_hook(m, i)
        out.append(
            Obligation(
                f"{n}.hooks.{transition_id(t)}",
                f"{transition_label(t)} calls '{m.hook_name(derive_hook(m, t))}', exactly the "
                f"{m.flag_name} flip",
                _bind(check_hooks, m, i),
                _bind(check_hooks, m, i, hook=overriding(m, i, wrong)),
                f"{transition_label(t)} calling '{m.hook_name(wrong)}' instead is refuted",
                kind=Kind.UNBOUNDED,
            )
        )
    ev, src, dst = FORGETFUL_ROW[n]
    fi = row_index(m, ev, src, dst)
    g = GHOSTS[n]
    out.append(
        Obligation(
            f"{n}.ref_counts_{g.name}",
            f"the ref count equals the number of {g.name} (ghost counter per event)",
            _bind(check_ref_counts, m),
            _bind(check_ref_counts, replace_row(m, fi, update=KEEP_REF)),
            f"{ev.value} {src.name}->{dst.name} keeping the ref is refuted",
            kind=Kind.UNBOUNDED,
        )
    )
    return out

"""Z3 obligations over the lifecycle tables, generated from `model/lifecycle.py`.

For each machine (CPU offload block, GPU KV-cache block):

* `<m>.initiation` -- every initial block satisfies the inductive invariant (the
  conjunction of the named block invariants of `model/invariants.py`).
* `<m>.consecution.<event>.<SRC>-><DST>` -- one per table row: over an unbounded
  number of blocks (an uninterpreted `Block` sort; state, ref and in_list are
  functions of it), if every block satisfies the invariant and one block `b0` takes
  this row while every other block stays, every block still satisfies it.
  `<m>.consecution.ignored` / `.rejected` do the same for the no-change pairs.
* `<m>.nonvacuity` -- each row can fire from a state satisfying the invariant (and
  each ignored / rejected pair can be met), so no consecution holds vacuously.
* `<m>.hooks.<event>.<SRC>-><DST>` -- the row's hook is called exactly when the
  block's idleness (resident, ref in a flagged range) flips, and it is the right one.
* `<m>.ref_counts_<ghost>` -- the ref count equals a ghost counter updated per event
  (CPU: loads in flight; GPU: holders), so a row that forgets its ref update is
  caught even where the state ranges still admit the result.

Each obligation carries a negative control: the same check on a table with one row
(or one state, or one derived hook) changed, which must give a counterexample.
The machines are looked up in `model.lifecycle` when `obligations` is called, so a
test may monkeypatch a broken table there; the invariant stays the reference one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import z3

from evictable.model.lifecycle import (
    CpuEvent,
    CpuState,
    Event,
    GpuEvent,
    GpuState,
    Hook,
    Machine,
    State,
    Transition,
)
from evictable.proofs.base.records import Outcome, Status, proved, refuted
from evictable.proofs.z3.encode import (
    REFERENCE_MACHINES,
    BlockTerms,
    HookFn,
    StateSort,
    block_consts,
    block_sort,
    config,
    idle_term,
    inv_term,
    render_block,
    resolve_hook,
    state_sort,
    stutter_term,
    transition_label,
    transition_term,
    violated,
)
from evictable.proofs.z3.solver import check, solver, z3_valid

__all__ = [
    "GHOSTS",
    "GhostCounter",
    "check_consecution",
    "check_hooks",
    "check_initiation",
    "check_nonvacuity",
    "check_ref_counts",
    "check_stutter",
]


# ------------------------------------------------------------------ table variants


def row_index(machine: Machine, event: Event, source: State, target: State) -> int:
    for i, t in enumerate(machine.transitions):
        if t.event is event and t.source is source and t.target is target:
            return i
    raise KeyError(f"{machine.name}: no row {event.value} {source.name}->{target.name}")


# ------------------------------------------------------------------ helpers


def _violation_text(
    model: Any,
    machine: Machine,
    ss: StateSort,
    pre: BlockTerms,
    post: BlockTerms,
    head: str,
    who: str = "b0",
) -> str:
    broken = violated(model, machine, ss, post) or ["(invariant)"]
    return (
        f"{head}: block {who} pre {render_block(model, machine, ss, pre)} -> post "
        f"{render_block(model, machine, ss, post)}; violated: {', '.join(broken)}"
    )


def _sat(formulas: list[Any], backstop_s: float) -> str:
    s = solver(backstop_s)
    s.add(*formulas)
    return str(check(s))


def _first_failure(outcomes: list[Outcome]) -> Outcome:
    for o in outcomes:
        if o.status is not Status.PROVED:
            return o
    return proved()


# ------------------------------------------------------------------ initiation


def check_initiation(machine: Machine, backstop_s: float) -> Outcome:
    """Every initial block (state initial, ref its minimum, in_list its flag) satisfies Inv."""
    ss = state_sort(machine)
    b = block_consts(ss, "b")
    starts = []
    for s in machine.initial:
        spec = machine.spec(s)
        parts = [b.state == ss.consts[s], b.in_list == spec.flag]
        if spec.resident and spec.ref_min is not None:
            parts.append(b.ref == spec.ref_min)
        starts.append(z3.And(*parts))

    def describe(model: Any) -> str:
        broken = violated(model, machine, ss, b)
        return f"initial block {render_block(model, machine, ss, b)}; violated: {', '.join(broken)}"

    return z3_valid(inv_term(machine, ss, b), backstop_s, describe, [z3.Or(*starts)])


# ------------------------------------------------------------------ consecution


def check_consecution(
    machine: Machine, index: int, backstop_s: float, hook: HookFn | None = None
) -> Outcome:
    """Row `index` preserves ∀b. Inv(b) when one block b0 takes it and the rest stay."""
    t = machine.transitions[index]
    ss = state_sort(machine)
    pre, post = config(ss, "pre"), config(ss, "post")
    x = z3.Const("x", block_sort())
    b0, b1 = z3.Const("b0", block_sort()), z3.Const("b1", block_sort())
    assumptions = [
        z3.ForAll([x], inv_term(machine, ss, pre.at(x))),
        transition_term(machine, t, pre.at(b0), post.at(b0), hook),
        z3.ForAll([x], z3.Implies(x != b0, post.same_at(pre, x))),
    ]

    def describe(model: Any) -> str:
        who = (
            "b0" if z3.is_true(model.eval(b0 == b1, model_completion=True)) else "b1 (not stepped)"
        )
        return _violation_text(
            model, machine, ss, pre.at(b1), post.at(b1), f"transition {transition_label(t)}", who
        )

    return z3_valid(inv_term(machine, ss, post.at(b1)), backstop_s, describe, assumptions)


def check_stutter(machine: Machine, kind: str, backstop_s: float) -> Outcome:
    """Ignored (kind "ignored") or rejected ("rejected") pairs leave Inv intact."""
    ss = state_sort(machine)
    pairs = (
        machine.ignored
        if kind == "ignored"
        else tuple((r.state, r.event) for r in machine.rejections)
    )
    pre, post = block_consts(ss, "pre"), block_consts(ss, "post")
    outcomes = []
    for state, event in pairs:
        head = f"{kind} {event.value} on {state.name}"

        def describe(model: Any, head: str = head) -> str:
            return _violation_text(model, machine, ss, pre, post, head)

        outcomes.append(
            z3_valid(
                inv_term(machine, ss, post),
                backstop_s,
                describe,
                [inv_term(machine, ss, pre), stutter_term(machine, state, pre, post)],
            )
        )
    return _first_failure(outcomes)


# ------------------------------------------------------------------ non-vacuity


def check_nonvacuity(machine: Machine, backstop_s: float) -> Outcome:
    """Each row's Inv ∧ T is satisfiable, and each no-change pair's Inv ∧ state is."""
    ss = state_sort(machine)
    pre, post = block_consts(ss, "pre"), block_consts(ss, "post")
    inv = inv_term(machine, ss, pre)
    for t in machine.transitions:
        r = _sat([inv, transition_term(machine, t, pre, post)], backstop_s)
        if r != "sat":
            return _vacuous(
                r,
                f"transition {transition_label(t)}: Inv ∧ T is {r} "
                "(the row can never fire from a state satisfying Inv)",
            )
    pairs = list(machine.ignored) + [(r.state, r.event) for r in machine.rejections]
    for state, event in pairs:
        r = _sat([inv, pre.state == ss.consts[state]], backstop_s)
        if r != "sat":
            return _vacuous(r, f"{event.value} on {state.name}: Inv ∧ state is {r}")
    return proved()


def _vacuous(result: str, text: str) -> Outcome:
    if result == "unknown":
        return Outcome(Status.UNKNOWN, text)
    return refuted(text)


# ------------------------------------------------------------------ hooks


def check_hooks(
    machine: Machine, index: int, backstop_s: float, hook: HookFn | None = None
) -> Outcome:
    """Row `index`'s hook is called exactly when idleness flips, and it is the right one.

    Idleness is the flag's meaning in ref terms (resident ∧ ref in a flagged range,
    per the reference specs), so the claim ties the hook to the ref update, not to
    the flags it was derived from.
    """
    t = machine.transitions[index]
    ss = state_sort(machine)
    pre, post = block_consts(ss, "pre"), block_consts(ss, "post")
    h = resolve_hook(hook)(machine, t)
    resident = REFERENCE_MACHINES[machine.name]
    post_resident = z3.Or(
        *[
            post.state == ss.consts[s.state]
            for s in resident.states
            if s.resident and s.state in ss.consts
        ],
        z3.BoolVal(False),
    )
    flip = idle_term(machine, ss, pre) != idle_term(machine, ss, post)
    claims = {
        "list membership after the hook is idleness": post.in_list == idle_term(machine, ss, post),
        "a hook is called exactly on a flip": z3.BoolVal(h is not Hook.NONE) == flip,
        "the drop hook exactly when the block leaves residency": z3.Implies(
            flip, z3.BoolVal(h is Hook.DROP) == z3.Not(post_resident)
        ),
    }
    assumptions = [
        inv_term(machine, ss, pre),
        transition_term(machine, t, pre, post, hook),
    ]

    def describe(model: Any) -> str:
        failed = [n for n, c in claims.items() if z3.is_false(model.eval(c, model_completion=True))]
        return (
            f"transition {transition_label(t)} with hook {machine.hook_name(h)}: block b0 "
            f"pre {render_block(model, machine, ss, pre)} -> post "
            f"{render_block(model, machine, ss, post)}; violated: {', '.join(failed)}"
        )

    return z3_valid(z3.And(*claims.values()), backstop_s, describe, assumptions)


# ------------------------------------------------------------------ ghost ref counting


@dataclass(frozen=True)
class GhostCounter:
    """What a ref count counts, stated per event (not per row): in `counted` states
    the ref equals the ghost; elsewhere the ghost is 0."""

    name: str
    counted: tuple[State, ...]
    delta: Mapping[Event, int]
    clears: tuple[Event, ...]

    def after(self, event: Event, ghost: Any) -> Any:
        if event in self.clears:
            return z3.IntVal(0)
        return ghost + self.delta.get(event, 0)


GHOSTS: Mapping[str, GhostCounter] = {
    "cpu": GhostCounter(
        "loads",
        (CpuState.READY, CpuState.LOADING),
        {CpuEvent.LOAD_BEGIN: 1, CpuEvent.LOAD_END: -1},
        (CpuEvent.RESET,),
    ),
    "gpu": GhostCounter(
        "holders",
        (GpuState.FREE, GpuState.IN_USE),
        {GpuEvent.ALLOCATE: 1, GpuEvent.TOUCH: 1, GpuEvent.FREE: -1},
        (),
    ),
}


def _ghost_inv(ss: StateSort, g: GhostCounter, b: BlockTerms, ghost: Any) -> Any:
    counted = z3.Or(
        *[b.state == ss.consts[s] for s in g.counted if s in ss.consts], z3.BoolVal(False)
    )
    return z3.If(counted, b.ref == ghost, ghost == 0)


def check_ref_counts(machine: Machine, backstop_s: float) -> Outcome:
    """Initially and after every row, the ref count equals the ghost counter."""
    g = GHOSTS[machine.name]
    ss = state_sort(machine)
    pre, post = block_consts(ss, "pre"), block_consts(ss, "post")
    gpre, gpost = z3.Int(f"pre.{g.name}"), z3.Int(f"post.{g.name}")
    outcomes = []
    for s in machine.initial:
        spec = machine.spec(s)
        init = [pre.state == ss.consts[s], gpre == 0]
        if spec.resident and spec.ref_min is not None:
            init.append(pre.ref == spec.ref_min)

        def describe_init(model: Any, s: State = s) -> str:
            return f"initial {s.name}: {g.name}=0 but ref={model.eval(pre.ref)}"

        outcomes.append(z3_valid(_ghost_inv(ss, g, pre, gpre), backstop_s, describe_init, init))
    for t in machine.transitions:
        assumptions = [
            inv_term(machine, ss, pre),
            _ghost_inv(ss, g, pre, gpre),
            transition_term(machine, t, pre, post),
            gpost == g.after(t.event, gpre),
        ]

        def describe(model: Any, t: Transition = t) -> str:
            return (
                f"transition {transition_label(t)}: block b0 pre "
                f"{render_block(model, machine, ss, pre)} {g.name}="
                f"{model.eval(gpre, model_completion=True)} -> post "
                f"{render_block(model, machine, ss, post)} {g.name}="
                f"{model.eval(gpost, model_completion=True)}; violated: ref counts "
                f"{g.name}"
            )

        outcomes.append(z3_valid(_ghost_inv(ss, g, post, gpost), backstop_s, describe, assumptions))
        if outcomes[-1].status is not Status.PROVED:
            break
    return _first_failure(outcomes)


# ------------------------------------------------------------------ negative controls

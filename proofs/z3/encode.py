"""Z3 encodings generated from a lifecycle table (`model.lifecycle.Machine`).

Nothing here restates a lifecycle rule. Given a `Machine`, this module builds:

* an enumeration sort with one constant per declared state (`StateSort`);
* a block's terms: its state, an integer ref count and a boolean `in_list` (in the
  evictable list / free queue) -- as constants (`block_consts`) or, for an unbounded
  number of blocks, as functions over an uninterpreted `Block` sort (`Config`);
* `Z3_LOGIC`, the `model.invariants.Logic` over Z3 terms, so the block invariants
  written once in `model/invariants.py` are evaluated symbolically (`inv_term`);
* the transition relation `transition_term(machine, t, pre, post)` of one table row:
  source state, guard (`RefGuard.holds` applied to a Z3 term), target state, ref
  update (`RefUpdate.apply` applied to a Z3 term; "clear" leaves the ref
  unconstrained), and the derived hook's effect on `in_list` (FLAG_ON sets it,
  FLAG_OFF clears it, NONE keeps it; DROP is no call at all: the block leaves the
  list only because it leaves residency, so it clears `in_list` when the row's target
  is not resident and keeps it when it is); `stutter_term` for ignored and rejected
  (state, event) pairs; `step_term` / `rejects_term` for a whole event.

Every builder takes the machine (and optionally the hook derivation) as an argument,
so negative controls can pass a deliberately broken copy of the table.
The *invariant*, by contrast, is always the one of the reference machine
(`REFERENCE_MACHINES`: for the CPU the frozen copy of the table in
`proofs.base.frozen_spec`): a broken table is judged against the unbroken specification.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import z3

from evictable.model import lifecycle
from evictable.model.invariants import (
    BLOCK_INVARIANTS,
    GPU_BLOCK_INVARIANTS,
    BlockInvariant,
    BlockView,
    idle,
)
from evictable.model.lifecycle import (
    GPU_MACHINE,
    Event,
    Hook,
    Machine,
    Phase,
    RefUpdate,
    State,
    Transition,
)
from evictable.proofs.base.frozen_spec import CPU_SPEC

__all__ = [
    "REFERENCE_MACHINES",
    "Z3_LOGIC",
    "BlockTerms",
    "Config",
    "HookFn",
    "StateSort",
    "block_consts",
    "block_sort",
    "concrete_terms",
    "config",
    "hook_effect",
    "idle_term",
    "inv_term",
    "invariants_for",
    "rejects_term",
    "render_block",
    "resolve_hook",
    "state_sort",
    "step_term",
    "stutter_term",
    "transition_id",
    "transition_label",
    "transition_term",
    "violated",
]

HookFn = Callable[[Machine, Transition], Hook]
"""How a transition's hook is obtained: `model.lifecycle.derive_hook` (looked up when
called, so a test may patch it) unless a control passes a broken one."""


def resolve_hook(hook: HookFn | None) -> HookFn:
    """`hook`, or the table's own derivation `model.lifecycle.derive_hook`."""
    return hook if hook is not None else lifecycle.derive_hook


REFERENCE_MACHINES: Mapping[str, Machine] = {m.name: m for m in (CPU_SPEC, GPU_MACHINE)}
"""The unbroken tables: the specification a variant is judged by. The CPU table is the
frozen, versioned copy `proofs.base.frozen_spec.CPU_SPEC` (so a mutated
`model/lifecycle.py` never becomes its own reference); the GPU table is captured at
import."""

_INVARIANTS: Mapping[str, Mapping[str, BlockInvariant]] = {
    CPU_SPEC.name: BLOCK_INVARIANTS,
    GPU_MACHINE.name: GPU_BLOCK_INVARIANTS,
}


# ------------------------------------------------------------------ logic


def _bool(x: Any) -> Any:
    return z3.BoolVal(x) if isinstance(x, bool) else x


class Z3Logic:
    """`model.invariants.Logic` over Z3 terms."""

    def and_(self, *xs: Any) -> Any:
        return z3.And(*[_bool(x) for x in xs]) if xs else z3.BoolVal(True)

    def or_(self, *xs: Any) -> Any:
        return z3.Or(*[_bool(x) for x in xs]) if xs else z3.BoolVal(False)

    def not_(self, x: Any) -> Any:
        return z3.Not(_bool(x))

    def implies(self, a: Any, b: Any) -> Any:
        return z3.Implies(_bool(a), _bool(b))

    def iff(self, a: Any, b: Any) -> Any:
        return _bool(a) == _bool(b)

    def eq(self, a: Any, b: int) -> Any:
        return a == b

    def ge(self, a: Any, b: int) -> Any:
        return a >= b

    def le(self, a: Any, b: int) -> Any:
        return a <= b


Z3_LOGIC = Z3Logic()


# ------------------------------------------------------------------ sorts and terms


@dataclass(frozen=True)
class StateSort:
    """The enumeration sort of one machine's states."""

    machine_name: str
    sort: Any
    consts: Mapping[State, Any]

    def is_state(self, term: Any) -> Callable[[State], Any]:
        def test(s: State) -> Any:
            c = self.consts.get(s)
            return z3.BoolVal(False) if c is None else term == c

        return test

    def decode(self, value: Any) -> State:
        for s, c in self.consts.items():
            if z3.eq(value, c):
                return s
        raise ValueError(f"{value} is not a state of {self.machine_name}")


_SORTS: dict[tuple[str, tuple[str, ...]], StateSort] = {}


def state_sort(machine: Machine) -> StateSort:
    """The (cached) enumeration sort for `machine`'s declared states."""
    names = tuple(s.state.name for s in machine.states)
    key = (machine.name, names)
    if key not in _SORTS:
        suffix = "" if not any(k[0] == machine.name for k in _SORTS) else f"_{len(_SORTS)}"
        sort, consts = z3.EnumSort(f"{machine.name}_state{suffix}", list(names))
        _SORTS[key] = StateSort(
            machine.name, sort, {s.state: c for s, c in zip(machine.states, consts, strict=True)}
        )
    return _SORTS[key]


_BLOCK_SORT: list[Any] = []


def block_sort() -> Any:
    """The uninterpreted sort of blocks (unboundedly many)."""
    if not _BLOCK_SORT:
        _BLOCK_SORT.append(z3.DeclareSort("Block"))
    return _BLOCK_SORT[0]


@dataclass(frozen=True)
class BlockTerms:
    """One block as terms: its state, ref count and list/queue membership."""

    state: Any
    ref: Any
    in_list: Any

    def view(self, ss: StateSort) -> BlockView[Any, Any]:
        return BlockView(is_state=ss.is_state(self.state), ref=self.ref, in_list=self.in_list)


def block_consts(ss: StateSort, prefix: str) -> BlockTerms:
    """Fresh constants for one block."""
    return BlockTerms(
        z3.Const(f"{prefix}.state", ss.sort), z3.Int(f"{prefix}.ref"), z3.Bool(f"{prefix}.in_list")
    )


@dataclass(frozen=True)
class Config:
    """A configuration of unboundedly many blocks: state, ref, in_list as functions."""

    state: Any
    ref: Any
    in_list: Any

    def at(self, b: Any) -> BlockTerms:
        return BlockTerms(self.state(b), self.ref(b), self.in_list(b))

    def same_at(self, other: Config, b: Any) -> Any:
        return z3.And(
            self.state(b) == other.state(b),
            self.ref(b) == other.ref(b),
            self.in_list(b) == other.in_list(b),
        )


def config(ss: StateSort, prefix: str) -> Config:
    """Fresh functions `Block -> state / Int / Bool` named after `prefix`."""
    bs = block_sort()
    return Config(
        z3.Function(f"{prefix}.state", bs, ss.sort),
        z3.Function(f"{prefix}.ref", bs, z3.IntSort()),
        z3.Function(f"{prefix}.in_list", bs, z3.BoolSort()),
    )


def concrete_terms(ss: StateSort, phase: Phase, in_list: bool) -> BlockTerms:
    """Z3 values for a concrete block (a missing ref count is encoded as 0)."""
    return BlockTerms(
        ss.consts[phase.state],
        z3.IntVal(0 if phase.ref is None else phase.ref),
        z3.BoolVal(in_list),
    )


# ------------------------------------------------------------------ invariants


def invariants_for(machine: Machine) -> Mapping[str, BlockInvariant]:
    """The named block invariants of the reference machine with `machine`'s name."""
    return _INVARIANTS[machine.name]


def inv_term(machine: Machine, ss: StateSort, b: BlockTerms) -> Any:
    """The inductive invariant of one block: every named block invariant."""
    view = b.view(ss)
    return z3.And(*[_bool(inv(Z3_LOGIC, view)) for inv in invariants_for(machine).values()])


def idle_term(machine: Machine, ss: StateSort, b: BlockTerms) -> Any:
    """`model.invariants.idle` of the reference machine, on Z3 terms."""
    return _bool(idle(Z3_LOGIC, REFERENCE_MACHINES[machine.name], b.view(ss)))


def violated(model: Any, machine: Machine, ss: StateSort, b: BlockTerms) -> list[str]:
    """Names of the block invariants that `b` violates in `model`."""
    view = b.view(ss)
    return [
        name
        for name, inv in invariants_for(machine).items()
        if z3.is_false(model.eval(_bool(inv(Z3_LOGIC, view)), model_completion=True))
    ]


# ------------------------------------------------------------------ transitions


def _guard(t: Transition, ref: Any) -> Any:
    return _bool(t.guard.holds(ref))  # `holds` is polymorphic: a Z3 term in, a Z3 term out


def _update(update: RefUpdate, pre_ref: Any, post_ref: Any) -> Any:
    after = update.apply(pre_ref)  # None for "clear": the ref is left unconstrained
    return z3.BoolVal(True) if after is None else post_ref == after


def hook_effect(hook: Hook, pre_in_list: Any, resident_after: bool) -> Any:
    """`in_list` after the hook: FLAG_ON sets it, FLAG_OFF clears it, NONE keeps it.

    DROP calls nothing (`model.manager.ModelManager.call_hook`): the block leaves the
    list because it leaves residency (an eviction, a reset). So it clears `in_list`
    when the block is not resident after the row (`resident_after` False) and keeps
    it otherwise -- a resident flip misclassed as DROP leaves the block listed.
    """
    if hook is Hook.FLAG_ON:
        return z3.BoolVal(True)
    if hook is Hook.FLAG_OFF:
        return z3.BoolVal(False)
    if hook is Hook.DROP and not resident_after:
        return z3.BoolVal(False)
    return pre_in_list


def transition_term(
    machine: Machine,
    t: Transition,
    pre: BlockTerms,
    post: BlockTerms,
    hook: HookFn | None = None,
) -> Any:
    """One table row relates `pre` to `post` (source, guard, target, ref, hook)."""
    ss = state_sort(machine)
    return z3.And(
        pre.state == ss.consts[t.source],
        _guard(t, pre.ref),
        post.state == ss.consts[t.target],
        _update(t.update, pre.ref, post.ref),
        post.in_list
        == hook_effect(
            resolve_hook(hook)(machine, t), pre.in_list, machine.spec(t.target).resident
        ),
    )


def stutter_term(machine: Machine, state: State, pre: BlockTerms, post: BlockTerms) -> Any:
    """An ignored or rejected pair: the block is in `state` and nothing changes."""
    ss = state_sort(machine)
    return z3.And(
        pre.state == ss.consts[state],
        post.state == pre.state,
        post.ref == pre.ref,
        post.in_list == pre.in_list,
    )


def rejects_term(machine: Machine, event: Event, pre: BlockTerms) -> Any:
    """`event` on `pre` raises the table's named error."""
    ss = state_sort(machine)
    return z3.Or(
        *[pre.state == ss.consts[r.state] for r in machine.rejections if r.event is event],
        z3.BoolVal(False),
    )


def step_term(
    machine: Machine,
    event: Event,
    pre: BlockTerms,
    post: BlockTerms,
    hook: HookFn | None = None,
    include_rejected: bool = False,
) -> Any:
    """T(pre, event, post): a row for `event` fires, or the pair is ignored (no change).

    With `include_rejected`, a rejected pair also relates `pre` to an unchanged `post`
    (the call raises and changes nothing).
    """
    parts = [
        transition_term(machine, t, pre, post, hook)
        for t in machine.transitions
        if t.event is event
    ]
    parts += [stutter_term(machine, s, pre, post) for s, e in machine.ignored if e is event]
    if include_rejected:
        parts += [
            stutter_term(machine, r.state, pre, post)
            for r in machine.rejections
            if r.event is event
        ]
    return z3.Or(*parts, z3.BoolVal(False))


# ------------------------------------------------------------------ solving and rendering


def transition_id(t: Transition) -> str:
    """Stable name fragment, e.g. `load_end.LOADING->READY`."""
    return f"{t.event.value}.{t.source.name}->{t.target.name}"


def transition_label(t: Transition) -> str:
    """Readable name, e.g. `load_end LOADING->READY`."""
    return f"{t.event.value} {t.source.name}->{t.target.name}"


def render_block(model: Any, machine: Machine, ss: StateSort, b: BlockTerms) -> str:
    """`{state=LOADING, ref=1, in_list=False}` as `model` assigns it."""
    state = ss.decode(model.eval(b.state, model_completion=True))
    reference = REFERENCE_MACHINES[machine.name]
    resident = all(s.resident for s in reference.states if s.state is state)
    ref = model.eval(b.ref, model_completion=True).as_long() if resident else "—"
    listed = z3.is_true(model.eval(b.in_list, model_completion=True))
    return f"{{state={state.name}, ref={ref}, in_list={listed}}}"

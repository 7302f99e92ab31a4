"""The outcome of one call as the relation's literals, and why the relation refuses it.

`manager.ManagerOracle` judges a call by assuming its pre-state, inputs and observed
outcome in the call's shape (`manager_shape.Shape`); this module turns the outcome
-- the refusal and its reason, or the reply -- into literals of the shape's step
(`outcome_literals`), and, when the relation refuses the call, solves again without
the observations to name the fields where the code differs from the one outcome
the relation admits (`diagnose`).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import z3

from evictable.model.errors import DuplicateKeysError
from evictable.model.lifecycle import CpuState
from evictable.proofs.base.compare import Reply
from evictable.proofs.refine.manager_shape import Shape
from evictable.proofs.refine.policy_shape import policy_victims
from evictable.proofs.z3.manager_ops import event_of
from evictable.proofs.z3.manager_state import SS
from evictable.proofs.z3.solver import check, unknown

__all__ = ["CallValues", "diagnose", "outcome_literals"]

Term = Any


@dataclass
class CallValues:
    """One call in a shape's terms: the key numbering and the values to assume."""

    op: str
    keys: list[Hashable]
    victims: list[Hashable]
    supplied: bool
    index: dict[Hashable, int]
    names: dict[int, str]
    pre: dict[str, Any] = field(default_factory=dict)
    post: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------ the outcome


def outcome_literals(shape: Shape, call: CallValues, reply: Reply) -> list[Term] | str:
    """The refusal and its reason, or the reply, as literals (or why they cannot be)."""
    step, keys = shape.step, call.keys
    if reply.raised:
        err = reply.value
        lits = [step.rejected]
        if isinstance(err, DuplicateKeysError):
            return [*lits, step.duplicate]
        if err.event is None or err.state is None or not err.keys:
            return f"it raised {type(err).__name__} ({err}), which is no refusal of the table"
        key = err.keys[0]
        if key not in call.index or key not in keys:
            return f"it raised {type(err).__name__} for {key!r}, which is not in the call"
        first = keys.index(key)
        state = call.pre[f"state[{call.index[key]}]"]
        row = shape.machine.rejection(state, event_of(call.op))
        if row is None or type(err) is not row.error or err.state != state.name:
            want = row.error.__name__ if row is not None else "no error"
            return (
                f"it raised {type(err).__name__} for {key!r} in {err.state}; {key!r} is "
                f"{state.name}, for which the table names {want}"
            )
        return [
            *lits,
            z3.Not(step.duplicate),
            *[z3.Not(t) for t in step.refused[:first]],
            step.refused[first],
        ]
    lits = [z3.Not(step.rejected)]
    value = reply.value
    n = len(keys)
    if call.op == "prepare_store":
        if value is None:
            return [*lits, step.branches["returns None: no victims supplied"]]
        stored = {k: i for i, k in enumerate(value.keys_to_store)}
        if list(value.keys_to_store) != [k for k in keys if k in stored]:
            return f"it stores {value.keys_to_store!r}, not keys of the call in input order"
        if len(value.slot_ids) != len(value.keys_to_store):
            return f"it answered {len(value.slot_ids)} slots for {len(stored)} keys to store"
        acting = step.actors[shape.batch :]
        for i, k in enumerate(keys):
            lits.append(acting[i].active if k in stored else z3.Not(acting[i].active))
            if k in stored:
                lits.append(shape.slot_of_key(i) == value.slot_ids[stored[k]])
        used = len(call.victims)
        lits += [
            a.active if j < used else z3.Not(a.active)
            for j, a in enumerate(step.actors[: shape.batch])
        ]
        return lits
    if call.op.startswith("complete_store"):
        acted = list(value) if isinstance(value, list) else None
        if acted is None or acted != [k for k in keys if k in set(acted)]:
            return f"it answered {value!r}, not a list of the call's keys in input order"
        return lits + [
            step.actors[i].active if k in acted else z3.Not(step.actors[i].active)
            for i, k in enumerate(keys)
        ]
    if call.op == "prepare_load":
        if not isinstance(value, list) or len(value) != n:
            return f"it answered {value!r}, not one slot per key"
        return lits + [shape.slot_of_key(i) == value[i] for i in range(n)]
    if value is not None:
        return f"it returned {value!r}; {call.op} returns None"
    return lits


# ------------------------------------------------------------------ diagnosis


def diagnose(shape: Shape, call: CallValues, given: list[Term], reply: Reply) -> str:
    """Why the relation refuses the observed outcome: the fields that differ from the
    outcome it admits for this pre-state and these inputs (or that it admits none)."""
    s = shape.solver
    r = check(s, *given)
    if r == z3.unknown:
        raise RuntimeError(f"{call.op}: the relation was not decided: {unknown(s).detail}")
    if r != z3.sat:
        instead = ""
        if shape.policy is not None and call.op == "prepare_store":
            free = shape.input_literals(call.keys, [], False, call.index, with_victims=False)
            lits = [*shape.pre_literals(call.pre), *(free or [])]
            obs = (call.victims, call.supplied)
            said = policy_victims(
                s, shape.step, shape.choice, lits, obs, call.names, shape.policy.step
            )
            instead = f"; {said}"
        if call.op == "prepare_store" and call.supplied:
            return (
                f"no step of it evicts exactly {call.victims!r} (victims are distinct "
                "listed keys outside the batch, as many as the keys to store exceed the "
                f"free slots){instead}"
            )
        if call.op == "prepare_store" and instead:
            return f"it returned None{instead}"
        if call.op == "prepare_store":
            return "it returned None, but the relation needs no victim here"
        return "the relation admits no step from this state (it is not total here)"
    model = s.model()

    def value(t: Term) -> Any:
        v = model.eval(t, model_completion=True)
        if z3.is_true(v) or z3.is_false(v):
            return z3.is_true(v)
        if z3.is_int_value(v):
            return v.as_long()
        if z3.is_rational_value(v):
            return float(v.as_fraction())
        return SS.decode(v)

    broken = [n for n, t in shape.invariant.items() if value(t) is False]
    if broken:
        return f"the state before the call violates the proved invariant ({', '.join(broken)})"
    step = shape.step
    rejected = value(step.rejected)
    if rejected != reply.raised:
        if rejected:
            return "the relation refuses the call, the code accepted it"
        return f"the relation accepts the call, the code raised {type(reply.value).__name__}"
    diffs = [
        f"{_label(n, call.names)}: the relation {_show(value(t))}, the code {_show(call.post[n])}"
        for n, t in shape.observed.items()
        if value(t) != call.post[n]
    ]
    if diffs:
        return "; ".join(diffs[:4])
    if rejected:
        return f"the relation refuses it for another reason than {type(reply.value).__name__}"
    theirs = _relation_reply(shape, call, value)
    return f"the reply {reply.describe()} is not the relation's ({theirs})"


def _relation_reply(shape: Shape, call: CallValues, value: Any) -> str:
    step, keys = shape.step, call.keys
    if call.op == "prepare_store":
        if value(step.branches["returns None: no victims supplied"]):
            return "None"
        acting = step.actors[shape.batch :]
        stored = [i for i in range(len(keys)) if value(acting[i].active)]
        evicted = sum(1 for a in step.actors[: shape.batch] if value(a.active))
        return (
            f"stores {[keys[i] for i in stored]!r} in slots "
            f"{[value(shape.slot_of_key(i)) for i in stored]!r}, evicts {evicted}"
        )
    if call.op.startswith("complete_store"):
        return f"acts on {[k for i, k in enumerate(keys) if value(step.actors[i].active)]!r}"
    if call.op == "prepare_load":
        return f"slots {[value(shape.slot_of_key(i)) for i in range(len(keys))]!r}"
    return "None"


def _label(name: str, names: dict[int, str]) -> str:
    if "[" in name and not name.startswith("stack"):
        what, index = name[:-1].split("[")
        return f"{what} of {names.get(int(index), index)}"
    return name


def _show(value: Any) -> str:
    return value.name if isinstance(value, CpuState) else repr(value)

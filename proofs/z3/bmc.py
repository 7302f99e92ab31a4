"""Symbolic bounded model checking of the manager relation (Apalache-style).

From a fresh manager with N slots over M keys, every sequence of up to K operations
-- each one any public operation (`manager_ops.OPS`) on any batch of up to B of the
M keys, with any choice the policy may make (which victims, or none) -- is encoded
at once: one copy of the state per depth, and at each depth a symbolic choice of
operation and inputs (`proofs.z3.manager_ops.relation` in a `BoundedWorld`, the same
relation the unbounded proofs use). Z3 is asked, depth by depth, for a sequence whose
last state breaks the manager-level invariant (with real counts here: counters =
counts, residents <= capacity) or whose last call breaks its operation's claims;
the depth reached without one is reported. A sequence found is printed as a trace
of calls, the shortest one (every shorter depth was refuted first).

The negative control runs the same search on the project's seeded bugs restated as
relation variants (`SEEDED_VARIANTS`); each must come back as a counterexample trace.
Seeded bugs about recency order (`forward_touch`) or slot reuse order
(`fifo_slot_reuse`) keep every invariant and are left to `eviction.*` / `slots.*`;
faults in policy hooks (`no_policy_rollback_on_fault`) are not part of the relation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import z3

from evictable.model import lifecycle
from evictable.model.lifecycle import CpuEvent, Machine
from evictable.proofs.base.records import (
    Outcome,
    Status,
    check_deadline,
    proved,
    refuted,
)
from evictable.proofs.z3.manager_ops import (
    MANAGER,
    OPS,
    Choice,
    Step,
    Variant,
    choice,
    relation,
)
from evictable.proofs.z3.manager_render import render_key
from evictable.proofs.z3.manager_state import (
    BoundedWorld,
    MState,
    conj,
    initial_facts,
    invariant,
)
from evictable.proofs.z3.solver import check, unknown
from evictable.proofs.z3.solver import lia_solver as new_solver

__all__ = [
    "Bmc",
    "bmc",
]

Term = Any


@dataclass(frozen=True)
class Bmc:
    """The bounds of one search: slots, keys, batch size, depth."""

    slots: int
    keys: int
    batch: int
    depth: int

    def describe(self) -> str:
        return (
            f"{self.slots} slots, {self.keys} keys, batches of <= {self.batch}, "
            f"every sequence of <= {self.depth} calls"
        )


@dataclass
class _Layer:
    op: Term
    c: Choice
    steps: list[Step]
    post: MState


def _render_call(model: Any, layer: _Layer) -> str:
    op = OPS[model.eval(layer.op, model_completion=True).as_long()]
    n = model.eval(layer.c.n, model_completion=True).as_long()
    keys = [f"k{model.eval(k, model_completion=True)}" for k in layer.c.keys[:n]]
    if op == "reset_cache":
        return "reset_cache()"
    flag = ", success=False" if op.endswith("failure") else ""
    text = f"{op.split('.')[0]}([{', '.join(keys)}]{flag})"
    step = layer.steps[OPS.index(op)]
    victims = [
        f"k{model.eval(a.key, model_completion=True)}"
        for a in step.actors
        if a.event is CpuEvent.EVICT and z3.is_true(model.eval(a.active, model_completion=True))
    ]
    if victims:
        text += f" evicting [{', '.join(victims)}]"
    rejected = z3.is_true(model.eval(step.rejected, model_completion=True))
    return text + (" -> rejected" if rejected else "")


def _render_state(model: Any, world: BoundedWorld, m: MState) -> str:
    keys = ", ".join(f"k{i}={render_key(model, m, i)}" for i in range(world.keys))
    ev = model.eval(m.num_evictable, model_completion=True)
    pend = model.eval(m.num_pending, model_completion=True)
    return f"{{{keys}; num_evictable={ev}, num_pending={pend}}}"


def bmc(
    bounds: Bmc,
    backstop_s: float,
    machine: Machine | None = None,
    variant: Variant = MANAGER,
) -> Outcome:
    """Search every sequence of up to `bounds.depth` calls; see the module docstring."""
    machine = machine if machine is not None else lifecycle.CPU_MACHINE
    world = BoundedWorld(bounds.keys, bounds.slots)
    solver = new_solver(backstop_s)
    state = world.fresh("s0")
    solver.add(*initial_facts(world, state, machine))
    # Fields without meaning in a fresh manager get one value (fewer equivalent models).
    solver.add(*[z3.And(state.ref(k) == 0, state.slot(k) == 0) for k in range(world.keys)])
    solver.add(
        *[
            z3.And(state.owner(s) == 0, state.stack(s) == 0, state.pos(s) == -1)
            for s in range(world.slots)
        ]
    )
    layers: list[_Layer] = []
    times: list[str] = []
    start = time.perf_counter()
    for depth in range(bounds.depth + 1):
        check_deadline(f"bmc at depth {depth}")
        claims = dict(invariant(world, state))
        if layers:
            last = layers[-1]
            for i, step in enumerate(last.steps):
                for name, claim in step.claims.items():
                    claims[f"{step.op}: {name}"] = z3.Implies(last.op == i, claim)
        solver.push()
        solver.add(z3.Not(conj(list(claims.values()))))
        r = check(solver)
        if r == z3.sat:
            model = solver.model()
            failed = [
                n for n, c in claims.items() if z3.is_false(model.eval(c, model_completion=True))
            ]
            trace = [f"{i + 1}. {_render_call(model, layer)}" for i, layer in enumerate(layers)]
            return refuted(
                f"a sequence of {depth} calls breaks {', '.join(failed)}: "
                + ("; ".join(trace) or "(the initial state)")
                + f"; final state {_render_state(model, world, state)}"
            )
        if r == z3.unknown:
            return unknown(solver, f"bmc at depth {depth} (depth {depth - 1} holds)")
        solver.pop()
        solver.add(*claims.values())
        times.append(f"{time.perf_counter() - start:.1f}s")
        if depth == bounds.depth:
            break
        op = z3.Int(f"d{depth + 1}.op")
        c, facts = choice(world, f"d{depth + 1}.in", bounds.batch)
        post = world.fresh(f"s{depth + 1}")
        solver.add(op >= 0, op < len(OPS), *facts)
        # Inputs a call does not use are fixed (symmetry: they would only multiply models).
        solver.add(*[z3.Implies(c.n <= i, k == 0) for i, k in enumerate(c.keys)])
        ps = OPS.index("prepare_store")
        solver.add(z3.Implies(op != ps, z3.And(z3.Not(c.supplied), *[v == 0 for v in c.victims])))
        steps = []
        for i, name in enumerate(OPS):
            step = relation(world, machine, name, state, c, f"d{depth + 1}.{name}", variant)
            solver.add(z3.Implies(op == i, z3.And(*step.facts, post.same_as(step.post))))
            steps.append(step)
        layers.append(_Layer(op, c, steps, post))
        state = post
    # Not vacuous: a sequence of `depth` calls keeping every claim exists (a relation
    # that refuses every step would otherwise prove the search by making it empty).
    r = check(solver)
    if r == z3.unsat:
        return Outcome(
            Status.VACUOUS,
            f"no sequence of {bounds.depth} calls exists: the relation admits none (vacuous)",
        )
    if r == z3.unknown:
        return unknown(solver, f"bmc's vacuity check at depth {bounds.depth}")
    return proved(f"depth {bounds.depth} reached (cumulative: {', '.join(times)})")

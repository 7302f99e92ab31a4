"""Z3 obligations: incremental counters match the number of blocks in their state.

A machine declares counters (`Machine.counters`, e.g. `num_evictable` counts READY
blocks) and `model.lifecycle.counter_delta` says how one row changes each counter.
`<m>.counters.<name>` proves, for K symbolic blocks (K grows with the level), that if
the counter equals the number of blocks in its state, and any subset of the blocks
each take any row of the table at once (a batch: `prepare_store` evicting and
storing, `complete_store` over many keys, `reset` on all) while the rest stay, then
the counter plus the sum of the rows' deltas equals the new number of blocks in
that state. The negative control zeroes one row's delta (a missed counter update).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import z3

from evictable.model import lifecycle
from evictable.model.lifecycle import Machine, Transition, counter_delta
from evictable.proofs.obligations import Kind, Obligation, Outcome
from evictable.proofs.registry import Level
from evictable.proofs.z3.encode import (
    BlockTerms,
    StateSort,
    block_consts,
    inv_term,
    render_block,
    state_sort,
    transition_label,
    transition_term,
)
from evictable.proofs.z3.solver import z3_valid

__all__ = ["BLOCKS", "DeltaFn", "check_counter_batch", "check_counter_step", "obligations"]

DeltaFn = Callable[[Machine, Transition], dict[str, int]]

BLOCKS: dict[str, int] = {"quick": 3, "default": 5, "thorough": 6}
"""K, the number of symbolic blocks, per level."""


def _one_block(
    machine: Machine,
    ss: StateSort,
    pre: BlockTerms,
    post: BlockTerms,
    choice: Any,
    name: str,
    delta: DeltaFn,
) -> tuple[list[Any], Any]:
    """One block satisfying Inv either stays (choice 0) or takes row `choice - 1`.

    Returns the constraints and the block's contribution to the counter's delta.
    """
    rows = machine.transitions
    stays = z3.And(
        choice == 0, post.state == pre.state, post.ref == pre.ref, post.in_list == pre.in_list
    )
    moves = [
        z3.And(choice == j + 1, transition_term(machine, t, pre, post)) for j, t in enumerate(rows)
    ]
    contribution = z3.Sum(
        [z3.If(choice == j + 1, delta(machine, t)[name], 0) for j, t in enumerate(rows)]
    )
    return [inv_term(machine, ss, pre), z3.Or(stays, *moves)], contribution


def _render_moves(
    model: Any,
    machine: Machine,
    ss: StateSort,
    name: str,
    delta: DeltaFn,
    blocks: list[tuple[str, BlockTerms, BlockTerms, Any]],
) -> list[str]:
    """Moved blocks, those whose delta disagrees with their state change first."""
    counted = machine.counters[name]
    wrong: list[str] = []
    right: list[str] = []
    for label, pre, post, choice in blocks:
        c = model.eval(choice, model_completion=True).as_long()
        if c == 0:
            continue
        t = machine.transitions[c - 1]
        actual = int(t.target is counted) - int(t.source is counted)
        given = delta(machine, t)[name]
        line = (
            f"block {label}: transition {transition_label(t)} (delta {name} {given:+d}"
            f"{'' if given == actual else f', but #{counted.name} changes by {actual:+d}'})"
            f" pre {render_block(model, machine, ss, pre)}"
            f" -> post {render_block(model, machine, ss, post)}"
        )
        (right if given == actual else wrong).append(line)
    return wrong + right


def check_counter_step(
    machine: Machine,
    name: str,
    timeout_s: float,
    delta: DeltaFn = counter_delta,
) -> Outcome:
    """Unbounded, by induction on the number of blocks in a batch.

    For a set X of blocks already accounted for (`pre_X + delta_X == post_X`, the
    induction hypothesis; X empty is the base case, 0 + 0 == 0) and one more block b
    that stays or takes any row, the counter still matches over X ∪ {b}.
    """
    ss = state_sort(machine)
    counted = ss.consts[machine.counters[name]]
    pre, post = block_consts(ss, "pre.b"), block_consts(ss, "post.b")
    choice = z3.Int("row.b")
    pre_x, post_x, delta_x = z3.Ints(f"{name}.pre_X {name}.post_X delta_X")
    constraints, contribution = _one_block(machine, ss, pre, post, choice, name, delta)

    def count(b: BlockTerms) -> Any:
        return z3.If(b.state == counted, 1, 0)

    claim = (pre_x + count(pre)) + (delta_x + contribution) == post_x + count(post)

    def describe(model: Any) -> str:
        moves = _render_moves(model, machine, ss, name, delta, [("b", pre, post, choice)])
        return (
            f"counter {name}: adding block b to an accounted batch breaks "
            f"pre + deltas = #{machine.counters[name].name} after; violated: "
            f"counter_matches; " + "; ".join(moves or ["block b stays"])
        )

    return z3_valid(claim, timeout_s, describe, [*constraints, pre_x + delta_x == post_x])


def check_counter_batch(
    machine: Machine,
    name: str,
    blocks: int,
    timeout_s: float,
    delta: DeltaFn = counter_delta,
) -> Outcome:
    """Counter `name` stays equal to the number of blocks in its state over a batch step
    of `blocks` symbolic blocks (a bounded cross-check of `check_counter_step`)."""
    ss = state_sort(machine)
    counted = ss.consts[machine.counters[name]]
    pre = [block_consts(ss, f"pre{i}") for i in range(blocks)]
    post = [block_consts(ss, f"post{i}") for i in range(blocks)]
    choice = [z3.Int(f"row{i}") for i in range(blocks)]  # 0: stays; j >= 1: row j-1
    assumptions: list[Any] = []
    contributions: list[Any] = []
    for i in range(blocks):
        cs, contribution = _one_block(machine, ss, pre[i], post[i], choice[i], name, delta)
        assumptions.extend(cs)
        contributions.append(contribution)

    def count(bs: list[BlockTerms]) -> Any:
        return z3.Sum([z3.If(b.state == counted, 1, 0) for b in bs])

    before = z3.Int(f"{name}.pre")
    assumptions.append(before == count(pre))
    after = before + z3.Sum(contributions)

    def describe(model: Any) -> str:
        head = (
            f"counter {name}: {model.eval(before)} + deltas = "
            f"{model.eval(after, model_completion=True)}, but "
            f"{model.eval(count(post), model_completion=True)} blocks are "
            f"{machine.counters[name].name} after the step; violated: counter_matches"
        )
        moves = _render_moves(
            model,
            machine,
            ss,
            name,
            delta,
            [(str(i), pre[i], post[i], choice[i]) for i in range(blocks)],
        )
        return "; ".join([head, *moves])

    return z3_valid(after == count(post), timeout_s, describe, assumptions)


def _missed_update(name: str) -> DeltaFn:
    """A delta function that forgets the first non-zero update of `name`."""

    def broken(machine: Machine, t: Transition) -> dict[str, int]:
        d = counter_delta(machine, t)
        first = next(r for r in machine.transitions if counter_delta(machine, r)[name] != 0)
        if t is first:
            d[name] = 0
        return d

    return broken


def obligations(level: Level) -> list[Obligation]:
    """Per declared counter of each machine: the unbounded step and a K-block batch."""
    k = BLOCKS[level]
    out: list[Obligation] = []
    for m in (lifecycle.CPU_MACHINE, lifecycle.GPU_MACHINE):
        for name, state in m.counters.items():
            first = next(r for r in m.transitions if counter_delta(m, r)[name] != 0)
            broken = _missed_update(name)
            control = f"{transition_label(first)} forgetting its {name} update is refuted"
            out.append(
                Obligation(
                    f"{m.name}.counters.{name}",
                    f"{name} + Σ counter_delta = #blocks in {state.name} after any batch step "
                    "(induction on the number of blocks: unbounded)",
                    partial(_step, m, name, counter_delta),
                    partial(_step, m, name, broken),
                    control,
                    kind=Kind.UNBOUNDED,
                )
            )
            out.append(
                Obligation(
                    f"{m.name}.counters.{name}.batch",
                    f"the same for {k} symbolic blocks stepping at once (bounded cross-check)",
                    partial(_batch, m, name, k, counter_delta),
                    partial(_batch, m, name, k, broken),
                    control,
                    kind=Kind.BOUNDED,
                    bounds=f"{k} blocks",
                )
            )
    return out


def _step(m: Machine, name: str, delta: DeltaFn, timeout_s: float) -> Outcome:
    return check_counter_step(m, name, timeout_s, delta)


def _batch(m: Machine, name: str, k: int, delta: DeltaFn, timeout_s: float) -> Outcome:
    return check_counter_batch(m, name, k, timeout_s, delta)

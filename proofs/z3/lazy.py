"""A bounded Z3 check of the lazy cursor finding: pool operations between two steps.

From *any* state (not only reachable ones) with N blocks in which the pool
invariant holds (linked ⇔ ref_cnt 0), the cursor is valid and scan completeness
holds, apply any K pool operations (allocate the front block, touch, free -- back
if hashed, front if not --, cache a block in use with new content). Claim: scan
completeness holds afterwards, for the walk start the validation rule picks.

* generation validation: proved for every K up to the bound (it is in fact
  inductive: the check is a bounded unrolling of it);
* ref-count-only validation: a counterexample -- the cursor block allocated,
  cached and freed, so it is linked again with ref_cnt 0 and a newer stamp.

Positions are integers (allocation takes the linked block with the least one,
appending takes `hi` and prepending `lo`), stamps come from a counter, and each
block carries "needs offload" (hashed, content not on the CPU tier) and "visited
at its current link". This is the same claim the explorer checks on reachable
states, stated here for arbitrary ones; both are needed: the explorer covers the
scanner's own steps, this covers every starting point.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evictable.model.lazy_offload import Validation
from evictable.proofs.base.records import Outcome, Status, proved
from evictable.proofs.z3.solver import z3_sat, z3_valid

__all__ = [
    "pool_ops_keep_scan_complete",
]

OPS = ("allocate", "touch", "free", "cache")


@dataclass
class _State:
    linked: list[Any]
    ref: list[Any]
    pos: list[Any]
    stamp: list[Any]
    hashed: list[Any]
    need: list[Any]
    visited: list[Any]
    gen: Any
    lo: Any
    hi: Any


def _z3() -> Any:
    import z3

    return z3


def _state(z3: Any, n: int, i: int) -> _State:
    def vec(name: str, sort: Callable[[str], Any]) -> list[Any]:
        return [sort(f"{name}_{i}_{b}") for b in range(n)]

    return _State(
        linked=vec("linked", z3.Bool),
        ref=vec("ref", z3.Int),
        pos=vec("pos", z3.Int),
        stamp=vec("stamp", z3.Int),
        hashed=vec("hashed", z3.Bool),
        need=vec("need", z3.Bool),
        visited=vec("visited", z3.Bool),
        gen=z3.Int(f"gen_{i}"),
        lo=z3.Int(f"lo_{i}"),
        hi=z3.Int(f"hi_{i}"),
    )


def _well_formed(z3: Any, s: _State, n: int) -> list[Any]:
    out = []
    for b in range(n):
        out += [
            s.ref[b] >= 0,
            s.linked[b] == (s.ref[b] == 0),
            z3.Implies(s.need[b], s.hashed[b]),
            z3.Implies(
                s.linked[b],
                z3.And(s.lo < s.pos[b], s.pos[b] < s.hi, s.stamp[b] >= 0, s.stamp[b] < s.gen),
            ),
        ]
        for c in range(b + 1, n):
            both = z3.And(s.linked[b], s.linked[c])
            out.append(z3.Implies(both, z3.And(s.pos[b] != s.pos[c], s.stamp[b] != s.stamp[c])))
    return out


def _complete_after(z3: Any, s: _State, n: int, cursor: Any) -> Any:
    """Every linked block at or before the cursor that needs offloading was visited."""
    return z3.And(
        *[
            z3.Implies(
                z3.And(
                    s.linked[b],
                    s.need[b],
                    z3.Or(*[z3.And(cursor == c, s.pos[b] <= s.pos[c]) for c in range(n)]),
                ),
                s.visited[b],
            )
            for b in range(n)
        ]
    )


def _step(z3: Any, a: _State, b: _State, n: int, op: Any, t: Any) -> Any:
    """One pool operation `op` on block `t` (an If-chain over block indices)."""
    cases = []
    for x in range(n):
        same = [j for j in range(n) if j != x]

        def frame(fields: tuple[str, ...], x: int = x, same: list[int] = same) -> list[Any]:
            return [getattr(b, f)[j] == getattr(a, f)[j] for f in fields for j in same]

        every = ("linked", "ref", "pos", "stamp", "hashed", "need", "visited")
        keep_x = {f: getattr(b, f)[x] == getattr(a, f)[x] for f in every}
        keep_globals = [b.gen == a.gen, b.lo == a.lo, b.hi == a.hi]
        front = z3.And(a.linked[x], *[z3.Implies(a.linked[j], a.pos[x] <= a.pos[j]) for j in same])
        allocate = z3.And(
            front,
            b.linked[x] == False,  # noqa: E712
            b.ref[x] == 1,
            b.hashed[x] == False,  # noqa: E712
            b.need[x] == False,  # noqa: E712
            keep_x["pos"],
            keep_x["stamp"],
            keep_x["visited"],
            *frame(every),
            *keep_globals,
        )
        touch = z3.And(
            b.ref[x] == a.ref[x] + 1,
            b.linked[x] == False,  # noqa: E712
            keep_x["pos"],
            keep_x["stamp"],
            keep_x["hashed"],
            keep_x["need"],
            keep_x["visited"],
            *frame(every),
            *keep_globals,
        )
        relink = a.ref[x] == 1
        free = z3.And(
            a.ref[x] >= 1,
            b.ref[x] == a.ref[x] - 1,
            keep_x["hashed"],
            keep_x["need"],
            z3.If(
                relink,
                z3.And(
                    b.linked[x],
                    b.stamp[x] == a.gen,
                    b.gen == a.gen + 1,
                    b.visited[x] == False,  # noqa: E712
                    z3.If(
                        a.hashed[x],
                        z3.And(b.pos[x] == a.hi, b.hi == a.hi + 1, b.lo == a.lo),
                        z3.And(b.pos[x] == a.lo, b.lo == a.lo - 1, b.hi == a.hi),
                    ),
                ),
                z3.And(
                    keep_x["linked"],
                    keep_x["pos"],
                    keep_x["stamp"],
                    keep_x["visited"],
                    *keep_globals,
                ),
            ),
            *frame(every),
        )
        cache = z3.And(
            a.ref[x] >= 1,
            z3.Not(a.hashed[x]),
            b.hashed[x],
            b.need[x],
            keep_x["linked"],
            keep_x["ref"],
            keep_x["pos"],
            keep_x["stamp"],
            keep_x["visited"],
            *frame(every),
            *keep_globals,
        )
        cases.append(
            z3.And(
                t == x,
                z3.Or(
                    z3.And(op == 0, allocate),
                    z3.And(op == 1, touch),
                    z3.And(op == 2, free),
                    z3.And(op == 3, cache),
                ),
            )
        )
    return z3.Or(*cases)


_System = tuple[list[_State], list[Any], list[Any], Any, Any, list[Any]]


def _system(z3: Any, n: int, k: int) -> _System:
    states = [_state(z3, n, i) for i in range(k + 1)]
    ops = [z3.Int(f"op_{i}") for i in range(k)]
    targets = [z3.Int(f"t_{i}") for i in range(k)]
    cursor, gen0 = z3.Int("cursor"), z3.Int("cursor_gen")
    s0 = states[0]
    facts = [*_well_formed(z3, s0, n), z3.And(cursor >= 0, cursor < n)]
    for c in range(n):
        facts.append(
            z3.Implies(cursor == c, z3.And(s0.linked[c], s0.stamp[c] == gen0, s0.visited[c]))
        )
    facts.append(_complete_after(z3, s0, n, cursor))
    for i in range(k):
        facts += [
            ops[i] >= 0,
            ops[i] < len(OPS),
            targets[i] >= 0,
            targets[i] < n,
            _step(z3, states[i], states[i + 1], n, ops[i], targets[i]),
        ]
    return states, ops, targets, cursor, gen0, facts


def _claim(z3: Any, s: _State, n: int, cursor: Any, gen0: Any, validation: Validation) -> Any:
    at = [cursor == c for c in range(n)]
    if validation is Validation.GENERATION:
        resumes = z3.Or(*[z3.And(at[c], s.linked[c], s.stamp[c] == gen0) for c in range(n)])
        return z3.Implies(resumes, _complete_after(z3, s, n, cursor))
    in_use = z3.Or(*[z3.And(at[c], s.ref[c] > 0) for c in range(n)])
    linked = z3.Or(*[z3.And(at[c], s.linked[c]) for c in range(n)])
    whole = z3.And(*[z3.Implies(z3.And(s.linked[b], s.need[b]), s.visited[b]) for b in range(n)])
    return z3.If(in_use, True, z3.If(linked, _complete_after(z3, s, n, cursor), whole))


def pool_ops_keep_scan_complete(
    n: int, k: int, validation: Validation
) -> Callable[[float], Outcome]:
    """The bounded check for N blocks and up to K pool operations between two steps."""

    def run(backstop_s: float) -> Outcome:
        z3 = _z3()
        out = proved()
        for steps in range(1, k + 1):
            states, ops, targets, cursor, gen0, facts = _system(z3, n, steps)
            alive = z3_sat(facts, backstop_s, f"the {steps}-operation unrolling")
            if alive.status is not Status.PROVED:
                return alive
            claim = _claim(z3, states[-1], n, cursor, gen0, validation)

            def describe(
                m: Any,
                states: list[_State] = states,
                ops: list[Any] = ops,
                targets: list[Any] = targets,
                cursor: Any = cursor,
            ) -> str:
                return _describe(m, states, ops, targets, cursor, n)

            out = z3_valid(claim, backstop_s, describe, facts)
            if out.status is not Status.PROVED:
                return out
        return out

    return run


def _describe(
    m: Any, states: list[_State], ops: list[Any], targets: list[Any], cursor: Any, n: int
) -> str:
    def queue(s: _State) -> str:
        linked = [b for b in range(n) if m.eval(s.linked[b], model_completion=True)]
        linked.sort(key=lambda b: m.eval(s.pos[b], model_completion=True).as_long())
        cells = []
        for b in linked:
            need = "!" if m.eval(s.need[b], model_completion=True) else ""
            seen = "+" if m.eval(s.visited[b], model_completion=True) else ""
            cells.append(f"{b}{need}{seen}")
        return "[" + " ".join(cells) + "]"

    c = m.eval(cursor, model_completion=True).as_long()
    lines = [
        f"cursor on block {c}; queue front to back (! needs offload, + visited)",
        f"   before: {queue(states[0])}",
    ]
    for i, (op, t) in enumerate(zip(ops, targets, strict=True)):
        name = OPS[m.eval(op, model_completion=True).as_long()]
        block = m.eval(t, model_completion=True).as_long()
        ref = m.eval(states[i + 1].ref[block], model_completion=True)
        lines.append(f"{i + 1:>3}. {name}({block}) -> ref {ref}: {queue(states[i + 1])}")
    return "\n".join(lines)

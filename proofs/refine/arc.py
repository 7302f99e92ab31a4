"""The ARC model's steps against the per-key relations Z3 proves inductive.

`relation_edge_check(relations)` is an edge check for the ARC exploration
(`explore.arc`): the model's step, key by key, must satisfy its event's relation of
`z3.arc` (evaluated in Python, `model.invariants.PY_LOGIC`). It is the bridge from
the Z3 induction over the relations to the executable model.
"""

from __future__ import annotations

from typing import Any

from evictable.model.invariants import PY_LOGIC
from evictable.model.types import Key
from evictable.proofs.explore.arc_search import Edge, EdgeCheck
from evictable.proofs.z3.arc import KeyView, Params, Relation

__all__ = ["relation_edge_check"]


def _py_view(w: Any, key: Key) -> KeyView:
    pol = w.policy
    ref = w.ref_of(key)
    return KeyView(
        key in pol.t1,
        key in pol.t2,
        key in pol.b1,
        key in pol.b2,
        ref is not None,
        -9 if ref is None else ref,
    )


def _event_of(e: Edge) -> tuple[str, int | None]:
    if e.is_evict:
        return "evict", None
    name, _, key = e.label.partition(" ")
    return name, int(key) if key else None


def relation_edge_check(relations: dict[str, Relation]) -> EdgeCheck:
    """An explorer edge check: the model's step satisfies its event's relation, per key."""

    def check(e: Edge, capacity: int) -> str | None:
        event, x = _event_of(e)
        victims = set(e.victims or ())
        keys: set[Key] = {k for w in (e.pre, e.post) for k, _ in w.refs}
        for w in (e.pre, e.post):
            keys |= {*w.policy.t1, *w.policy.t2, *w.policy.b1, *w.policy.b2}
        for key in sorted(keys | ({x} if x is not None else set()), key=repr):
            k, n = _py_view(e.pre, key), _py_view(e.post, key)
            victim = key in victims
            p = Params(
                is_x=key == x,
                victim=victim,
                trim1=(k.b1 or (victim and k.t1)) and not n.b1,
                trim2=(k.b2 or (victim and not k.t1)) and not n.b2,
            )
            if not relations[event](PY_LOGIC, k, n, p):
                return f"step `{e.label}` is not a `{event}` step for key {key}: {k} -> {n}"
        return None

    return check

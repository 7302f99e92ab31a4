"""The pieces the fold lemmas are built from (`proofs.z3.manager_fold` for the
one-fold operations, `proofs.z3.manager_fold_store` for `prepare_store`): a part of a
lemma, symbolic counts of a call, and comparisons of counts and of one key's fields."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

import z3

from evictable.proofs.z3.counter_rules import CallCounts
from evictable.proofs.z3.manager_state import MState

__all__ = ["Part", "all_zero", "same_counts", "same_key", "symbolic_counts"]

Term = Any

Part = tuple[dict[str, Term], list[Term], Callable[[Any], str]]
"""One part of a lemma: its claims, its assumptions, a renderer of a counterexample."""


def symbolic_counts(prefix: str) -> CallCounts:
    """Any counts of a call so far (one integer constant per field)."""
    return CallCounts(*(z3.Int(f"{prefix}.{f.name}") for f in fields(CallCounts)))


def same_counts(a: CallCounts, b: CallCounts) -> Term:
    return z3.And(*[getattr(a, f.name) == getattr(b, f.name) for f in fields(CallCounts)])


def all_zero(a: CallCounts) -> Term:
    return z3.And(*[getattr(a, f.name) == 0 for f in fields(CallCounts)])


def same_key(a: MState, b: MState, x: Term) -> Term:
    """Key `x` has the same block fields and slot in `a` and `b`."""
    return z3.And(
        a.state(x) == b.state(x),
        a.ref(x) == b.ref(x),
        a.listed(x) == b.listed(x),
        a.slot(x) == b.slot(x),
    )

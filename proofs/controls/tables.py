"""Deliberately broken lifecycle tables, and variants bound to the encodings.

A table mutant is a copy of `CPU_MACHINE` with one realistic change -- the kinds of
mistake the table's author could make -- built with `dataclasses.replace`, so it
bypasses `lifecycle.validate` (each would be rejected at import, which is exactly
why the proofs must catch them on their own). `TABLE_MUTANTS` names one per class:
a rejection turned into a no-op or into a transition, a dead row, a wrong target, a
wrong ref effect, a dropped hook (the last is a broken hook derivation, not a table).
"""

from __future__ import annotations

import dataclasses

from evictable.model.lifecycle import (
    CpuEvent,
    CpuState,
    Machine,
    RefGuard,
    RefUpdate,
    Transition,
)

__all__ = ["dead_row_table"]


def dead_row_table(machine: Machine) -> Machine:
    """`machine` with `evict` on LOADING a row (LOADING -> ABSENT) instead of a rejection.

    The manager evicts only the policy's victims, which are listed, so the row can
    never fire: a dead row.
    """
    row = Transition(
        CpuEvent.EVICT, CpuState.LOADING, CpuState.ABSENT, RefGuard.ANY, RefUpdate("clear")
    )
    rejections = tuple(
        r
        for r in machine.rejections
        if not (r.event is CpuEvent.EVICT and r.state is CpuState.LOADING)
    )
    return dataclasses.replace(
        machine, transitions=(*machine.transitions, row), rejections=rejections
    )

"""The obligations of `z3.lifecycle`, each paired with its negative control."""

from __future__ import annotations

from evictable.model import lifecycle
from evictable.model.lifecycle import (
    Machine,
)
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Obligation
from evictable.proofs.z3.lifecycle import machine_obligations


def _machines() -> tuple[Machine, ...]:
    return (lifecycle.CPU_MACHINE, lifecycle.GPU_MACHINE)


def obligations(level: Level) -> list[Obligation]:
    """The lifecycle obligations of both tables (unbounded: the same at every level)."""
    del level  # unbounded proofs: nothing to scale
    out: list[Obligation] = []
    for m in _machines():
        out.extend(machine_obligations(m))
    return out

"""`rows.coverage.*`: every row of both lifecycle tables is executed by the model;
the control is a table with a dead row.
"""

from __future__ import annotations

from typing import ClassVar

from evictable.model.lifecycle import CPU_MACHINE, GPU_MACHINE
from evictable.model.machine import Machine
from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation
from evictable.proofs.controls.tables import dead_row_table, gpu_dead_row_table
from evictable.proofs.explore.coverage import (
    GPU_MAX_REF,
    RecordingModel,
    check_coverage,
    check_gpu_coverage,
)

BOUNDS: dict[str, Bounds] = {
    level: Bounds(slots=1, keys=2, max_ref=2, batch=2) for level in ("quick", "default")
} | {"thorough": Bounds(slots=2, keys=3, max_ref=2, batch=2)}
"""Small worlds suffice: one slot forces evictions, ref 2 reaches load_end LOADING->LOADING."""


class DeadRowModel(RecordingModel):
    """The recording model over a table where `evict` on LOADING is a (dead) row."""

    machine: ClassVar[Machine] = dead_row_table(CPU_MACHINE)


GPU_BLOCKS: dict[str, int] = {"quick": 3, "default": 3, "thorough": 4}
"""Pool size (the null block included) of `rows.coverage.gpu`."""


def obligations(level: Level) -> list[Obligation]:
    """`rows.coverage` (CPU table) and `rows.coverage.gpu` (GPU table)."""
    bounds = BOUNDS[level]
    blocks = GPU_BLOCKS[level]
    return [
        Obligation(
            "rows.coverage",
            "the explorer fires every transition of the CPU table and every rejection of an "
            "event the caller chooses keys for (evict's, sent only to listed victims, never)",
            lambda _t: check_coverage(bounds, RecordingModel),
            lambda _t: check_coverage(bounds, DeadRowModel),
            "a table with a dead row (evict on LOADING a row) is refuted",
            tags=("explore",),
            kind=Kind.EXPLORED,
            bounds=bounds.describe(),
        ),
        Obligation(
            "rows.coverage.gpu",
            "every reachable state of a model block pool fires every transition of the GPU "
            "table and every rejection of a caller-chosen event (allocate's never)",
            lambda _t: check_gpu_coverage(blocks),
            lambda _t: check_gpu_coverage(blocks, gpu_dead_row_table(GPU_MACHINE)),
            "a GPU table where allocating an in-use block is a row (never executed) is refuted",
            tags=("explore", "gpu"),
            kind=Kind.EXPLORED,
            bounds=f"a pool of {blocks} blocks (the null block included), refs <= {GPU_MAX_REF}",
        ),
    ]

"""`bridge.*`: the Z3 relations hold on the code's own steps (per block, the free
queue), each with a broken variant. (Per manager call, with the counters:
`refine_manager`.)
"""

from __future__ import annotations

from functools import partial

from evictable.model.lifecycle import (
    CPU_MACHINE,
    GPU_MACHINE,
    Machine,
    step,
)
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import (
    Kind,
    Obligation,
    Outcome,
)
from evictable.proofs.controls.gpu import SEEDED_QUEUES
from evictable.proofs.controls.tables import MissesMarkEvictableOnLoadEnd, step_ignoring_guards
from evictable.proofs.explore.coverage import RecordingModel
from evictable.proofs.refine.bridges import (
    REF_BOUND,
    StepFn,
    check_block_bridge,
    check_free_queue,
)

QUEUE_BLOCKS: dict[str, int] = {"quick": 3, "default": 3, "thorough": 4}
"""K, the blocks of `bridge.free_queue`."""


class _MissesMarkEvictable(RecordingModel, MissesMarkEvictableOnLoadEnd):
    """The recording model over the broken one (`controls.tables`)."""


def _block(machine: Machine, step_fn: StepFn, _backstop_s: float) -> Outcome:
    return check_block_bridge(machine, step_fn)


def obligations(level: Level) -> list[Obligation]:
    """The per-block and free-queue bridges at `level`'s bounds."""
    k = QUEUE_BLOCKS[level]
    broken_queue = SEEDED_QUEUES["prepend_n_reversed"]
    out = [
        Obligation(
            f"bridge.block.{m.name}",
            f"every phase (ref <= {REF_BOUND}) and event of the {m.name} table: the executed "
            "step satisfies the Z3 relation T, and no perturbed step does",
            partial(_block, m, step),
            partial(_block, m, step_ignoring_guards),
            "a step that ignores the ref guards is refuted",
            kind=Kind.EXPLORED,
            bounds=f"every phase with ref <= {REF_BOUND}, every event",
        )
        for m in (CPU_MACHINE, GPU_MACHINE)
    ]
    out += [
        Obligation(
            "bridge.free_queue",
            f"every queue of <= {k} blocks and every operation: the Z3 queue operations "
            "give the queue impl/free_queue.py leaves",
            lambda _t: check_free_queue(k),
            lambda _t: check_free_queue(k, broken_queue),
            "a queue whose prepend_n reverses its blocks is refuted",
            kind=Kind.EXPLORED,
            bounds=f"every queue of <= {k} blocks, every operation",
        ),
    ]
    return out

"""`probe.free_queue`: the free queue where the model cannot follow (sentinels,
handed-back blocks, corrupted links), with seeded broken queues.
"""

from __future__ import annotations

from collections.abc import Callable

from evictable.impl.free_queue import FreeKVCacheBlockQueue
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation, Outcome, proved, refuted
from evictable.proofs.lockstep.queue_probes import CORRUPTIONS, N, QueueFactory, queue_probe


def obligations(level: Level) -> list[Obligation]:
    """`probe.free_queue` (the same at every level: the catalogues run whole), whose
    negative control is the seeded queue whose iterator ends silently."""
    from evictable.proofs.controls.gpu import SEEDED_QUEUES

    def check(factory: QueueFactory) -> Callable[[float], Outcome]:
        def run(_backstop_s: float) -> Outcome:
            why = queue_probe(factory)
            return proved("every case holds") if why is None else refuted(why)

        return run

    return [
        Obligation(
            name="probe.free_queue",
            statement=(
                "the queue refuses its own sentinels, hands back blocks without links, "
                "and on a list corrupted through the blocks' links raises only its own "
                "errors, its bounded observers naming the defect"
            ),
            check=check(FreeKVCacheBlockQueue),
            negative=check(SEEDED_QUEUES["iterator_ends_silently"]),
            negative_statement="the probe catches a queue whose iterator ends silently",
            tags=("probe", "gpu"),
            kind=Kind.TESTED,
            bounds=(
                f"{N} linked blocks: 2 sentinels x 6 calls, {N * 2 + 1} takes, "
                f"{len(CORRUPTIONS)} corruptions x {9 + 2 * N} calls"
            ),
        )
    ]

"""The GPU side under a contract: what the safety contract compares of a free queue
or a block pool.

Used by the lock-step GPU machines (`lockstep.gpu`) and the lazy scanner's contract
search (`explore.lazy_contract`).
"""

from __future__ import annotations

from typing import Any

from evictable.model.block_pool import BlockPoolSnapshot
from evictable.model.free_queue import FreeQueueSnapshot

__all__ = ["project"]


def project(value: Any) -> Any:
    """A GPU-side state without this project's link generations (what the safety
    contract compares: queue order, counts, ref counts, hashes)."""
    if isinstance(value, FreeQueueSnapshot):
        return FreeQueueSnapshot(value.order, (), value.num_free_blocks)
    if isinstance(value, BlockPoolSnapshot):
        return BlockPoolSnapshot(
            value.num_blocks,
            value.enable_caching,
            value.ref_cnts,
            value.block_hashes,
            project(value.free_queue),
            value.cached,
        )
    if isinstance(value, tuple):
        return tuple(project(v) for v in value)
    return value

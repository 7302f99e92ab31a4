"""The executable specification: the lifecycle as data and small reference models.

    from evictable.model import CPU_MACHINE, CpuEvent, CpuState, Phase, step
    step(CPU_MACHINE, Phase(CpuState.LOADING, 1), CpuEvent.LOAD_END)  # READY, ref 0

* the lifecycle tables (`CPU_MACHINE`, `GPU_MACHINE`), their states and events, and
  `step` (one event on one block, or the table's named error);
* the reference models: `ModelManager` (the CPU offloading manager, with `ModelLru`
  and `ModelArc`), `ModelFreeQueue`, `ModelBlockPool`, `ModelLazyOffload`, and
  `ModelTiering` (the tiering orchestrator, with `TieringConfig` and `TierSpec`);
* the result and snapshot types (`LookupResult`, `PrepareStoreOutput`,
  `OffloadingEvent`, `ManagerSnapshot`, ...) shared with `evictable.impl`.

Standard library only. docs/semantics.md says what every operation does; docs/spec.md
shows the tables and diagrams generated from `model/lifecycle.py`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evictable.model.arc import ModelArc
    from evictable.model.block_pool import ModelBlockPool
    from evictable.model.free_queue import ModelFreeQueue
    from evictable.model.lazy_offload import ModelLazyOffload
    from evictable.model.lifecycle import (
        CPU_MACHINE,
        GPU_MACHINE,
        CpuEvent,
        CpuState,
        GpuEvent,
        GpuState,
        Phase,
        step,
    )
    from evictable.model.lru import ModelLru
    from evictable.model.manager import ModelManager
    from evictable.model.tiering import ModelTiering
    from evictable.model.tiering_types import TieringConfig, TieringSnapshot, TierSpec
    from evictable.model.types import (
        BlockId,
        Key,
        LookupResult,
        ManagerSnapshot,
        OffloadingEvent,
        PrepareStoreOutput,
        SlotId,
    )

_HOME: dict[str, str] = {
    "ModelArc": "evictable.model.arc",
    "ModelBlockPool": "evictable.model.block_pool",
    "ModelFreeQueue": "evictable.model.free_queue",
    "ModelLazyOffload": "evictable.model.lazy_offload",
    "CPU_MACHINE": "evictable.model.lifecycle",
    "GPU_MACHINE": "evictable.model.lifecycle",
    "CpuEvent": "evictable.model.lifecycle",
    "CpuState": "evictable.model.lifecycle",
    "GpuEvent": "evictable.model.lifecycle",
    "GpuState": "evictable.model.lifecycle",
    "Phase": "evictable.model.lifecycle",
    "step": "evictable.model.lifecycle",
    "ModelLru": "evictable.model.lru",
    "ModelManager": "evictable.model.manager",
    "ModelTiering": "evictable.model.tiering",
    "TierSpec": "evictable.model.tiering_types",
    "TieringConfig": "evictable.model.tiering_types",
    "TieringSnapshot": "evictable.model.tiering_types",
    "BlockId": "evictable.model.types",
    "Key": "evictable.model.types",
    "LookupResult": "evictable.model.types",
    "ManagerSnapshot": "evictable.model.types",
    "OffloadingEvent": "evictable.model.types",
    "PrepareStoreOutput": "evictable.model.types",
    "SlotId": "evictable.model.types",
}
"""Where each name lives; imported on first use, so importing this package costs
nothing (the `TYPE_CHECKING` imports above say the same for type checkers)."""

__all__ = [
    "CPU_MACHINE",
    "GPU_MACHINE",
    "BlockId",
    "CpuEvent",
    "CpuState",
    "GpuEvent",
    "GpuState",
    "Key",
    "LookupResult",
    "ManagerSnapshot",
    "ModelArc",
    "ModelBlockPool",
    "ModelFreeQueue",
    "ModelLazyOffload",
    "ModelLru",
    "ModelManager",
    "ModelTiering",
    "OffloadingEvent",
    "Phase",
    "PrepareStoreOutput",
    "SlotId",
    "TierSpec",
    "TieringConfig",
    "TieringSnapshot",
    "step",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'evictable.model' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # the next access is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})

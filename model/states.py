"""The states and events of the two block lifecycles (names only; rules are in `lifecycle`)."""

from __future__ import annotations

import enum

__all__ = ["CpuEvent", "CpuState", "Event", "GpuEvent", "GpuState", "State"]


class CpuState(enum.Enum):
    ABSENT = "ABSENT"
    PENDING = "PENDING"
    READY = "READY"
    LOADING = "LOADING"


class CpuEvent(enum.Enum):
    STORE_BEGIN = "store_begin"
    STORE_COMMIT = "store_commit"
    STORE_ABORT = "store_abort"
    LOAD_BEGIN = "load_begin"
    LOAD_END = "load_end"
    EVICT = "evict"
    TOUCH = "touch"
    RESET = "reset"


class GpuState(enum.Enum):
    FREE = "FREE"
    IN_USE = "IN_USE"
    NULL = "NULL"


class GpuEvent(enum.Enum):
    ALLOCATE = "allocate"
    TOUCH = "touch"
    FREE = "free"


State = CpuState | GpuState
Event = CpuEvent | GpuEvent

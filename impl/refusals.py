"""The errors of the manager's refused calls, read from the lifecycle table.

A manager call that finds a key in a state the table does not allow for the call's
event (a load of a PENDING key, a load end of a READY one) raises the error the
table names for that pair (`evictable.model.lifecycle.step`), so the model and the
implementation refuse with the same error, the same key, event, state and reason.
Nothing here is on a hot path: it runs once per refused call.
"""

from __future__ import annotations

from evictable.impl.block import BlockStatus
from evictable.model.errors import InvariantViolationError, LifecycleError
from evictable.model.lifecycle import CPU_MACHINE, CpuEvent, CpuState, Phase, step
from evictable.model.types import Key

__all__ = ["refusal", "state_of_ref"]

_ABSENT = Phase(CpuState.ABSENT, None)


def state_of_ref(ref: int) -> CpuState:
    """The resident state whose declared ref range admits `ref` (from the table).

    Pre: none. Post: the state; `InvariantViolationError` ("state_admits_ref") when
    no resident state admits `ref`. Complexity: O(states).
    """
    for spec in CPU_MACHINE.states:
        if spec.resident and spec.admits(ref):
            return spec.state  # type: ignore[return-value]
    raise InvariantViolationError(["state_admits_ref"], f"no state admits ref {ref}")


def refusal(key: Key, block: BlockStatus | None, event: CpuEvent) -> LifecycleError:
    """The table's error for `event` on `key` (the caller found the pair refused).

    Pre: `block` is the key's record (None when absent). Post: the error to raise
    (an `InvariantViolationError` if the table would in fact allow the pair).
    Complexity: O(states).
    """
    phase = _ABSENT if block is None else Phase(state_of_ref(block.ref_cnt), block.ref_cnt)
    try:
        step(CPU_MACHINE, phase, event, key)
    except LifecycleError as error:
        return error
    return InvariantViolationError(["state_admits_ref"], f"{event.value} of {key!r} at {phase}")

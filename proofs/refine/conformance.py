"""The proved manager relation as an observer of every conformance step.

`RefinementObserver` is a `lockstep.observer.StepObserver`: on every call the
lock-step conformance engine makes -- ordinary steps, calls with a policy hook
armed to raise, on the model and on the implementation -- it asks the
`refine.manager.ManagerOracle` whether the call, from the snapshot before it to the
snapshot after it, is the one step the relation admits (a call that raised an
injected fault must have changed nothing). It also holds each side's snapshots
continuous: the state a call starts from is the state the side's previous call left
(a copy taken in between must equal its original).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evictable.model.types import ManagerSnapshot
from evictable.proofs.base.compare import Reply
from evictable.proofs.refine.manager import ManagerOracle

__all__ = ["RefinementObserver"]


class RefinementObserver:
    """Judges each side's calls by the manager relation (see the module docstring)."""

    def __init__(self, oracle: ManagerOracle | None = None, max_batch: int = 4) -> None:
        self.oracle = oracle if oracle is not None else ManagerOracle()
        self.max_batch = max_batch
        """Longer calls are left to the lock-step comparison (and counted: `longer`):
        the relation of a call grows with its batch, and the engine draws batches of
        dozens of keys to test argument checks."""
        self._last: dict[str, ManagerSnapshot] = {}
        self.steps = 0
        """Calls judged by the relation, both sides counted."""
        self.longer = 0
        """Calls with more than `max_batch` keys, not judged by the relation."""

    def figures(self) -> str:
        """What the observer did, for a record's detail."""
        o = self.oracle
        return (
            f"{self.steps} calls judged by the manager relation ({o.checks} solver checks, "
            f"{o.shapes} shapes), {self.longer} calls of more than {self.max_batch} keys "
            "left to the comparison"
        )

    def start(self) -> None:
        self._last.clear()

    def step(
        self,
        side: str,
        method: str,
        args: Sequence[Any],
        kwargs: dict[str, Any],
        reply: Reply,
        before: ManagerSnapshot,
        after: ManagerSnapshot,
    ) -> str | None:
        last = self._last.get(side)
        self._last[side] = after
        if last is not None and last != before:
            return (
                f"{side}'s state changed between two calls (the call starts from another "
                "state than the previous call left)"
            )
        raw = args[0] if args else kwargs.get("keys", ())
        if isinstance(raw, (list, tuple)) and len(raw) > self.max_batch:
            self.longer += 1
            return None
        self.steps += 1
        why = self.oracle.judge(method, args, kwargs, reply, before, after)
        return None if why is None else f"{side}: {why}"

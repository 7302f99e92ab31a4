"""What a lock-step run tells an observer of every call (`LockStep.observer`).

The conformance engine compares model and implementation with each other; an
observer holds each side, on its own, to something else -- the refinement of the
proved manager relation (`proofs.refine.conformance`). It sees every call made on
either side with the full snapshots around it, and its verdict ends the example
like any other finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from evictable.model.types import ManagerSnapshot
from evictable.proofs.base.compare import Reply

__all__ = ["StepObserver"]


class StepObserver(Protocol):
    """Judges each side's calls; one instance per run, told when an example starts."""

    def start(self) -> None:
        """A new example: both sides were just built."""

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
        """None, or why `side`'s call (`reply`, from `before` to `after`) is wrong."""

"""The record describing one seeded bug, and how a broken policy becomes a factory."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.policies.base import CachePolicy
from evictable.impl.policies.factory import policy_scope
from evictable.proofs.base.protocol import Factory

__all__ = ["TARGETS", "SeededBug", "with_policy"]

TARGETS: tuple[str, ...] = ("manager", "queue", "pool", "scanner")
"""What a seeded bug breaks, which decides the engines that hunt it."""


@dataclass(frozen=True)
class SeededBug:
    """A named, deliberately broken implementation and how to run the engines on it.

    `target` says what it is: a CPU manager (`factory(num_blocks, policy,
    enable_events)`, checked with `policy`), a free queue (`factory(blocks)`), a
    block pool (`factory(num_blocks)`) or a lazy offload scanner (a
    `LazyOffloadScanner` subclass: `factory(pool, window, capacity)`). `faults`
    says whether the engines must inject policy-hook faults (bugs that only show when
    a policy raises). `klass` names the kind of miss it stands for (see
    `proofs.controls.catalogue.CLASSES`).
    """

    name: str
    summary: str
    factory: Callable[..., Any]
    faults: bool = False
    target: str = "manager"
    policy: str = "lru"
    klass: str = "baseline"
    long_history: str = ""
    """Why no trace of at most `hunt.MAX_CALLS` calls can show this bug (empty: one
    can). The hunt then accepts a catch with a longer trace."""


def with_policy(base: str, registered: str, cls: type[CachePolicy]) -> Factory:
    """A factory of unmodified managers that use the broken policy `cls` wherever
    `base` is asked for (other names pass through, so unknown names are still
    refused). `cls` is known as `registered` only while the factory constructs a
    manager (`policy_scope`): nothing is registered, and the manager resolves its
    policy's name in its constructor only."""

    def factory(num_blocks: int, policy: str, enable_events: bool) -> CPUOffloadingManager:
        with policy_scope({registered: cls}):
            return CPUOffloadingManager(
                num_blocks, registered if policy == base else policy, enable_events
            )

    factory.__qualname__ = factory.__name__ = f"with_{registered.replace('-', '_')}"
    return factory

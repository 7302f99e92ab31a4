"""The record describing one seeded bug."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["BUDGET", "SEED", "SeededBug", "assert_engine_catches"]

BUDGET = {"examples": 400, "steps": 40}
"""An upper bound on one run, not its expected cost."""

SEED = 20261129
"""Fixed: the suite is reproducible (CI derandomizes as well)."""


@dataclass(frozen=True)
class SeededBug:
    """A named, deliberately broken implementation and how to run the engine on it.

    `factory(num_blocks, policy, enable_events)` builds the broken manager. `faults`
    says whether the engine should inject policy-hook faults: needed for bugs that
    only show when a policy raises, off for bugs on the LRU fast path (a
    fault-injecting policy is a subclass, which takes the generic path).
    """

    name: str
    summary: str
    factory: Callable[[int, str, bool], Any]
    faults: bool = False


def assert_engine_catches(bug: SeededBug, policy: str) -> None:
    """Run the conformance engine on `bug` and require a divergence with a trace.

    Prints (see it with `pytest -s`) in which example and after how many steps the
    bug was caught and the length of the shortened trace.
    """
    from evictable.proofs.lockstep.conformance import run_conformance

    record = run_conformance(
        bug.factory, policy, seed=SEED, inject_faults=bug.faults, **BUDGET
    )
    print(
        f"\n{bug.name}: caught in example {record.first_failure_example} after "
        f"{record.first_failure_steps} steps ({record.seconds:.2f}s incl. shrinking); "
        f"shortest trace {len(record.trace.splitlines())} lines: {record.reason}"
    )
    assert record.status == "failed", record.text()
    assert record.first_failure_example is not None
    assert record.trace.startswith("m = factory(")

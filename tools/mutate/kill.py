"""The kill command: the project's engines (never the unit tests) against one mutant.

`checks_for(path)` lists the engine runs that decide a mutant of an `impl/` file,
fastest first; `kill(path)` runs them in order and returns the first finding (the
mutant is *killed*) or None (it *survived*). Budgets are small -- a mutant that
breaks anything usually breaks it at once -- and every run is one the project's
obligations make at a larger budget:

* CPU side (`block`, `slots`, `manager`, `policies/*`): the exhaustive explorer at
  the quick bounds (and, for the LRU, the `check` bounds, where one call evicts
  several blocks), the explorer with the fault alphabet, the conformance engine,
  the long run -- for the policies the file concerns -- and two negative controls
  (a non-atomic manager, a manager without policy rollback) that must still be
  refuted: a mutant that makes an engine vacuous is killed too.
* GPU side (`free_queue`, `block_pool`, `lazy_offload`): the GPU explorers and the
  lazy explorer (implementation judged on every edge) at the quick bounds, the
  lock-step machines, and seeded variants that must still be caught.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["checks_for", "kill"]

Check = tuple[str, Callable[[], str | None]]


def _explore(
    policy: str, level: str, faults: bool = False, variant: str = ""
) -> Callable[[], str | None]:
    def run() -> str | None:
        from evictable.proofs.base import own_table
        from evictable.proofs.base.profiles import profile
        from evictable.proofs.explore.manager import explore

        p = profile(policy)
        bounds = p.faults[level] if faults else p.explore[level] if level != "check" else p.check
        factory = {
            "": None,
            "own": own_table.OwnTableManager,
            "plain": own_table.PlainPolicyManager,
        }[variant]
        out = explore(bounds, factory, workers=1)
        return None if out.ok else out.summary().splitlines()[-1 if out.failure is None else 1]

    return run


def _conformance(policy: str, variant: str = "") -> Callable[[], str | None]:
    def run() -> str | None:
        from evictable.impl.manager import CPUOffloadingManager
        from evictable.proofs.base import own_table
        from evictable.proofs.lockstep.conformance import run_conformance

        factory: Any = {
            "": CPUOffloadingManager,
            "own": own_table.OwnTableManager,
            "plain": own_table.PlainPolicyManager,
        }[variant]
        rec = run_conformance(
            factory, policy, 60, 30, seed=0, shrink_replays=50, require_copies=True
        )
        return (
            None if rec.ok else f"{rec.status}: {rec.reason.splitlines()[0] if rec.reason else ''}"
        )

    return run


def _long_run(policy: str) -> Callable[[], str | None]:
    def run() -> str | None:
        from evictable.impl.manager import CPUOffloadingManager
        from evictable.proofs.lockstep.long_run import long_run

        out = long_run(CPUOffloadingManager, policy, 2000, 0, 5, 4, shrink_replays=10)
        return None if out.ok else out.text().splitlines()[1]

    return run


def _cpu_controls() -> str | None:
    """Controls that must still be refuted (else the engines went vacuous)."""
    from dataclasses import replace

    from evictable.proofs.controls.manager import NoPolicyRollbackOnFault, non_atomic_complete_load
    from evictable.proofs.explore.manager import CONTROL_BOUNDS, explore

    if explore(CONTROL_BOUNDS, non_atomic_complete_load, workers=1).failure is None:
        return "control: the non-atomic manager was not caught"
    faulty = replace(CONTROL_BOUNDS, faults=True)
    if explore(faulty, NoPolicyRollbackOnFault, workers=1).failure is None:
        return "control: the manager without policy rollback was not caught"
    return None


def _probes() -> str | None:
    from evictable.impl.manager import CPUOffloadingManager
    from evictable.proofs.lockstep.probes import (
        construct_probe,
        evict_contract_probe,
        registry_probe,
    )

    return (
        construct_probe(CPUOffloadingManager)
        or evict_contract_probe(CPUOffloadingManager)
        or registry_probe()
    )


def _policy_probe(policy: str) -> Callable[[], str | None]:
    def run() -> str | None:
        from evictable.proofs.lockstep.policy_probe import policy_probe

        return policy_probe(policy)

    return run


def _lazy_fixed() -> str | None:
    from evictable.proofs.explore.lazy_fixed import BOUNDS, FIXED, fixed_capacity_search

    for k in FIXED:
        out = fixed_capacity_search(BOUNDS, k)
        if not out.ok:
            return out.found.reason if out.found else "incomplete"
    return None


def _lazy_two_hashes() -> str | None:
    """Two hash values (as the thorough bounds): an offloaded block can follow one the
    capacity stops at."""
    from evictable.proofs.explore.lazy import Bounds
    from evictable.proofs.explore.lazy_impl import lockstep_search

    out = lockstep_search(Bounds(num_blocks=2, window=1, hashes=("a", "b"), capacities=(0, 1)))
    return None if out.ok else out.found.reason if out.found else "incomplete"


def _queue_probe() -> str | None:
    from evictable.proofs.lockstep.queue_probes import queue_probe

    return queue_probe()


def _gpu_explore(which: str) -> Callable[[], str | None]:
    def run() -> str | None:
        from evictable.proofs.explore.gpu import (
            POOL_BOUNDS,
            QUEUE_BOUNDS,
            PoolSubject,
            QueueSubject,
            explore_gpu,
            trace_text,
        )

        subject = (
            QueueSubject(QUEUE_BOUNDS["quick"])
            if which == "queue"
            else PoolSubject(POOL_BOUNDS["quick"])
        )
        out = explore_gpu(subject)
        return None if out.ok else trace_text(out).splitlines()[0]

    return run


def _lazy_explore() -> str | None:
    from evictable.proofs.explore.lazy_cursor import BOUNDS
    from evictable.proofs.explore.lazy_impl import lockstep_search

    for bounds in BOUNDS["quick"]:
        out = lockstep_search(bounds)
        if not out.ok:
            return out.found.reason if out.found else "incomplete"
    return None


def _machine(which: str) -> Callable[[], str | None]:
    def run() -> str | None:
        from evictable.proofs.base.records import Status
        from evictable.proofs.lockstep.gpu_machines import pool_machine, queue_machine, run_machine
        from evictable.proofs.lockstep.lazy_machine import lazy_machine

        makers: dict[str, Callable[[], Any]] = {
            "queue": queue_machine,
            "pool": pool_machine,
            "lazy": lazy_machine,
        }
        machine = makers[which]()
        out = run_machine(machine, 40, 30, shrink=False)
        return None if out.status is Status.PROVED else out.counterexample.splitlines()[0]

    return run


def _gpu_controls() -> str | None:
    from evictable.proofs.controls.gpu import SEEDED_POOLS, SEEDED_QUEUES
    from evictable.proofs.controls.scanners import SEEDED_SCANNERS
    from evictable.proofs.explore.gpu import (
        POOL_BOUNDS,
        QUEUE_BOUNDS,
        PoolSubject,
        QueueSubject,
        explore_gpu,
    )
    from evictable.proofs.explore.lazy_cursor import BOUNDS
    from evictable.proofs.explore.lazy_impl import lockstep_search

    for name in ("iterator_ends_silently", "cursor_checked_by_link_only"):
        if explore_gpu(QueueSubject(QUEUE_BOUNDS["quick"], SEEDED_QUEUES[name])).found is None:
            return f"control: seeded queue {name} was not caught"
    if (
        explore_gpu(PoolSubject(POOL_BOUNDS["quick"], SEEDED_POOLS["touch_skips_queue"])).found
        is None
    ):
        return "control: seeded pool touch_skips_queue was not caught"
    if lockstep_search(BOUNDS["quick"][0], SEEDED_SCANNERS["refcount_cursor"]).found is None:
        return "control: the ref-count scanner was not caught"
    return None


def checks_for(path: str) -> list[Check]:
    """The engine runs that decide a mutant of `path` (repository-relative)."""
    name = path.rsplit("/", 1)[-1]
    if name in ("free_queue.py", "block_pool.py", "lazy_offload.py"):
        out: list[Check] = []
        if name == "free_queue.py":
            out += [("explore.free_queue", _gpu_explore("queue"))]
        if name != "lazy_offload.py":
            out += [("explore.block_pool", _gpu_explore("pool"))]
        out += [("explore.lazy", _lazy_explore)]
        if name == "free_queue.py":
            out += [("conformance.free_queue", _machine("queue"))]
        if name != "lazy_offload.py":
            out += [("conformance.block_pool", _machine("pool"))]
        out += [("conformance.lazy", _machine("lazy")), ("controls", _gpu_controls)]
        if name == "free_queue.py":
            out += [("probe.free_queue", _queue_probe)]
        if name == "lazy_offload.py":
            out += [
                ("lazy.fixed_capacity", _lazy_fixed),
                ("explore.lazy (two hashes)", _lazy_two_hashes),
            ]
        return out
    policies = (
        ["lru"] if name == "lru.py" else ["arc"] if name.startswith("arc") else ["lru", "arc"]
    )
    out = []
    for policy in policies:
        out.append((f"explore.{policy}", _explore(policy, "quick")))
    if "lru" in policies:
        out.append(("explore.lru (check bounds)", _explore("lru", "check")))
    for policy in policies:
        out.append((f"explore.{policy}.faults", _explore(policy, "quick", faults=True)))
    for policy in policies:
        out.append((f"conformance.{policy}", _conformance(policy)))
    for policy in policies:
        out.append((f"conformance.{policy}.long_run", _long_run(policy)))
    out.append(("controls", _cpu_controls))
    out.append(("probes", _probes))
    for policy in policies:
        out.append((f"probe.policy.{policy}", _policy_probe(policy)))
    # The manager's generic path: policies that share no key table (`base.own_table`).
    for policy in policies:
        for faults in (False, True):
            name = f"explore.{policy}{'.faults' if faults else ''}.own_table"
            out.append((name, _explore(policy, "quick", faults, "own")))
    if "lru" in policies:
        out.append(("explore.lru.plain", _explore("lru", "quick", False, "plain")))
        out.append(("explore.lru.faults.plain", _explore("lru", "quick", True, "plain")))
        out.append(("conformance.lru.plain", _conformance("lru", "plain")))
    for policy in policies:
        out.append((f"conformance.{policy}.own_table", _conformance(policy, "own")))
    return out


def kill(path: str) -> tuple[str, str] | None:
    """(engine, finding) of the first engine run that fails, or None."""
    for name, check in checks_for(path):
        try:
            why = check()
        except Exception as exc:  # an engine crashing on a mutant is a finding too
            why = f"crashed: {type(exc).__name__}: {exc}"
        if why is not None:
            return name, why
    return None

"""The GPU side under contracts: queue and pool machines, and the lazy scanner search."""

from __future__ import annotations

from typing import Any

from evictable.impl.block_pool import BlockPool
from evictable.impl.free_queue import FreeKVCacheBlockQueue
from evictable.impl.lazy_offload import LazyOffloadScanner
from evictable.proofs.base.compare import Errors, Kind
from evictable.proofs.base.contract import DEFAULT, Contract, Inputs, Mode
from evictable.proofs.base.records import Status
from evictable.proofs.check.gpu import machine_findings
from evictable.proofs.controls.gpu import SEEDED_QUEUES, RefCountScanner
from evictable.proofs.explore.lazy import Bounds
from evictable.proofs.explore.lazy_contract import check_lazy
from evictable.proofs.lockstep.gpu_machines import pool_machine, queue_machine, run_machine

TINY = Bounds(num_blocks=2, window=1, hashes=("a",), max_ref=1, capacities=(1,))
CONTRACTS = [
    DEFAULT,
    Contract(Mode.SAFETY, Errors.BUILTIN),
    Contract(Mode.SAFETY, black_box=True),
    Contract(Mode.SAFETY, inputs=Inputs.valid_only()),
]


def test_this_projects_queue_and_pool_meet_every_contract() -> None:
    for contract in CONTRACTS:
        for machine in (
            queue_machine(FreeKVCacheBlockQueue, contract),
            pool_machine(BlockPool, contract),
        ):
            out = run_machine(machine, 25, 25)
            assert out.status is Status.PROVED, (contract.describe(), out.counterexample)


def test_machine_rounds_report_each_class_once() -> None:
    factory = next(iter(SEEDED_QUEUES.values()))

    def make(masked: frozenset[Kind]) -> Any:
        base = queue_machine(factory)
        return type(base.__name__, (base,), {"masked": masked})

    found, totals = machine_findings(make, "queue machine", 40, 25, seed=0)
    assert found and totals["calls"] > 0
    assert len({f.kind for f in found}) == len(found)


def test_the_lazy_search_passes_this_projects_scanner() -> None:
    for contract in (DEFAULT, Contract(Mode.SAFETY), Contract(Mode.SAFETY, black_box=True)):
        result = check_lazy(LazyOffloadScanner, BlockPool, contract, TINY)
        assert result.ok, (contract.describe(), [f.text() for f in result.findings])


def test_the_lazy_search_finds_the_refcount_stall_as_a_shortest_trace() -> None:
    result = check_lazy(RefCountScanner, BlockPool, Contract(Mode.SAFETY), TINY)
    assert [f.kind for f in result.findings] == [Kind.SCAN]
    scan = result.findings[0]
    assert scan.calls == 5  # step, allocate, cache, free; then the drain
    assert "pool.cache_block(pool.blocks[1], 'a')" in scan.snippet
    assert "from evictable.proofs.controls.gpu import RefCountScanner" in scan.snippet
    namespace: dict[str, Any] = {}
    exec(scan.snippet, namespace)  # the snippet runs as printed


def test_exact_lazy_search_compares_the_cursor_too() -> None:
    result = check_lazy(RefCountScanner, BlockPool, DEFAULT, TINY)
    assert result.findings and result.findings[0].kind in (Kind.STATE, Kind.RESULT, Kind.SCAN)

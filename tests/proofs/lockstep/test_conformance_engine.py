"""The conformance engine itself: green where it must be, red where it must be, clear errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from evictable.impl.manager import CPUOffloadingManager
from evictable.model.manager import ModelManager
from evictable.model.types import Key, LookupResult
from evictable.proofs.base.protocol import ManagerAdapter
from evictable.proofs.base.records import Status
from evictable.proofs.controls.manager import key_by_key
from evictable.proofs.lockstep.conformance import (
    SIZES,
    ConformanceRecord,
    make_machine,
    run_conformance,
)
from evictable.proofs.obligations.lockstep_conformance import obligations

SMALL: dict[str, Any] = {"examples": 40, "steps": 25, "seed": 1}


def _failed(record: ConformanceRecord) -> None:
    assert record.status == "failed", record.text()
    assert record.trace.startswith("m = factory("), record.text()
    assert record.first_failure_example is not None
    assert record.outcome().status is Status.COUNTEREXAMPLE


def test_model_conforms_to_itself() -> None:
    record = run_conformance(ModelManager, "lru", **SMALL)
    assert record.ok, record.text()
    assert record.examples_run >= SMALL["examples"]
    assert record.steps_run > SMALL["examples"]
    assert record.outcome().status is Status.PROVED


def test_impl_conforms_to_model_with_faults_injected() -> None:
    record = run_conformance(CPUOffloadingManager, "lru", inject_faults=True, **SMALL)
    assert record.ok, record.text()
    assert record.faults
    assert record.faults_fired > 0  # the fault rule is not vacuous


def test_same_seed_gives_the_same_run() -> None:
    a = run_conformance(CPUOffloadingManager, "lru", examples=15, steps=15, seed=7)
    b = run_conformance(CPUOffloadingManager, "lru", examples=15, steps=15, seed=7)
    assert (a.status, a.examples_run, a.steps_run) == (b.status, b.examples_run, b.steps_run)


def test_refutes_a_non_atomic_prepare_load() -> None:
    record = run_conformance(key_by_key(CPUOffloadingManager, "prepare_load"), "lru", **SMALL)
    _failed(record)


class _LookupAlwaysMisses:
    """An adapter whose lookup is wrong as soon as anything is stored."""

    def __init__(self, num_blocks: int, policy: str, enable_events: bool) -> None:
        self._inner = CPUOffloadingManager(num_blocks, policy, enable_events)

    def lookup(self, key: Key) -> LookupResult:
        self._inner.lookup(key)
        return LookupResult.MISS

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_failing_trace_is_shrunk_to_a_few_calls() -> None:
    record = run_conformance(_LookupAlwaysMisses, "lru", **SMALL)
    _failed(record)
    calls = record.trace.splitlines()
    # construction, one store (HIT_PENDING needs only a prepare_store), the lookup
    assert len(calls) <= 3, record.trace
    assert "lookup" in calls[-1]


class _WrongErrorKeys:
    """Raises the right error type but names every key, not the first offender."""

    def __init__(self, num_blocks: int, policy: str, enable_events: bool) -> None:
        self._inner = CPUOffloadingManager(num_blocks, policy, enable_events)

    def prepare_load(self, keys: Sequence[Key]) -> list[int]:
        try:
            return list(self._inner.prepare_load(keys))
        except KeyError as exc:
            raise type(exc)(list(keys)) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_errors_are_compared_by_type_and_attributes() -> None:
    record = run_conformance(
        _WrongErrorKeys, "lru", examples=200, steps=30, seed=3, stop_at_first=True
    )
    _failed(record)
    assert "errors differ" in record.reason or "prepare_load" in record.reason


def test_reports_a_factory_that_is_not_callable() -> None:
    record = run_conformance(42, "lru", 5, 5)  # type: ignore[arg-type]
    assert record.status == "error"
    assert "not callable" in record.reason
    assert record.outcome().status is Status.ERROR


def test_reports_a_factory_that_raises() -> None:
    def factory(num_blocks: int, policy: str, enable_events: bool) -> Any:
        raise RuntimeError("no backend")

    record = run_conformance(factory, "lru", 5, 5)
    assert record.status == "error"
    assert "RuntimeError" in record.reason and "no backend" in record.reason


def test_reports_an_adapter_that_lacks_methods() -> None:
    record = run_conformance(lambda n, p, e: object(), "lru", 5, 5)
    assert record.status == "error"
    assert "lacks" in record.reason and "prepare_store" in record.reason


def test_reports_a_policy_the_model_does_not_know() -> None:
    record = run_conformance(ModelManager, "no-such-policy", 5, 5)
    assert record.status == "error"
    assert "lru" in record.reason  # the known names are listed


def test_a_factory_that_fails_later_is_a_divergence_not_a_crash() -> None:
    def factory(num_blocks: int, policy: str, enable_events: bool) -> Any:
        if num_blocks > 1:
            raise MemoryError("too big")
        return CPUOffloadingManager(num_blocks, policy, enable_events)

    record = run_conformance(factory, "lru", **SMALL)
    _failed(record)
    assert "factory raised MemoryError" in record.reason


def test_a_factory_that_accepts_bad_num_blocks_is_refuted() -> None:
    def factory(num_blocks: Any, policy: str, enable_events: bool) -> Any:
        return CPUOffloadingManager(max(0, int(num_blocks)), policy, enable_events)

    record = run_conformance(factory, "lru", **SMALL)
    _failed(record)
    assert "construction" in record.reason


def test_rejects_fault_injection_for_a_factory_without_impl_policies() -> None:
    with pytest.raises(ValueError, match="fault injection"):
        make_machine(ModelManager, "lru", inject_faults=True)
    record = run_conformance(ModelManager, "lru", 3, 3, inject_faults=True)
    assert record.status == "error" and "fault injection" in record.reason


def test_make_machine_rejects_a_policy_the_model_does_not_know() -> None:
    with pytest.raises(ValueError, match="no policy"):
        make_machine(CPUOffloadingManager, "no-such-policy")


def test_obligations_cover_lru_with_a_negative_control_at_every_level() -> None:
    for level, (examples, steps) in SIZES.items():
        obs = {ob.name: ob for ob in obligations(level)}
        assert "conformance.lru" in obs
        ob = obs["conformance.lru"]
        assert ob.negative is not None
        assert f"{examples} examples x {steps} steps" in ob.statement


class _SwallowsPolicyErrors(CPUOffloadingManager):
    """Treats a failing policy as "cannot store": returns None instead of re-raising."""

    def prepare_store(self, keys: Sequence[Key]) -> Any:
        try:
            return super().prepare_store(keys)
        except RuntimeError:
            return None


def test_refutes_an_impl_that_swallows_an_injected_policy_fault() -> None:
    record = run_conformance(
        _SwallowsPolicyErrors, "lru", 300, 30, seed=2, inject_faults=True, stop_at_first=True
    )
    _failed(record)
    assert "did not re-raise the injected fault" in record.reason


class _SnapshotCrashes:
    def __init__(self, num_blocks: int, policy: str, enable_events: bool) -> None:
        self._inner = CPUOffloadingManager(num_blocks, policy, enable_events)
        self._calls = 0

    def snapshot(self) -> Any:
        self._calls += 1
        if self._calls > 2:
            raise OSError("snapshot backend gone")
        return self._inner.snapshot()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_an_adapter_whose_snapshot_crashes_is_refuted_with_the_reason() -> None:
    record = run_conformance(_SnapshotCrashes, "lru", **SMALL)
    _failed(record)
    assert "impl.snapshot() raised OSError: snapshot backend gone" in record.reason


def test_impl_run_reaches_every_interesting_outcome() -> None:
    """Non-vacuity: a modest run evicts, refuses, loads, unloads, and injects faults."""
    # 200 examples: enough on every seed tried for each kind of hook fault to fire.
    record = run_conformance(CPUOffloadingManager, "lru", 200, 30, seed=1, inject_faults=True)
    assert record.ok, record.text()
    seen = {kind for kind, count in record.outcomes if count}
    wanted = {
        "prepare_store:evicts",
        "prepare_store:none",
        "prepare_store:ok",
        "complete_store:ok",
        "prepare_load:ok",
        "complete_load:ok",
        "take_events:ok",
        "prepare_load:BlockNotFoundError",
        "prepare_load:BlockNotReadyError",
        "complete_load:NotLoadingError",
        "prepare_store:DuplicateKeysError",
        "complete_store:InvalidArgumentError",
        "lookup:InvalidArgumentError",
    }
    assert wanted <= seen, record.coverage()
    hooks = {kind for kind in seen if kind.startswith("fault:")}
    assert len(hooks) >= 4, record.coverage()


def test_model_and_impl_satisfy_the_adapter_protocol() -> None:
    assert isinstance(ModelManager(2), ManagerAdapter)
    assert isinstance(CPUOffloadingManager(2), ManagerAdapter)
    assert not isinstance(object(), ManagerAdapter)

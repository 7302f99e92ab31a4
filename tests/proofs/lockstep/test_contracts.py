"""Contracts: exact vs safety, the error contract, input switches, key spaces, declarations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from evictable.impl.manager import CPUOffloadingManager
from evictable.model.errors import (
    BlockNotFoundError,
    BlockNotReadyError,
    DuplicateKeysError,
    InvalidArgumentError,
)
from evictable.model.types import Key, PrepareStoreOutput
from evictable.proofs.base.compare import Errors, Kind, builtin_bases, same_error
from evictable.proofs.base.contract import (
    DEFAULT,
    Contract,
    ContractError,
    Inputs,
    KeySpace,
    Mode,
    declared,
    resolve,
)
from evictable.proofs.controls.manager import (
    DuplicatesOrphanSlot,
    FifoSlotReuse,
    non_atomic_complete_load,
    non_atomic_prepare_load,
)
from evictable.proofs.controls.policies import ARC_BUGS
from evictable.proofs.lockstep.conformance import ConformanceRecord, run_conformance

SAFETY = Contract(mode=Mode.SAFETY)
RUN: dict[str, Any] = {"examples": 80, "steps": 30, "seed": 1, "inject_faults": False}


def _classes(record: ConformanceRecord) -> list[Kind]:
    return [f.kind for f in record.findings]


def _arc_impl(num_blocks: int, policy: str, enable_events: bool) -> CPUOffloadingManager:
    """This project's ARC, whatever policy the engine names (a different legal policy)."""
    return CPUOffloadingManager(num_blocks, "arc", enable_events)


# ------------------------------------------------------------------ safety vs exact


@pytest.mark.parametrize("factory", [FifoSlotReuse, _arc_impl], ids=["fifo_slots", "arc_for_lru"])
def test_safety_accepts_other_legal_choices_that_exact_rejects(factory: Any) -> None:
    """Other slot orders and other victims are legal under the safety contract."""
    inputs = Inputs(malformed=False)  # _arc_impl ignores the policy name it is given
    exact = run_conformance(factory, "lru", contract=Contract(inputs=inputs), **RUN)
    safety = run_conformance(factory, "lru", contract=Contract(Mode.SAFETY, inputs=inputs), **RUN)
    assert exact.status == "failed", exact.text()
    assert safety.ok, safety.text()


def test_this_projects_impl_meets_both_contracts() -> None:
    for contract in (DEFAULT, SAFETY, Contract(Mode.SAFETY, black_box=True)):
        record = run_conformance(CPUOffloadingManager, "lru", contract=contract, **RUN)
        assert record.ok, record.text()


@pytest.mark.parametrize(
    ("factory", "kind"),
    [
        (non_atomic_prepare_load, Kind.LEAKED_PIN),
        (non_atomic_complete_load, Kind.ATOMICITY),
        (DuplicatesOrphanSlot, Kind.SLOT),
    ],
    ids=["leaked_pin", "atomicity", "orphaned_slot"],
)
def test_safety_reports_each_defect_once_by_its_class(factory: Any, kind: Kind) -> None:
    contract = Contract(Mode.SAFETY, inputs=Inputs(malformed=False))  # duplicates more often
    record = run_conformance(factory, "lru", contract=contract, **RUN)
    assert _classes(record) == [kind], record.text()
    finding = record.findings[0]
    assert finding.hits >= 1 and finding.calls <= 4, finding.text()
    assert finding.snippet.startswith("from evictable.proofs.controls.manager import")


def test_safety_catches_an_arc_that_refuses_a_store_it_could_make() -> None:
    bug = next(b for b in ARC_BUGS if b.name == "no_t1_fallback")
    record = run_conformance(bug.factory, "arc", 150, 40, seed=1, contract=SAFETY)
    assert _classes(record) == [Kind.STORE_VERDICT], record.text()


def test_safety_ignores_recency_bugs() -> None:
    bug = next(b for b in ARC_BUGS if b.name == "evictable_moves_to_mru")
    assert run_conformance(bug.factory, "arc", contract=SAFETY, **RUN).ok


class _TwoBugs(CPUOffloadingManager):
    """Non-atomic `prepare_load` and a `lookup` that reports a pending block as a hit."""

    def prepare_load(self, keys: Sequence[Key]) -> list[int]:
        out: list[int] = []
        for key in list(keys):
            out += super().prepare_load([key])
        return out

    def lookup(self, key: Key) -> Any:
        got = super().lookup(key)
        return got.HIT if got is got.HIT_PENDING else got


def test_the_engine_continues_past_a_finding_and_groups_by_class() -> None:
    inputs = Inputs(malformed=False, duplicates=False)  # _TwoBugs does not validate shapes
    record = run_conformance(_TwoBugs, "lru", contract=Contract(Mode.SAFETY, inputs=inputs), **RUN)
    assert set(_classes(record)) == {Kind.LEAKED_PIN, Kind.WRONG_LOOKUP}, record.text()
    assert len(record.findings) == 2
    assert "2 classes of finding" in record.text()


# ------------------------------------------------------------------ duplicates


class _RefusesDuplicatesWithNone(CPUOffloadingManager):
    """Answers a store batch with a repeated key with None (no change): a refusal."""

    def prepare_store(self, keys: Sequence[Key]) -> PrepareStoreOutput | None:
        try:
            return super().prepare_store(keys)
        except DuplicateKeysError:
            return None


class _LoadsEachOccurrence(CPUOffloadingManager):
    """Takes a repeated key in a load batch once per occurrence, all-or-nothing."""

    def prepare_load(self, keys: Sequence[Key]) -> list[int]:
        try:
            return super().prepare_load(keys)
        except DuplicateKeysError:
            pass
        batch = list(keys)
        firsts = list(dict.fromkeys(batch))
        slots = dict(zip(firsts, super().prepare_load(firsts), strict=True))  # validates
        for key in batch[len(firsts) :]:
            super().prepare_load([key])
        return [slots[k] for k in batch]


@pytest.mark.parametrize("factory", [_RefusesDuplicatesWithNone, _LoadsEachOccurrence])
def test_safety_allows_refusing_or_sequencing_a_duplicate_batch(factory: Any) -> None:
    record = run_conformance(factory, "lru", contract=SAFETY, **RUN)
    assert record.ok, record.text()
    exact = run_conformance(factory, "lru", **RUN)
    assert exact.status == "failed"


# ------------------------------------------------------------------ the error contract


def test_builtin_bases_are_the_builtins_an_error_subclasses() -> None:
    assert builtin_bases(BlockNotFoundError) == (KeyError,)
    assert builtin_bases(BlockNotReadyError) == (AssertionError,)
    assert builtin_bases(InvalidArgumentError) == (ValueError,)


def test_same_error_under_each_error_contract() -> None:
    model = BlockNotFoundError([b"k1"])
    assert same_error(model, BlockNotFoundError([b"k1"]))
    assert not same_error(model, BlockNotFoundError([b"k2"]))
    assert not same_error(model, KeyError("k1"))
    assert same_error(model, KeyError("k1"), Errors.BUILTIN)
    assert same_error(model, BlockNotFoundError([b"k2"]), Errors.BUILTIN)
    assert not same_error(model, AssertionError("no"), Errors.BUILTIN)
    assert same_error(model, AssertionError("no"), Errors.ANY)
    assert same_error(StopIteration(), StopIteration(), Errors.ANY)


class _AssertsLikeVllm(CPUOffloadingManager):
    """Refuses every bad load with a bare AssertionError (and is atomic)."""

    def prepare_load(self, keys: Sequence[Key]) -> list[int]:
        try:
            return super().prepare_load(keys)
        except (BlockNotFoundError, BlockNotReadyError) as exc:
            raise AssertionError(str(exc)) from None


def test_the_error_contract_decides_what_counts_as_the_rejection() -> None:
    inputs = Inputs(malformed=False)
    typed = run_conformance(_AssertsLikeVllm, "lru", contract=Contract(inputs=inputs), **RUN)
    builtin = run_conformance(
        _AssertsLikeVllm, "lru", contract=Contract(errors=Errors.BUILTIN, inputs=inputs), **RUN
    )
    anything = run_conformance(
        _AssertsLikeVllm, "lru", contract=Contract(errors=Errors.ANY, inputs=inputs), **RUN
    )
    assert _classes(typed) == [Kind.ERROR]
    assert _classes(builtin) == [Kind.ERROR]  # a BlockNotFoundError is a KeyError
    assert "builtin error contract" in builtin.findings[0].reason
    assert anything.ok, anything.text()


def test_all_or_nothing_is_checked_under_every_error_contract() -> None:
    for errors in Errors:
        record = run_conformance(
            non_atomic_prepare_load, "lru", contract=Contract(errors=errors), **RUN
        )
        assert _classes(record) == [Kind.LEAKED_PIN], (errors, record.text())


# ------------------------------------------------------------------ input switches


def _error_outcomes(record: ConformanceRecord) -> set[str]:
    return {k.split(":")[1] for k, n in record.outcomes if n and k.split(":")[1].endswith("Error")}


def test_valid_only_makes_no_call_the_model_refuses() -> None:
    record = run_conformance(
        CPUOffloadingManager, "lru", contract=Contract(inputs=Inputs.valid_only()), **RUN
    )
    assert record.ok and not _error_outcomes(record), record.coverage()


def test_each_input_switch_removes_its_kind_of_call() -> None:
    no_dups = run_conformance(
        CPUOffloadingManager, "lru", contract=Contract(inputs=Inputs(duplicates=False)), **RUN
    )
    assert "DuplicateKeysError" not in _error_outcomes(no_dups)
    only_dups = run_conformance(
        CPUOffloadingManager, "lru", contract=Contract(inputs=Inputs(malformed=False)), **RUN
    )
    assert "InvalidArgumentError" not in _error_outcomes(only_dups)
    assert "DuplicateKeysError" in _error_outcomes(only_dups)
    no_invalid = run_conformance(
        CPUOffloadingManager, "lru", contract=Contract(inputs=Inputs(invalid=False)), **RUN
    )
    assert not {"BlockNotFoundError", "NotLoadingError"} & _error_outcomes(no_invalid)


# ------------------------------------------------------------------ keys and declarations


class ShownKey(bytes):
    """A caller-format key that prints as `Q(i)` (as the vLLM adapter's `K(i)`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Q({int.from_bytes(self[:4], 'big')})"


def Q(i: int) -> ShownKey:
    return ShownKey(i.to_bytes(4, "big") + b"\x00" * 28)


def test_engines_make_keys_in_the_callers_format() -> None:
    space = KeySpace(Q, ("from tests.proofs.lockstep.test_contracts import Q",), "Q keys")
    record = run_conformance(
        non_atomic_prepare_load, "lru", contract=Contract(Mode.SAFETY, keys=space), **RUN
    )
    finding = record.findings[0]
    assert "Q(" in finding.trace and "b'k" not in finding.trace
    assert "from tests.proofs.lockstep.test_contracts import Q" in finding.snippet
    assert all(isinstance(k, ShownKey) for k in space.pool(10))


def test_a_key_space_must_give_distinct_keys() -> None:
    with pytest.raises(ContractError, match="distinct"):
        KeySpace(lambda i: b"same").pool(3)


def test_a_factory_declares_its_contract_and_flags_override_it() -> None:
    def factory(num_blocks: int, policy: str, enable_events: bool) -> Any:
        return CPUOffloadingManager(num_blocks, policy, enable_events)

    factory.evictable_contract = {"mode": "safety", "errors": "any", "malformed": False}  # type: ignore[attr-defined]
    got = declared(factory)
    assert got.safety and got.errors is Errors.ANY and not got.inputs.malformed
    over = resolve(factory, errors="builtin", black_box=True, duplicates=False)
    assert over.errors is Errors.BUILTIN and over.black_box and not over.inputs.duplicates
    assert over.safety and not over.inputs.malformed
    assert "safety contract, builtin errors, black box" in over.describe()
    assert declared(CPUOffloadingManager) == DEFAULT


@pytest.mark.parametrize(
    "bad", [{"mode": "strict"}, {"errors": "none"}, {"colour": "red"}, {"keys": "abc"}]
)
def test_rejects_a_bad_contract_declaration(bad: dict[str, Any]) -> None:
    def factory(num_blocks: int, policy: str, enable_events: bool) -> Any:
        return CPUOffloadingManager(num_blocks, policy, enable_events)

    factory.evictable_contract = bad  # type: ignore[attr-defined]
    with pytest.raises(ContractError):
        declared(factory)
    record = run_conformance(factory, "lru", 5, 5)
    assert record.status == "error"

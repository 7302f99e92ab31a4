"""A broken table fails in Z3 alone: one in-process mutation of `CPU_MACHINE` per class
(a rejection turned into a no-op or into a transition, a dead row, a wrong target, a
wrong ref effect, a dropped hook), and the Z3 obligations each one fails -- neither the
explorer nor the conformance engine is run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evictable.model import lifecycle
from evictable.model.lifecycle import CpuEvent, CpuState, Hook, Machine, Transition
from evictable.proofs.base.records import Obligation, run_all
from evictable.proofs.controls.tables import TABLE_MUTANTS
from evictable.proofs.obligations.registry import collect
from evictable.proofs.z3 import enabledness, manager  # noqa: F401 (imported first)
from evictable.proofs.z3 import lifecycle as lc  # noqa: F401
from evictable.proofs.z3.encode import HookFn
from tests.obligation_checks import BACKSTOP_S

Z3_GROUPS = (
    "evictable.proofs.obligations.z3_lifecycle",
    "evictable.proofs.obligations.z3_enabledness",
    "evictable.proofs.obligations.z3_manager",
)

FAILS: dict[str, set[str]] = {
    "rejection to no-op": {"enabledness.load_begin"},
    "rejection to transition": {
        "enabledness.load_begin",
        "safety.loads_read_written_data",
        "manager.consecution.prepare_load",
    },
    "dead row": {"enabledness.evict", "safety.evicts_only_idle", "manager.rows"},
    "wrong target": {
        "cpu.consecution.load_end.LOADING->LOADING",
        "manager.consecution.complete_load",
    },
    "wrong ref effect": {
        "cpu.consecution.load_begin.READY->LOADING",
        "cpu.ref_counts_loads",
        "manager.consecution.prepare_load",
    },
    "dropped hook": {
        "cpu.consecution.load_end.LOADING->READY",
        "cpu.hooks.load_end.LOADING->READY",
        "manager.consecution.complete_load",
    },
}
"""Each class of mutation and Z3 obligations it fails (measured: exactly these claims,
apart from the lifecycle group's controls, which break the tested table)."""

_CHEAP = ("cpu.", "enabledness.", "safety.", "manager.rows", "manager.initiation")


def _relevant(expected: set[str]) -> Iterator[Obligation]:
    """The table-level obligations (cheap) and the manager and counter obligations of
    the operations the expected failures name (each manager query costs a little)."""
    for ob in collect("quick", Z3_GROUPS):
        if ob.name.startswith(_CHEAP) or ob.name in expected:
            yield ob


def _failing_claims(expected: set[str]) -> set[str]:
    results = run_all(list(_relevant(expected)), backstop_s=BACKSTOP_S)
    return {r.name for r in results if not r.ok and r.control_of is None}


def _dropped_load_end_hook(real: HookFn) -> HookFn:
    def derive(m: Machine, t: Transition) -> Hook:
        if m.name == "cpu" and t.event is CpuEvent.LOAD_END and t.target is CpuState.READY:
            return Hook.NONE
        return real(m, t)

    return derive


@pytest.mark.parametrize("change", sorted(TABLE_MUTANTS))
def test_table_mutant_fails_named_z3_obligations(
    change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken, _ = TABLE_MUTANTS[change](lifecycle.CPU_MACHINE)
    monkeypatch.setattr(lifecycle, "CPU_MACHINE", broken)
    failing = _failing_claims(FAILS[change])
    assert FAILS[change] <= failing, failing
    assert all(not name.startswith(("explore.", "conformance.")) for name in failing)


def test_dropped_hook_fails_named_z3_obligations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lifecycle, "derive_hook", _dropped_load_end_hook(lifecycle.derive_hook))
    failing = _failing_claims(FAILS["dropped hook"])
    assert FAILS["dropped hook"] <= failing, failing


def test_every_class_of_the_issue_has_a_mutant() -> None:
    assert set(TABLE_MUTANTS) | {"dropped hook"} == set(FAILS)


def test_the_unbroken_table_fails_none_of_them() -> None:
    everything = set().union(*FAILS.values())
    assert not _failing_claims(everything)

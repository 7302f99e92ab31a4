"""The lifecycle obligations are proved, their controls refuted, and a one-line change
to the transition table makes verification fail with a counterexample naming the row."""

from __future__ import annotations

import dataclasses

import pytest

from evictable.model import lifecycle
from evictable.model.lifecycle import (
    CPU_MACHINE,
    CpuEvent,
    CpuState,
    Hook,
    Machine,
    RefUpdate,
    Transition,
)
from evictable.proofs.base.records import Result, Status, run_all
from evictable.proofs.controls import tables
from evictable.proofs.obligations import z3_lifecycle
from evictable.proofs.obligations.registry import collect
from evictable.proofs.z3 import lifecycle as lc
from tests.obligation_checks import BACKSTOP_S, assert_proved, refuted_control

OBLIGATIONS = {ob.name: ob for ob in z3_lifecycle.obligations("quick")}


def test_obligations_cover_every_row_of_both_tables() -> None:
    for m in (lifecycle.CPU_MACHINE, lifecycle.GPU_MACHINE):
        for t in m.transitions:
            row = f"{t.event.value}.{t.source.name}->{t.target.name}"
            assert f"{m.name}.consecution.{row}" in OBLIGATIONS
            assert f"{m.name}.hooks.{row}" in OBLIGATIONS
        for kind in ("initiation", "nonvacuity", "consecution.ignored", "consecution.rejected"):
            assert f"{m.name}.{kind}" in OBLIGATIONS
    assert "cpu.ref_counts_loads" in OBLIGATIONS and "gpu.ref_counts_holders" in OBLIGATIONS


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_obligation_is_proved(name: str) -> None:
    assert_proved(OBLIGATIONS[name])


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_negative_control_gives_a_counterexample(name: str) -> None:
    text = refuted_control(OBLIGATIONS[name])
    assert "violated" in text or "unsat" in text


def test_consecution_counterexample_names_transition_block_and_invariant() -> None:
    i = lc.row_index(CPU_MACHINE, CpuEvent.LOAD_END, CpuState.LOADING, CpuState.READY)
    broken = tables.replace_row(CPU_MACHINE, i, update=RefUpdate("keep"))
    outcome = lc.check_consecution(broken, i, BACKSTOP_S)
    assert outcome.status is Status.COUNTEREXAMPLE
    text = outcome.counterexample
    assert text.startswith("transition load_end LOADING->READY: block b0 pre {state=LOADING, ref=1")
    assert "post {state=READY, ref=1" in text
    assert "violated: state_admits_ref" in text and "evictable_iff_idle" in text


def _run_lifecycle_group() -> list[Result]:
    return run_all(
        collect("quick", ("evictable.proofs.obligations.z3_lifecycle",)), backstop_s=BACKSTOP_S
    )


def _row(event: CpuEvent, source: CpuState, target: CpuState) -> int:
    return lc.row_index(CPU_MACHINE, event, source, target)


_LOAD_END_READY = _row(CpuEvent.LOAD_END, CpuState.LOADING, CpuState.READY)
_LOAD_BEGIN_READY = _row(CpuEvent.LOAD_BEGIN, CpuState.READY, CpuState.LOADING)

ONE_LINE_CHANGES: dict[str, tuple[Machine, str]] = {
    "load_end LOADING->READY goes to LOADING": (
        tables.replace_row(CPU_MACHINE, _LOAD_END_READY, target=CpuState.LOADING),
        "load_end LOADING->LOADING",
    ),
    "load_end LOADING->READY keeps the ref": (
        tables.replace_row(CPU_MACHINE, _LOAD_END_READY, update=RefUpdate("keep")),
        "load_end LOADING->READY",
    ),
    "load_begin READY->LOADING targets READY": (
        tables.replace_row(CPU_MACHINE, _LOAD_BEGIN_READY, target=CpuState.READY),
        "load_begin READY->READY",
    ),
    "READY declared not evictable": (
        tables.replace_state(CPU_MACHINE, CpuState.READY, flag=False),
        "store_commit PENDING->READY",
    ),
    "LOADING declared evictable": (
        tables.replace_state(CPU_MACHINE, CpuState.LOADING, flag=True),
        "load_begin READY->LOADING",
    ),
}


@pytest.mark.parametrize("change", sorted(ONE_LINE_CHANGES))
def test_one_line_table_change_fails_with_counterexample_naming_the_row(
    change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken, label = ONE_LINE_CHANGES[change]
    monkeypatch.setattr(lifecycle, "CPU_MACHINE", broken)
    failures = [r for r in _run_lifecycle_group() if not r.ok]
    assert failures, f"{change} was not caught"
    # A claim with a counterexample, or a control no longer refuted (its record's name).
    assert all(
        r.status is (Status.NOT_REFUTED if r.control_of else Status.COUNTEREXAMPLE)
        for r in failures
    )
    assert any(r.counterexample.startswith(f"transition {label}:") for r in failures), [
        r.counterexample for r in failures
    ]
    assert any("violated:" in r.counterexample for r in failures)


def test_dropped_hook_on_load_end_fails_with_counterexample(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = lifecycle.derive_hook

    def dropped(m: Machine, t: Transition) -> Hook:
        if m.name == "cpu" and t.event is CpuEvent.LOAD_END and t.target is CpuState.READY:
            return Hook.NONE
        return real(m, t)

    monkeypatch.setattr(lifecycle, "derive_hook", dropped)
    failures = [r for r in _run_lifecycle_group() if not r.ok]
    names = {r.name for r in failures}
    assert {"cpu.consecution.load_end.LOADING->READY", "cpu.hooks.load_end.LOADING->READY"} <= names
    text = next(
        r.counterexample for r in failures if r.name == "cpu.consecution.load_end.LOADING->READY"
    )
    assert text.startswith("transition load_end LOADING->READY: block b0")
    assert "violated: evictable_iff_idle" in text


def test_evictable_verify_fails_on_broken_table(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from evictable.proofs.cli import main as cli

    broken, _ = ONE_LINE_CHANGES["load_end LOADING->READY goes to LOADING"]
    monkeypatch.setattr(lifecycle, "CPU_MACHINE", broken)
    code = cli.main(["verify", "--quick", "--only", "cpu.consecution.load_end"])
    out = capsys.readouterr().out
    assert code != 0
    assert "transition load_end LOADING->LOADING" in out


def test_retargeted_variants_are_not_validated_tables() -> None:
    # The controls bypass `validate` on purpose: every one would be rejected at import.
    for i in range(len(CPU_MACHINE.transitions)):
        broken = tables.replace_row(
            CPU_MACHINE,
            i,
            target=CpuState.PENDING
            if CPU_MACHINE.transitions[i].target is not CpuState.PENDING
            else CpuState.READY,
        )
        with pytest.raises(lifecycle.TableError):
            lifecycle.validate(dataclasses.replace(broken))


def test_gpu_invariant_is_in_queue_iff_ref_zero_except_null_block() -> None:
    from evictable.model.invariants import GPU_BLOCK_INVARIANTS, PY_LOGIC, BlockView
    from evictable.model.lifecycle import GpuState

    def holds(state: GpuState, ref: int, in_queue: bool) -> bool:
        view = BlockView(is_state=lambda s: s is state, ref=ref, in_list=in_queue)
        return all(bool(inv(PY_LOGIC, view)) for inv in GPU_BLOCK_INVARIANTS.values())

    assert holds(GpuState.FREE, 0, True)
    assert holds(GpuState.IN_USE, 3, False)
    assert holds(GpuState.NULL, 0, False)
    assert not holds(GpuState.FREE, 0, False)
    assert not holds(GpuState.IN_USE, 1, True)
    assert not holds(GpuState.IN_USE, 0, False)
    assert not holds(GpuState.NULL, 0, True)

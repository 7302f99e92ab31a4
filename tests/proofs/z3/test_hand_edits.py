"""The hand edits of issue 20, each applied to the running code (monkeypatched, so the
source tree is untouched) and caught by the obligation it concerns, with a readable
counterexample: a duplicate check that skips positions, a relation that never accepts
a batch of two keys, a safety property weakened in one disjunct. (The BMC control at
its claim's own bounds is `tests/proofs/z3/test_bmc.py`.)"""

from __future__ import annotations

from typing import Any

import pytest
import z3

from evictable.model.lifecycle import CPU_MACHINE, CpuState
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Status
from evictable.proofs.obligations import z3_enabledness, z3_manager
from evictable.proofs.z3 import enabledness, manager, manager_fold, manager_ops, manager_steps
from evictable.proofs.z3.manager_state import Fn
from tests.obligation_checks import BACKSTOP_S


def _first_three_only(seen: Fn, key: Any, position: Any) -> Any:
    """`_duplicates` comparing only the first 3 positions (the issue's hand edit)."""
    return z3.And(position < 3, seen(key))


def _obligation(name: str, level: Level = "default") -> Any:
    obs = [*z3_manager.obligations(level), *z3_enabledness.obligations(level)]
    (ob,) = [ob for ob in obs if ob.name == name]
    return ob


def test_a_duplicate_check_of_the_first_three_positions_breaks_the_fold_lemma(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(manager_steps, "_duplicates", _first_three_only)
    out = manager_fold.check_fold(CPU_MACHINE, "complete_load", BACKSTOP_S)
    assert out.status is Status.COUNTEREXAMPLE
    text = out.counterexample
    assert text.startswith("fold lemma, step: complete_load, one more key at position")
    assert "(met before, acts)" in text and "accepted_keys_distinct" in text


def test_a_duplicate_check_of_the_first_three_positions_fails_complete_load_at_any_b(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # B = 3 at the default level: every bounded call of <= 3 keys is still fine, the
    # lemma over every batch length is not.
    monkeypatch.setattr(manager_steps, "_duplicates", _first_three_only)
    ob = _obligation("manager.consecution.complete_load")
    assert manager.BATCH["default"] == 3
    out = ob.check(BACKSTOP_S)
    assert out.status is Status.COUNTEREXAMPLE
    assert "fold lemma, step" in out.counterexample


def test_the_unedited_duplicate_check_passes_the_fold_lemma() -> None:
    assert manager_fold.check_fold(CPU_MACHINE, "complete_load", BACKSTOP_S).status is (
        Status.PROVED
    )


def test_a_relation_that_never_accepts_two_keys_fails_non_vacuity(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = manager_ops.relation

    def single_keys_only(*args: Any, **kwargs: Any) -> manager_ops.Step:
        step = real(*args, **kwargs)
        c = args[4] if len(args) > 4 else kwargs["c"]
        if step.op != "reset_cache":  # every batch operation
            step.facts.append(z3.Implies(c.n >= 2, step.rejected))
        return step

    monkeypatch.setattr(manager, "relation", single_keys_only)
    out = _obligation("manager.nonvacuity", "quick").check(BACKSTOP_S)
    assert out.status is Status.COUNTEREXAMPLE
    assert "accepts 2 distinct keys that all act' never happens" in out.counterexample


WEAKENINGS: dict[str, tuple[CpuState, ...]] = {
    "loads_read_written_data": (CpuState.ABSENT, CpuState.PENDING),
    "evicts_only_idle": (CpuState.ABSENT, CpuState.PENDING, CpuState.LOADING),
    "store_abort_changes_only_pending": (CpuState.ABSENT, CpuState.READY, CpuState.LOADING),
    "reset_ends_absent": tuple(CpuState),
    "touch_changes_nothing": tuple(CpuState),
}
"""Per safety property, the states it constrains: weakening it to let any one of them
through (one disjunct more) must flip its control."""


@pytest.mark.parametrize(
    ("prop", "state"), [(p, s) for p, states in WEAKENINGS.items() for s in states]
)
def test_a_safety_property_weakened_in_one_disjunct_flips_its_control(
    prop: str, state: CpuState, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = enabledness.SAFETY[prop]

    def weaker(v: enabledness.View) -> Any:
        return z3.Or(real.holds(v), v.pre(state))

    weakened = enabledness.Safety(real.event, f"{real.statement} (or from {state.name})", weaker)
    monkeypatch.setitem(enabledness.SAFETY, prop, weakened)
    ob = _obligation(f"safety.{prop}")
    assert ob.check(BACKSTOP_S).status is Status.PROVED  # the table still has it
    assert ob.negative is not None
    control = ob.negative(BACKSTOP_S)
    assert control.status is not Status.COUNTEREXAMPLE
    assert "was not caught" in control.detail


def test_loads_read_written_data_allowing_absent_lets_a_load_of_nothing_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = enabledness.SAFETY["loads_read_written_data"]
    weakened = enabledness.Safety(
        real.event, real.statement, lambda v: z3.Or(real.holds(v), v.pre(CpuState.ABSENT))
    )
    monkeypatch.setitem(enabledness.SAFETY, "loads_read_written_data", weakened)
    ob = _obligation("safety.loads_read_written_data")
    assert ob.negative is not None
    control = ob.negative(BACKSTOP_S)
    assert control.status is Status.PROVED
    assert control.detail.startswith("load_begin on ABSENT reading data never written")


def test_every_safety_control_is_refuted_unweakened() -> None:
    for prop in enabledness.SAFETY:
        ob = _obligation(f"safety.{prop}")
        assert ob.negative is not None
        assert ob.negative(BACKSTOP_S).status is Status.COUNTEREXAMPLE, prop

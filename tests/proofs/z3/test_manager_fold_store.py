"""`prepare_store`'s fold lemma (`proofs.z3.manager_fold_store`): the meet, eviction and
store folds proved for batches of any length, each broken relation refuted by the part
of the lemma it breaks, and `manager.consecution.prepare_store` unbounded in the batch."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import z3

from evictable.model.errors import BlockNotReadyError
from evictable.model.lifecycle import CPU_MACHINE, CpuEvent, CpuState, Rejection
from evictable.proofs.base.records import Kind, Status
from evictable.proofs.controls import encodings
from evictable.proofs.controls.tables import row_to_noop
from evictable.proofs.obligations import z3_manager
from evictable.proofs.z3 import manager, manager_fold, manager_ops, manager_steps
from evictable.proofs.z3.manager_fold import check_fold
from evictable.proofs.z3.manager_fold_store import STORE_PARTS, store_parts
from evictable.proofs.z3.manager_ops import Variant
from evictable.proofs.z3.manager_state import UNBOUNDED, BoundedWorld
from evictable.proofs.z3.solver import refute_claims
from tests.obligation_checks import BACKSTOP_S

OP = "prepare_store"


def _record(level: Any = "quick") -> Any:
    (ob,) = [o for o in z3_manager.obligations(level) if o.name == f"manager.consecution.{OP}"]
    return ob


def test_the_lemma_is_proved_in_the_unbounded_world() -> None:
    out = check_fold(CPU_MACHINE, OP, BACKSTOP_S)
    assert out.status is Status.PROVED, out.counterexample
    assert out.detail.startswith("fold lemma: " + ", ".join(STORE_PARTS) + " proved")
    assert "any batch length" in out.detail


def test_every_part_is_proved_on_its_own_in_the_unbounded_world() -> None:
    parts = store_parts(CPU_MACHINE, manager_ops.MANAGER, UNBOUNDED)
    assert tuple(parts) == STORE_PARTS
    for what, part in parts.items():
        claims, facts, _ = part()
        s = z3.Solver()
        s.set("rlimit", 200_000_000)
        s.add(*facts, z3.Not(z3.And(*claims.values())))
        assert s.check() == z3.unsat, what


def test_prepare_store_is_unbounded_in_the_batch() -> None:
    assert OP in manager_fold.FOLD_OPS and manager.unbounded_in_batch(OP)
    for level in ("quick", "default"):
        ob = _record(level)
        assert ob.kind is Kind.UNBOUNDED
        assert ob.bounds.startswith("any number of keys, slots and batch length")
        assert "(any batch length: the fold lemma over the relation's own steps" in ob.statement
        assert "B = " not in ob.bounds


REFUSING_EVICT = dataclasses.replace(
    row_to_noop(CPU_MACHINE, CpuEvent.EVICT, CpuState.READY, CpuState.ABSENT),
    rejections=(
        *CPU_MACHINE.rejections,
        Rejection(CpuEvent.EVICT, CpuState.READY, BlockNotReadyError, "never"),
    ),
)
REFUSING_EVICT = dataclasses.replace(
    REFUSING_EVICT,
    ignored=tuple(p for p in REFUSING_EVICT.ignored if p != (CpuState.READY, CpuEvent.EVICT)),
)

BROKEN: dict[str, tuple[Any, Variant, str, str]] = {
    "forgets num_evictable -= #victims": (
        CPU_MACHINE,
        encodings.consecution_controls(CPU_MACHINE)[OP][0],
        "evict step",
        "num_evictable_tracks_count",
    ),
    "takes one victim fewer than needed": (
        CPU_MACHINE,
        Variant(victim_shortfall=1),
        "store init",
        "free_slots_cover_the_keys_left",
    ),
    "keeps its victims' slots": (
        CPU_MACHINE,
        Variant(keeps_slot_on=frozenset({OP})),
        "evict step",
        "slot_partition",
    ),
    "evicts an input key": (
        CPU_MACHINE,
        Variant(protects_input=False),
        "evict step",
        "victims_not_input_keys",
    ),
    "takes unlisted victims": (
        CPU_MACHINE,
        Variant(victims_listed=False),
        "evict step",
        "victims_accepted_by_the_table",
    ),
    "a table refusing to evict READY keys": (
        REFUSING_EVICT,
        manager_ops.MANAGER,
        "evict step",
        "victims_accepted_by_the_table",
    ),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_relation_is_refuted_by_the_part_it_breaks(name: str) -> None:
    machine, variant, part, claim = BROKEN[name]
    out = check_fold(machine, OP, BACKSTOP_S, variant)
    assert out.status is Status.COUNTEREXAMPLE
    text = out.counterexample
    assert text.startswith(f"fold lemma, {part}: {OP}"), text
    assert claim in text.split("violated: ")[1], text


def test_every_control_of_the_record_is_refuted_by_the_lemma_itself() -> None:
    # not only by the record's finite search of one-key calls: by the lemma over
    # every batch length
    controls = [
        encodings.consecution_controls(CPU_MACHINE)[OP],
        *encodings.more_consecution_controls(CPU_MACHINE)[OP],
    ]
    assert len(controls) >= 2
    for variant, text in controls:
        out = check_fold(CPU_MACHINE, OP, BACKSTOP_S, variant)
        assert out.status is Status.COUNTEREXAMPLE, text
        assert out.counterexample.startswith("fold lemma, "), text


def test_the_record_refutes_each_of_its_controls() -> None:
    for level in ("quick", "default"):
        ob = _record(level)
        assert ob.negative is not None
        out = ob.negative(BACKSTOP_S)
        assert out.status is Status.COUNTEREXAMPLE, out.detail
        assert "one victim fewer than needed" in ob.negative_statement


@pytest.mark.parametrize(
    ("part", "variant", "claim"),
    [
        ("evict step", encodings.consecution_controls(CPU_MACHINE)[OP][0], "num_evictable"),
        ("evict step", Variant(keeps_slot_on=frozenset({OP})), "slot_partition"),
    ],
)
def test_a_broken_eviction_fold_fails_at_victim_positions_beyond_any_b(
    part: str, variant: Variant, claim: str
) -> None:
    # in a finite world with room for the victims (a model with quantifiers is slow to
    # find); a counterexample there is one in the unbounded world
    world = BoundedWorld(keys=13, slots=12)
    claims, facts, describe = store_parts(CPU_MACHINE, variant, world)[part]()
    position = z3.Int("position")
    out = refute_claims(
        {n: c for n, c in claims.items() if n.startswith(claim)},
        [*facts, position >= 10],
        BACKSTOP_S,
        part,
        describe,
    )
    assert out.status is Status.COUNTEREXAMPLE
    assert "the victim at position" in out.counterexample
    assert claim in out.counterexample.split("violated: ")[1]


def _first_three_only(seen: Any, key: Any, position: Any) -> Any:
    return z3.And(position < 3, seen(key))


def test_a_duplicate_check_of_the_first_three_positions_breaks_the_meet_fold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(manager_steps, "_duplicates", _first_three_only)
    out = check_fold(CPU_MACHINE, OP, BACKSTOP_S)
    assert out.status is Status.COUNTEREXAMPLE
    text = out.counterexample
    assert text.startswith(f"fold lemma, meet step: {OP}, meeting the key at position")
    assert "(met before)" in text and "accepted_keys_distinct" in text
    # B = 3 at the default level: the record fails although every call of <= 3 keys is fine
    out = _record("default").check(BACKSTOP_S)
    assert out.status is Status.COUNTEREXAMPLE
    assert "fold lemma, meet step" in out.counterexample

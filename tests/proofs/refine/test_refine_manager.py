"""`refine.manager.*`: the code's explored calls are the steps the proved manager
relation admits, and every kind of drift -- in the relation, in the model, in the
implementation's manager or policy -- is refuted with the call and the field."""

from __future__ import annotations

import pytest

from evictable.impl.manager import CPUOffloadingManager
from evictable.model.errors import InvalidArgumentError
from evictable.model.manager import ModelManager
from evictable.model.types import ManagerSnapshot
from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.compare import Reply, invoke
from evictable.proofs.base.records import Kind, Status
from evictable.proofs.controls.catalogue import by_name
from evictable.proofs.controls.mutant import Edit, mutant_function
from evictable.proofs.controls.policy_relations import LRU_CONTROLS
from evictable.proofs.lockstep.conformance import run_conformance
from evictable.proofs.obligations import refine_manager
from evictable.proofs.refine.conformance import RefinementObserver
from evictable.proofs.refine.manager import ManagerOracle
from evictable.proofs.refine.manager_walk import check_refinement
from evictable.proofs.z3 import manager_ops
from evictable.proofs.z3.policy_arc import ARC_HOOKS
from tests.obligation_checks import assert_proved, refuted_control

OBLIGATIONS = {ob.name: ob for ob in refine_manager.obligations("quick")}


WALKS = sorted(n for n in OBLIGATIONS if n.startswith("refine.manager."))


def test_both_policies_have_an_explored_and_a_tested_refinement_record() -> None:
    default = {ob.name: ob for ob in refine_manager.obligations("default")}
    assert set(default) == {
        "refine.manager.lru",
        "refine.manager.arc",
        "refine.conformance.lru",
        "refine.conformance.arc",
    }
    assert set(default) - set(OBLIGATIONS) == {
        f"refine.manager.{policy}"
        for policy, level in refine_manager.WALKED_ELSEWHERE
        if level == "quick"
    }
    for name, ob in default.items():
        walk = name.startswith("refine.manager.")
        assert ob.kind is (Kind.EXPLORED if walk else Kind.TESTED)
        assert ("slots=" if walk else "examples x") in ob.bounds


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_every_explored_call_is_a_step_of_the_relation(name: str) -> None:
    assert_proved(OBLIGATIONS[name])


@pytest.mark.parametrize("name", WALKS)
def test_every_control_is_caught_naming_the_field(name: str) -> None:
    text = refuted_control(OBLIGATIONS[name])
    lines = dict(line.split(": ", 1) for line in text.splitlines())
    assert (
        "left the proved relation: no step of it evicts" in lines["relation ignores the free stack"]
    )
    assert "differ in num_pending" in lines["relation leaves num_pending free"]
    assert (
        "listed of 'a': the relation True, the code False" in lines["model forgets mark_evictable"]
    )
    assert (
        "num_evictable: the relation 0, the code 1"
        in lines["implementation counter_drift_on_eviction"]
    )
    if name.endswith("arc"):
        assert (
            "listed of 'a': the relation False, the code True"
            in lines["implementation pinned_stays_idle"]
        )
    else:
        assert "stack[0]" in lines["implementation failed_store_keeps_slot"]
        assert "slot of" in lines["implementation fifo_slot_reuse"]


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_the_conformance_run_catches_a_drifted_or_loose_relation(policy: str) -> None:
    text = refuted_control(OBLIGATIONS[f"refine.conformance.{policy}"])
    lines = dict(line.split(": ", 1) for line in text.splitlines())
    assert "num_pending: the relation" in lines["relation forgets a commit's num_pending update"]
    assert "differ in num_pending" in lines["relation leaves num_pending free"]


def test_an_observed_side_must_start_where_it_stopped() -> None:
    observer = RefinementObserver()
    m = ModelManager(2, "lru", False)
    observer.start()
    before = m.snapshot()
    reply = invoke(m.prepare_store, ["a"])
    after = m.snapshot()
    assert observer.step("the model", "prepare_store", (["a"],), {}, reply, before, after) is None
    lookup = invoke(m.lookup, "a")
    why = observer.step("the model", "lookup", ("a",), {}, lookup, before, before)
    assert why is not None and "changed between two calls" in why
    observer.start()  # a new example: no history
    assert observer.step("the model", "lookup", ("a",), {}, lookup, after, after) is None


def test_hand_edit_need_ignoring_the_free_stack_is_refuted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The relation edited in a copy of its source (`need` counts only fresh slots,
    as the issue's hand edit did): the code no longer refines it."""
    drifted = mutant_function(
        "evictable.proofs.z3.manager_steps",
        "victims_needed",
        Edit(
            "victims_needed",
            "free = pre.cap - pre.hw + (0 if variant.ignores_free_stack else pre.sp)",
            "free = pre.cap - pre.hw",
        ),
        name="relation_ignoring_free_stack",
        doc="`need` ignores the free stack.",
    )
    monkeypatch.setattr(manager_ops, "victims_needed", drifted)  # the relation's rule
    outcome = check_refinement(refine_manager.BOUNDS["lru"]["quick"])
    assert outcome.status is Status.COUNTEREXAMPLE
    first = outcome.counterexample.splitlines()[0]
    assert first.startswith("the model: prepare_store(")
    assert "left the proved relation" in first
    assert "shortest trace:" in outcome.counterexample


def _judge(oracle: ManagerOracle, m: ModelManager, method: str, *args: object) -> str | None:
    before: ManagerSnapshot = m.snapshot()
    reply = invoke(getattr(m, method), *args)
    return oracle.judge(method, args, {}, reply, before, m.snapshot())


def test_a_real_sequence_of_calls_is_judged_step_by_step() -> None:
    oracle = ManagerOracle()
    m = ModelManager(2, "lru", False)
    for method, args in [
        ("prepare_store", (["a", "b"],)),
        ("complete_store", (["a", "b"],)),
        ("prepare_load", (["a"],)),
        ("prepare_store", (["c"],)),  # evicts b, the only listed key
        ("complete_load", (["a"],)),
        ("complete_store", (["c"], False)),  # frees c's slot
        ("prepare_store", (["a", "a"],)),  # refused: a repeated key
        ("touch", (["a", "x"],)),
        ("reset_cache", ()),
    ]:
        assert _judge(oracle, m, method, *args) is None, (method, args)
    assert oracle.checks > 0
    assert oracle.solved == 9


def test_a_perturbed_post_state_is_refused() -> None:
    oracle = ManagerOracle()
    m = ModelManager(2, "lru", False)
    before = m.snapshot()
    reply = invoke(m.prepare_store, ["a"])
    after = m.snapshot()
    lying = ManagerSnapshot(**{**after.__dict__, "num_pending": 0})
    why = oracle.judge("prepare_store", (["a"],), {}, reply, before, lying)
    assert why is not None and "num_pending: the relation 1, the code 0" in why


def test_rejects_a_malformed_call_that_did_not_raise() -> None:
    oracle = ManagerOracle()
    m = ModelManager(2, "lru", False)
    before = m.snapshot()
    fake = invoke(lambda: None)
    why = oracle.judge("prepare_store", ("not a list",), {}, fake, before, before)
    assert why is not None and "InvalidArgumentError" in why
    reply = invoke(m.prepare_store, "not a list")
    assert reply.raised and isinstance(reply.value, InvalidArgumentError)
    assert oracle.judge("prepare_store", ("not a list",), {}, reply, before, m.snapshot()) is None


def test_a_longer_batch_is_shown_unique_on_its_own() -> None:
    oracle = ManagerOracle()
    m = ModelManager(8, "lru", False)
    keys = [f"k{i}" for i in range(6)]
    assert _judge(oracle, m, "prepare_store", keys) is None
    assert oracle.functional_batch < 6  # so the 6-key calls were each shown unique
    assert _judge(oracle, m, "complete_store", keys) is None


def test_bounds_are_stated_per_policy_and_level() -> None:
    for policy, levels in refine_manager.BOUNDS.items():
        assert set(levels) == {"quick", "default", "thorough"}
        assert all(isinstance(b, Bounds) and b.policy == policy for b in levels.values())


CAUGHT_BY_THE_WALK = (
    "missed_mark_evictable_on_load_end",
    "non_atomic_prepare_load",
    "non_atomic_complete_load",
    "fifo_slot_reuse",
    "counter_drift_on_eviction",
    "failed_store_keeps_slot",
    "duplicates_orphan_slot",
    "commit_acts_on_loading",
    "refusal_says_ready",
    "touch_moves_pinned",
    "eviction_ignores_protected",
    "copy_loses_recency",
    "pinned_stays_idle",
)
"""The catalogue's manager bugs the refinement walk shows as a step the relation does
not admit. (The others: the LRU's victim and recency orders, caught by the relation
composed with the LRU's hook relations, `ORDER_BUGS`; ARC's lists, order and target,
caught by the relation composed with ARC's, `ARC_BUGS` and `test_refine_arc_order`;
bugs that show only with a policy
hook failing, `CAUGHT_WITH_FAULTS`; a copy sharing state, seen by the comparison's
copy round trips; a corrupted list and an endless walk, below.)"""

CAUGHT_WITH_FAULTS = ("no_policy_rollback_on_fault", "reset_trusts_policy")


@pytest.mark.parametrize("name", CAUGHT_BY_THE_WALK)
def test_the_walk_names_the_relation_for_a_seeded_bug(name: str) -> None:
    bug = by_name(name)
    outcome = check_refinement(refine_manager.BOUNDS[bug.policy]["quick"], factory=bug.factory)
    assert outcome.status is Status.COUNTEREXAMPLE
    first = outcome.counterexample.splitlines()[0]
    assert first.startswith("the implementation: "), first
    assert "proved relation" in first or "the relation's step is no change" in first


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("touch_without_unlink", "snapshot() raised InvariantViolationError"),
        ("eviction_wraps_around", "did not return"),
    ],
)
def test_the_walk_reports_a_broken_snapshot_or_a_hang_as_a_finding(name: str, says: str) -> None:
    bug = by_name(name)
    outcome = check_refinement(refine_manager.BOUNDS[bug.policy]["quick"], factory=bug.factory)
    assert outcome.status is Status.COUNTEREXAMPLE
    assert says in outcome.counterexample


@pytest.mark.parametrize("name", CAUGHT_WITH_FAULTS)
def test_the_conformance_observer_names_the_relation_for_a_fault_bug(name: str) -> None:
    bug = by_name(name)
    record = run_conformance(
        bug.factory,
        bug.policy,
        30,
        30,
        0,
        inject_faults=True,
        stop_at_first=True,
        observer=RefinementObserver(),
    )
    assert record.status == "failed"
    assert "raised InjectedFault, but the state changed" in record.reason


ORDER_BUGS: dict[str, str] = {
    "forward_touch": "left the proved relation: lru.rank of 'a': the relation 1, the code 0",
    "victims_most_recent_first": "no step of it evicts exactly ['b', 'a']",
    "touch_moves_pinned": "lru.rank of 'a': the relation -1, the code 0",
    "copy_loses_recency": "lru.rank of",
}
"""The LRU's order bugs, each caught by the manager relation composed with the LRU's
hook relations (`z3.policy_lru`), with the field that left it."""


@pytest.mark.parametrize("name", sorted(ORDER_BUGS))
def test_the_composed_relation_catches_an_lru_order_bug(name: str) -> None:
    bug = by_name(name)
    outcome = check_refinement(refine_manager.ORDER_BOUNDS, factory=bug.factory)
    assert outcome.status is Status.COUNTEREXAMPLE
    first = outcome.counterexample.splitlines()[0]
    assert first.startswith("the implementation: "), first
    assert ORDER_BUGS[name] in first, first


@pytest.mark.parametrize("name", ["forward_touch", "victims_most_recent_first"])
def test_the_manager_relation_alone_misses_the_order_bugs(name: str) -> None:
    outcome = check_refinement(refine_manager.ORDER_BOUNDS, factory=by_name(name).factory, lru=None)
    assert outcome.status is Status.PROVED, outcome.counterexample


@pytest.mark.parametrize("name", ["forward_touch", "victims_most_recent_first"])
def test_the_conformance_observer_catches_an_lru_order_bug(name: str) -> None:
    bug = by_name(name)
    record = run_conformance(
        bug.factory, bug.policy, 30, 30, 0, stop_at_first=True, observer=RefinementObserver()
    )
    assert record.status == "failed"
    assert "left the proved relation" in record.reason
    assert ("lru.rank of" if name == "forward_touch" else "the LRU relation") in record.reason


def test_a_broken_lru_relation_is_left_by_the_model() -> None:
    broken = dict(LRU_CONTROLS["prepare_store"])[
        "victims chosen most recent first (VictimsMostRecentFirst's order)"
    ]
    outcome = check_refinement(refine_manager.ORDER_BOUNDS, lru=broken)
    assert outcome.status is Status.COUNTEREXAMPLE
    assert outcome.counterexample.startswith("the model: prepare_store(")


def test_a_reordered_lru_list_is_refused() -> None:
    oracle = ManagerOracle()
    m = ModelManager(3, "lru", False)
    for method, args in [("prepare_store", ["a", "b"]), ("complete_store", ["a", "b"])]:
        assert _judge(oracle, m, method, args) is None
    before = m.snapshot()
    reply = invoke(m.touch, ["a"])
    after = m.snapshot()
    assert _judge_lru(oracle, before, after, reply) is None
    swapped = ManagerSnapshot(**{**after.__dict__, "policy": before.policy})
    why = _judge_lru(oracle, before, swapped, reply)
    assert why is not None and "lru.rank of 'a': the relation 1, the code 0" in why


def _judge_lru(
    oracle: ManagerOracle, before: ManagerSnapshot, after: ManagerSnapshot, reply: Reply
) -> str | None:
    return oracle.judge("touch", (["a"],), {}, reply, before, after)


ARC_BUGS: dict[str, str] = {
    "touch_promotes_pending": "arc.t2 of",
    "ghosts_never_trimmed": "arc.b1",
    "b2_hit_grows_target": "arc.target: the relation 0.0, the code 1.0",
    "b1_hit_inverted_ratio": "arc.target:",
    "pinned_stays_idle": "arc.idle of",
}
"""ARC's list and target bugs, each caught by the conformance observer when the
manager relation is composed with ARC's hook relations (`z3.policy_arc`), naming the
field (membership, ghost order, target, idle view) that left it."""


@pytest.mark.parametrize("name", sorted(ARC_BUGS))
def test_the_arc_composed_relation_catches_an_arc_bug(name: str) -> None:
    bug = by_name(name)
    observer = RefinementObserver(ManagerOracle(arc=ARC_HOOKS))
    record = run_conformance(
        bug.factory, "arc", 10, 20, 0, inject_faults=True, stop_at_first=True, observer=observer
    )
    assert record.status == "failed"
    assert "left the proved relation" in record.reason, record.reason
    assert ARC_BUGS[name] in record.reason, record.reason


def test_the_arc_composed_relation_admits_the_implementation() -> None:
    observer = RefinementObserver(ManagerOracle(arc=ARC_HOOKS))
    record = run_conformance(
        CPUOffloadingManager, "arc", 3, 15, 0, inject_faults=True, observer=observer
    )
    assert record.status == "passed", record.reason
    assert observer.steps > 0


def test_no_t1_fallback_is_caught_by_the_arc_composed_walk() -> None:
    bounds = Bounds(slots=2, keys=4, max_ref=1, batch=2, policy="arc")
    outcome = check_refinement(bounds, factory=by_name("no_t1_fallback").factory, arc=ARC_HOOKS)
    assert outcome.status is Status.COUNTEREXAMPLE
    first = outcome.counterexample.splitlines()[0]
    assert "it returned None; the ARC relation" in first, first

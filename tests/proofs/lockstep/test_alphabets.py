"""The wider alphabets: copies, late faults, READY/LOADING commits, seeds, long runs."""

from __future__ import annotations

from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.policies import arc_index
from evictable.proofs.base.faults import PLAN, InjectedFault, fault_policy_name
from evictable.proofs.base.profiles import profile
from evictable.proofs.controls.catalogue import by_name
from evictable.proofs.controls.manager import non_atomic_prepare_load
from evictable.proofs.lockstep.conformance import make_machine, run_conformance
from evictable.proofs.lockstep.copies import MODES, copy_modes
from evictable.proofs.lockstep.inputs import Call
from evictable.proofs.lockstep.long_run import long_run
from evictable.proofs.lockstep.manager import (
    Action,
    Copy,
    Fault,
    LockStep,
    Start,
    Step,
    replay,
)


def test_the_implementation_survives_every_copy_mode() -> None:
    assert copy_modes(CPUOffloadingManager, "lru") == MODES
    assert copy_modes(CPUOffloadingManager, "arc") == MODES


def test_a_run_goes_on_with_the_copy() -> None:
    actions: list[Action] = [
        Start(3, True, False),
        Step(Call.keys("prepare_store", [b"a", b"b"])),
        Step(Call.keys("complete_store", [b"a"])),
        Copy("pickle"),
        Step(Call.keys("prepare_load", [b"a"])),
        Copy("deepcopy"),
        Step(Call.keys("prepare_store", [b"c", b"d"])),
    ]
    assert replay(CPUOffloadingManager, "lru", None, PLAN, actions) is None


def test_a_copy_that_shares_state_is_refuted_in_one_call() -> None:
    bug = by_name("copy_shares_slots")
    actions: list[Action] = [Start(2, False, False), Copy("deepcopy")]
    failure = replay(bug.factory, "lru", None, PLAN, actions)
    assert failure is not None and "shares state" in failure.reason


def test_a_late_fault_runs_the_hook_body_before_raising() -> None:
    name = fault_policy_name("lru")
    assert name is not None
    m = CPUOffloadingManager(2, name)
    m.prepare_store([b"a", b"b"])
    m.complete_store([b"a", b"b"])
    before = m.snapshot()
    PLAN.arm("touch", 1, late=True)
    try:
        m.touch([b"a"])
    except InjectedFault:
        pass
    finally:
        fired = PLAN.disarm()
    assert fired is not None and m.snapshot() == before  # the manager restored the order


def test_faults_in_clear_and_late_faults_catch_managers_that_trust_their_policy() -> None:
    for name, call in (
        ("reset_trusts_policy", Call.plain("reset_cache")),
        ("touch_trusts_policy", Call.keys("touch", [b"a"])),
    ):
        bug = by_name(name)
        fault_policy = fault_policy_name("lru")
        hook = "clear" if name.startswith("reset") else "touch"
        start: list[Action] = [
            Start(2, False, True),
            Step(Call.keys("prepare_store", [b"a", b"b"])),
            Step(Call.keys("complete_store", [b"a", b"b"])),
        ]
        early = replay(bug.factory, "lru", fault_policy, PLAN, [*start, Fault(call, hook, 1)])
        late = replay(
            bug.factory, "lru", fault_policy, PLAN, [*start, Fault(call, hook, 1, late=True)]
        )
        assert early is None, f"{name}: an entry fault changes nothing"
        assert late is not None and "changed state" in late.reason, name


def test_a_commit_of_ready_and_loading_keys_is_made_on_purpose() -> None:
    machine = make_machine(CPUOffloadingManager, "lru")
    assert callable(machine.commit_resident)  # type: ignore[attr-defined]
    bug = by_name("commit_acts_on_loading")
    record = run_conformance(bug.factory, "lru", 200, 50, seed=0)
    assert record.status == "failed" and "complete_store" in record.trace


def test_a_failing_run_names_the_seed_that_reproduces_it() -> None:
    first = run_conformance(non_atomic_prepare_load, "lru", 200, 50, seed=None)
    assert first.status == "failed" and first.seed is not None
    assert f"seed {first.seed} reproduces it" in first.text()
    again = run_conformance(non_atomic_prepare_load, "lru", 200, 50, seed=first.seed)
    assert (again.reason, again.trace) == (first.reason, first.trace)


def test_the_long_run_reaches_the_compaction_of_arc_heaps(monkeypatch: object) -> None:
    calls = [0]
    original = arc_index.IdleIndex.compact

    def counting(self: arc_index.IdleIndex) -> None:
        calls[0] += 1
        original(self)

    monkeypatch.setattr(arc_index.IdleIndex, "compact", counting)  # type: ignore[attr-defined]
    steps, keys, blocks = profile("arc").long_run or (5000, 5, 4)
    out = long_run(CPUOffloadingManager, "arc", steps, 0, keys, blocks)
    assert out.ok, out.text()
    assert calls[0] > 0


def test_the_long_run_catches_a_compaction_that_drops_live_entries() -> None:
    bug = by_name("compaction_keeps_garbage")
    steps, keys, blocks = profile("arc").long_run or (5000, 5, 4)
    out = long_run(bug.factory, "arc", steps, 0, keys, blocks, shrink_replays=100)
    assert not out.ok and "seed 0" in out.text()


def test_a_lockstep_copy_action_prints_in_the_trace() -> None:
    lock = LockStep(CPUOffloadingManager, "lru", None, PLAN)
    lock.apply(Start(2, False, False))
    lock.apply(Copy("deepcopy"))
    assert lock.trace[-1].startswith("m = copy.deepcopy(m)")

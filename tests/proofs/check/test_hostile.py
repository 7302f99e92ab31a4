"""`check` stays honest with hostile managers (`tests/proofs/check/hostile.py`).

* a call that blocks is a `blocked` finding naming the call and its arguments, one
  that spins a `spinning` one -- never a silent hang;
* a fault that shows first in the bookkeeping (a counter, the evictable set) is
  reported under what it leads to, whatever the counter: the counter-drift manager
  and its twin that counts by ref count are both *pinned or protected block
  evicted*; an idle block the manager never evicts again is a refused store, and
  never a "leaked pin" (a pin left by a call that raised);
* a finding's snippet raises `AssertionError` with the finding's message against
  the faulty manager and runs through against a correct one.

The per-step bounds are shortened here (a guard session): the verdicts are the
same at the documented bounds, only later.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from typing import Any

import pytest

from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.compare import Kind
from evictable.proofs.base.contract import resolve
from evictable.proofs.base.findings import Finding
from evictable.proofs.base.guard import available, guard_session
from evictable.proofs.check.manager import check_manager, explore_findings
from evictable.proofs.lockstep.follow import follow_all
from tests.proofs.check import hostile

THIRD_PARTY: dict[str, Any] = {
    "contract": "safety",
    "errors": "any",
    "black_box": True,
    "valid_only": True,
}

guarded = pytest.mark.skipif(not available(), reason="no SIGPROF/setitimer here")


def _check(factory: Callable[..., Any]) -> list[Finding]:
    with guard_session(bound_s=0.2, block_s=0.5):
        result = check_manager(
            factory, "lru", examples=60, steps=20, seed=0, explore=False, **THIRD_PARTY
        )
    assert result.conformance.status != "error", result.conformance.reason
    return list(result.findings)


def run_snippet(snippet: str, factory_name: str, instead: str | None = None) -> None:
    """Run a finding's snippet, with `instead` (a factory of `hostile`) in place of the
    factory it names."""
    if instead is not None:
        old = f"from tests.proofs.check.hostile import {factory_name}"
        assert old in snippet, snippet
        snippet = snippet.replace(old, f"{old}\n{factory_name} = hostile.{instead}")
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(snippet, "<snippet>", "exec"), {"hostile": hostile})


@guarded
def test_a_call_that_blocks_is_a_blocked_finding_naming_the_call() -> None:
    found = _check(hostile.blocking)
    assert found[0].kind is Kind.BLOCKED, [f.kind for f in found]
    reason = found[0].reason
    assert "the call m.prepare_store([" in reason, reason
    assert "blocked, using no CPU for 0.5s of wall time" in reason
    assert found[0].snippet.count("threading.Thread(target=lambda: m.prepare_store(") == 1


@guarded
def test_a_call_that_spins_is_a_spinning_finding_naming_the_call() -> None:
    found = _check(hostile.spinning)
    assert found[0].kind is Kind.HANG and Kind.HANG.value == "spinning"
    assert "the call m.prepare_store([" in found[0].reason
    assert "spun for 0.2s of CPU time (the per-step bound)" in found[0].reason


def test_a_counter_drift_is_ranked_by_the_eviction_it_leads_to() -> None:
    found = _check(hostile.listed_while_loading)
    assert [f.kind for f in found] == [Kind.EVICTED_PINNED], [(f.kind, f.reason) for f in found]
    cause = found[0].cause
    assert cause is not None and cause.kind is Kind.ACCOUNTING
    assert "counters (num_evictable, num_pending): expected (0, 0) != observed (1, 0)" in (
        cause.reason
    )
    assert "while it is LOADING" in found[0].reason


def test_the_explorers_counter_drift_is_followed_too() -> None:
    contract = resolve(hostile.listed_while_loading, preset="third-party")
    bounds = Bounds(slots=2, keys=3, max_ref=1, batch=2)
    _, found = explore_findings(bounds, hostile.listed_while_loading, contract, workers=1)
    assert [f.kind for f in found] == [Kind.ACCOUNTING]  # the explorer stops at the counter
    followed, moved = follow_all(hostile.listed_while_loading, "lru", contract, found)
    assert moved == [(Kind.ACCOUNTING, Kind.EVICTED_PINNED)]
    assert followed[0].engine.startswith("explorer") and followed[0].cause is not None


def test_the_class_does_not_depend_on_how_the_counter_is_computed() -> None:
    counted = _check(hostile.listed_while_loading)
    by_ref = _check(hostile.listed_while_loading_counted_by_ref)
    assert [f.kind for f in counted] == [f.kind for f in by_ref] == [Kind.EVICTED_PINNED]
    assert counted[0].cause is not None and by_ref[0].cause is None  # no drift to follow


def test_an_idle_block_never_evicted_again_is_not_a_leaked_pin() -> None:
    found = _check(hostile.forgets_relist)
    assert [f.kind for f in found] == [Kind.STORE_VERDICT], [(f.kind, f.reason) for f in found]
    cause = found[0].cause
    assert cause is not None and cause.kind is Kind.UNLISTED
    assert Kind.UNLISTED.value == "idle block not evictable"
    assert "room can be made" in found[0].reason


@pytest.mark.parametrize(
    "factory",
    ["listed_while_loading", "listed_while_loading_counted_by_ref", "forgets_relist"],
)
def test_a_findings_snippet_raises_against_the_manager_and_passes_against_a_correct_one(
    factory: str,
) -> None:
    (finding,) = _check(getattr(hostile, factory))
    with pytest.raises(AssertionError) as raised:
        run_snippet(finding.snippet, factory)
    assert finding.reason in str(raised.value)
    run_snippet(finding.snippet, factory, instead="correct")


def test_a_manager_that_calls_sys_exit_is_a_finding_with_its_trace() -> None:
    found = _check(hostile.exits)
    assert found and "SystemExit" in found[0].reason, [(f.kind, f.reason) for f in found]
    assert "m.prepare_store(" in found[0].snippet
    with pytest.raises(AssertionError):
        run_snippet(found[0].snippet, "exits")


def test_the_docs_examples_snippets_raise_and_pass_against_a_correct_manager() -> None:
    """The three examples docs/conformance.md walks through: their snippets fail with
    the finding against the example, and run through against a correct manager."""
    from evictable.impl.manager import CPUOffloadingManager
    from evictable.proofs.controls.manager import NoPolicyRollbackOnFault, non_atomic_prepare_load
    from examples.third_party_lru import make_manager

    cases: list[tuple[Any, str, dict[str, Any], Kind]] = [
        (make_manager, "correct", THIRD_PARTY, Kind.EVICTED_PINNED),
        (non_atomic_prepare_load, "CPUOffloadingManager", {}, Kind.LEAKED_PIN),
        (NoPolicyRollbackOnFault, "CPUOffloadingManager", {}, Kind.ATOMICITY),
    ]
    for factory, instead, options, kind in cases:
        result = check_manager(
            factory, "lru", examples=60, steps=20, seed=0, explore=False, **options
        )
        assert [f.kind for f in result.findings] == [kind], result.findings
        (finding,) = result.findings
        name = factory.__qualname__
        space: dict[str, Any] = {
            "hostile": hostile,
            "CPUOffloadingManager": CPUOffloadingManager,
        }
        with pytest.raises(AssertionError) as raised:
            exec(compile(finding.snippet, "<snippet>", "exec"), dict(space))
        assert finding.reason in str(raised.value)
        again = f"{finding.snippet.splitlines()[0]}\n{name} = " + (
            "hostile.correct" if instead == "correct" else instead
        )
        fixed = finding.snippet.replace(finding.snippet.splitlines()[0], again, 1)
        exec(compile(fixed, "<snippet>", "exec"), dict(space))

"""The per-step CPU-time guard: a call that hangs is a finding with its trace."""

from __future__ import annotations

import threading
import time

import pytest

from evictable.impl.block_pool import BlockPool
from evictable.proofs.base.guard import (
    Called,
    StepBlocked,
    StepTimeout,
    available,
    guard_session,
    step_guard,
)
from evictable.proofs.base.profiles import profile
from evictable.proofs.base.records import Status
from evictable.proofs.controls.catalogue import by_name
from evictable.proofs.explore.lazy_cursor import BOUNDS
from evictable.proofs.explore.lazy_impl import lockstep_search
from evictable.proofs.explore.manager import explore
from evictable.proofs.lockstep.conformance import run_conformance
from evictable.proofs.lockstep.gpu_machines import run_machine
from evictable.proofs.lockstep.lazy_machine import lazy_machine

pytestmark = pytest.mark.skipif(not available(), reason="no SIGPROF/setitimer here")


def _spin() -> None:
    while True:
        pass


def test_a_hanging_block_raises_step_timeout() -> None:
    with pytest.raises(StepTimeout, match=r"spun for 0\.05s of CPU time"), step_guard(0.05):
        _spin()


def test_guards_nest_and_the_outer_bound_wins() -> None:
    with pytest.raises(StepTimeout, match=r"0\.05s"), step_guard(0.05), step_guard(10):
        _spin()


def test_a_block_that_waits_without_cpu_raises_step_blocked() -> None:
    lock = threading.Lock()
    lock.acquire()
    with (
        guard_session(block_s=0.5),
        pytest.raises(StepBlocked, match=r"blocked, using no CPU for 0\.5s of wall time"),
        step_guard(what=Called("acquire()")),
    ):
        lock.acquire()  # never released: only the watcher gets it out
    assert not lock.acquire(blocking=False)  # the lock stays taken


def test_a_blocked_step_names_its_call_and_the_next_block_is_found_sooner() -> None:
    event = threading.Event()
    with guard_session(block_s=0.5):
        with pytest.raises(StepBlocked) as first, step_guard(what=Called("wait()")):
            event.wait()
        assert first.value.what == "m.wait()"
        with pytest.raises(StepBlocked) as second, step_guard():
            time.sleep(60)  # interrupted inside the sleep
        assert "0.5s" in str(second.value)  # the bound as documented, not the shorter one


def test_a_slow_call_that_uses_cpu_is_not_blocked() -> None:
    with guard_session(block_s=0.5), step_guard(5):
        end = time.process_time() + 1.0
        while time.process_time() < end:  # a second of CPU, twice the blocking bound
            pass


def test_a_closed_inner_guard_leaves_the_outer_one_armed_and_quiet() -> None:
    with step_guard(5):
        with step_guard(0.01):
            pass
        time.sleep(0.05)  # past the inner bound: nothing fires


def test_a_session_shortens_the_bound_after_its_first_timeout() -> None:
    with guard_session(0.2, after_timeout_s=0.02):
        with pytest.raises(StepTimeout, match=r"0\.2s"), step_guard():
            _spin()
        start = time.process_time()
        with pytest.raises(StepTimeout, match=r"0\.2s"), step_guard():  # the documented bound
            _spin()
        assert time.process_time() - start < 0.15  # stopped after the shorter one


def test_outside_the_main_thread_the_guard_is_a_no_op() -> None:
    seen: list[bool] = []

    def worker() -> None:
        seen.append(available())
        with step_guard(0.001):
            time.sleep(0.01)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [False]


def test_the_conformance_engine_reports_a_hanging_evict() -> None:
    bug = by_name("eviction_wraps_around")
    with guard_session(0.3):
        record = run_conformance(bug.factory, "lru", 200, 50, seed=0, shrink_replays=300)
    assert record.status == "failed"
    assert "did not return" in record.reason
    assert "did not return" in record.trace.splitlines()[-1]


def test_the_explorer_reports_a_hanging_call_as_the_failing_edge() -> None:
    bug = by_name("eviction_wraps_around")
    with guard_session(0.3):
        run = explore(profile("lru").check, bug.factory, workers=1)
    assert run.failure is not None and run.failure.op is not None
    assert "did not return" in run.failure.reason
    assert run.failure.op.method == "prepare_store"


def test_the_lazy_engines_report_a_scan_that_never_ends() -> None:
    bug = by_name("wrap_around_scan")
    with guard_session(0.3):
        found = lockstep_search(BOUNDS["quick"][0], bug.factory)  # type: ignore[arg-type]
        out = run_machine(lazy_machine(BlockPool, bug.factory), 50, 20, shrink=False)
    assert found.found is not None and "did not return" in found.found.reason
    assert found.path and "scanner.step()" in str(found.path[-1])
    assert out.status is Status.COUNTEREXAMPLE and "did not return" in out.counterexample

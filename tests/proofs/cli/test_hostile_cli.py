"""`evictable check` on hostile managers, as a user runs it: a manager that blocks,
spins or waits inside C code ends the run with a finding (never a silent hang),
progress goes to stderr meanwhile, Ctrl-C names the call in flight, and a snippet
of a blocked call fails when run. The bounds are shortened through the environment
(`EVICTABLE_BLOCK_S`, `EVICTABLE_STEP_BOUND_S`, `EVICTABLE_PROGRESS_S`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evictable.proofs.base.guard import available

ROOT = Path(__file__).resolve().parents[3]
SMALL = ["--preset", "third-party", "--seed", "0", "--examples", "10", "--steps", "20"]


def _command(factory: str, *more: str) -> list[str]:
    spec = f"tests.proofs.check.hostile:{factory}"
    return [sys.executable, "-m", "evictable.proofs.cli.main", "check", spec, *SMALL, *more]


pytestmark = pytest.mark.skipif(not available(), reason="no SIGPROF/setitimer here")


def _env(**bounds: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **bounds}


def _check(factory: str, tmp_path: Path, **bounds: str) -> tuple[int, str, str, dict[str, Any]]:
    report = tmp_path / "report.json"
    run = subprocess.run(
        _command(factory, "--no-explore", "--json", str(report)),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(**bounds),
        timeout=600,  # a hang backstop for the test, not a verdict
    )
    doc = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    return run.returncode, run.stdout, run.stderr, doc


def test_a_blocking_manager_is_a_finding_with_progress_meanwhile(tmp_path: Path) -> None:
    code, out, err, doc = _check(
        "blocking", tmp_path, EVICTABLE_BLOCK_S="1", EVICTABLE_PROGRESS_S="0.3"
    )
    assert code == 1, out + err
    assert [f["class"] for f in doc["findings"]] == ["blocked"]
    assert "[blocked] (behaviour)" in out and "the call m.prepare_store([" in out
    assert "per-step bound: 2s of CPU time (spinning) or 1s of wall time without CPU" in out
    assert "in flight: m.prepare_store([" in err  # the progress line, during the block
    snippet = doc["findings"][0]["snippet"]
    ran = subprocess.run(
        [sys.executable, "-c", snippet],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(EVICTABLE_BLOCK_S="1"),
        timeout=120,
    )
    assert ran.returncode == 1 and "AssertionError" in ran.stderr, ran.stderr


def test_a_spinning_manager_is_a_finding(tmp_path: Path) -> None:
    code, out, err, doc = _check("spinning", tmp_path, EVICTABLE_STEP_BOUND_S="0.2")
    assert code == 1, out + err
    assert [f["label"] for f in doc["findings"]] == ["spinning"]
    assert "spun for 0.2s of CPU time (the per-step bound)" in doc["findings"][0]["reason"]


def test_a_call_python_cannot_interrupt_ends_the_run_with_the_finding(tmp_path: Path) -> None:
    code, out, err, _ = _check("stuck_in_c", tmp_path, EVICTABLE_BLOCK_S="1")
    assert code == 1, out + err
    assert "[blocked]" in out and "cannot be interrupted" in out
    assert "m.prepare_store([" in out
    assert "cannot be interrupted" in err


def test_ctrl_c_names_the_call_in_flight() -> None:
    proc = subprocess.Popen(
        _command("blocking", "--no-explore"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=_env(EVICTABLE_BLOCK_S="600", EVICTABLE_PROGRESS_S="0.3"),
    )
    assert proc.stderr is not None
    try:
        deadline = time.monotonic() + 300  # a hang backstop for the test
        for line in proc.stderr:
            if "in flight: m.prepare_store([" in line or time.monotonic() > deadline:
                break
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        assert proc.wait(timeout=120) == 2
    finally:
        if proc.poll() is None:
            proc.kill()
    last = [line for line in rest.splitlines() if line.startswith("evictable check:")][-1]
    assert last.startswith("evictable check: interrupted during the call m.prepare_store(["), rest


def test_a_closed_pipe_is_not_a_failure() -> None:
    run = subprocess.run(
        f"set -o pipefail; {sys.executable} -m evictable.proofs.cli.main diagram | head -1",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and run.stderr == "", run.stderr

"""The pytest entry point: a team's own suite runs the engines under any contract."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from hypothesis import given, settings

from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.base.compare import Kind
from evictable.proofs.controls.manager import non_atomic_prepare_load
from evictable.proofs.lockstep.inputs import Call
from evictable.testing import call_sequences, calls, check_calls, keys

SUITE = """
from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.controls.manager import non_atomic_prepare_load


def test_the_reference_manager_is_safe(evictable_check):
    evictable_check(CPUOffloadingManager, "lru", contract="safety")


def test_a_leaky_manager_is_not(evictable_check):
    evictable_check(non_atomic_prepare_load, "lru", contract="safety", errors="any")
"""

CONFTEST = """
from hypothesis import settings

settings.register_profile("small", max_examples=30, stateful_step_count=20)
settings.load_profile("small")
"""


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST), encoding="utf-8")
    (tmp_path / "test_mine.py").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )


def test_the_plugin_runs_inside_a_users_suite_and_prints_the_seed(tmp_path: Path) -> None:
    got = _pytest(tmp_path, "--evictable-seed", "7")
    out = got.stdout
    assert "1 failed, 1 passed" in out, out + got.stderr
    assert "[leaked pin]" in out and "from evictable.proofs.controls.manager import" in out
    assert "seed 7" in out and "--evictable-seed 7" in out
    assert "30 examples" in out or "examples," in out  # the profile's size


def test_the_strategies_draw_calls_the_engine_replays() -> None:
    @settings(max_examples=25, database=None, deadline=None)
    @given(call_sequences(max_calls=15))
    def conforms(sequence: list[Call]) -> None:
        assert check_calls(CPUOffloadingManager, sequence, num_blocks=2) is None

    conforms()


def test_check_calls_reports_a_failure_with_its_class() -> None:
    k = [b"k0", b"k1"]
    sequence = [
        Call.keys("prepare_store", k[:1]),
        Call.keys("complete_store", k[:1]),
        Call.keys("prepare_load", k),
    ]
    failure = check_calls(non_atomic_prepare_load, sequence, num_blocks=2, contract="safety")
    assert failure is not None and failure.kind is Kind.LEAKED_PIN


def test_key_and_call_strategies_use_the_key_space() -> None:
    @settings(max_examples=20, database=None)
    @given(keys(), calls())
    def drawn(key: object, call: Call) -> None:
        assert isinstance(key, bytes) and key.startswith(b"k")
        assert call.method

    drawn()

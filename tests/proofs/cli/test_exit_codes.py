"""Every way a command can fail to run ends in exit code 2 and one line, and no check
weakens itself without saying so."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.base.parallel import Interrupted, run_parallel
from evictable.proofs.base.records import Kind, Obligation, Outcome, Status, proved
from evictable.proofs.cli import main as cli
from evictable.proofs.lockstep.conformance import run_conformance
from evictable.proofs.obligations import registry

ROOT = Path(__file__).resolve().parents[3]

USER_CODE = """
import sys


def exits(num_blocks, policy, enable_events):
    sys.exit(3)


def raises_exit(num_blocks, policy, enable_events):
    raise SystemExit(5)


def hangs(num_blocks, policy, enable_events):
    while True:
        pass


class AlwaysRaises:
    def __init__(self, num_blocks, policy="lru", enable_events=False):
        pass

    def __getattr__(self, name):
        def refuse(*args, **kwargs):
            raise RuntimeError(f"{name}: not today")

        return refuse
"""


def _evictable(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "user_code.py").write_text(textwrap.dedent(USER_CODE), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "evictable.proofs.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize(
    ("factory", "said"),
    [
        ("exits", "factory(2, 'lru', False) called sys.exit(3)"),
        ("raises_exit", "factory(2, 'lru', False) called sys.exit(5)"),
    ],
)
def test_user_code_calling_sys_exit_is_exit_code_2_in_one_line(
    tmp_path: Path, factory: str, said: str
) -> None:
    for command in ("check", "explore"):
        args = [command, f"user_code:{factory}"]
        if command == "explore":
            args = ["explore", "--factory", f"user_code:{factory}"]
        run = _evictable(tmp_path, *args)
        assert run.returncode == 2, run.stdout + run.stderr
        assert said in _one_line(run.stderr)


def test_a_constructor_that_hangs_is_bounded_by_the_backstop(tmp_path: Path) -> None:
    env = {"EVICTABLE_SETUP_BACKSTOP_S": "0.5"}
    for args in (["check", "user_code:hangs"], ["explore", "--factory", "user_code:hangs"]):
        run = _evictable(tmp_path, *args, env=env)
        assert run.returncode == 2
        assert "did not return within 0.5s (a hang backstop)" in _one_line(run.stderr)


def test_a_closed_pipe_ends_quietly() -> None:
    run = subprocess.run(
        f"{sys.executable} -m evictable.proofs.cli.main diagram --format dot | head -c 10",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.stderr == ""  # no "internal error", no traceback


def test_output_paths_are_checked_before_any_work(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "report.json"
    for args in (
        ["verify", "--json", str(missing)],
        ["check", "evictable.impl.manager:CPUOffloadingManager", "--json", str(missing)],
        ["explore", "--json", str(missing)],
    ):
        run = _evictable(tmp_path, *args)
        assert run.returncode == 2
        line = _one_line(run.stderr)
        assert "argument --json: no such directory" in line  # refused by the parser
        assert run.stdout == ""  # nothing was run


def test_only_matching_nothing_is_exit_code_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["verify", "--quick", "--only", "zzz"]) == 2
    err = capsys.readouterr().err
    assert "--only 'zzz' selects no obligation" in err


@pytest.mark.parametrize("command", [["check", "evictable.impl.manager:CPUOffloadingManager"]])
def test_rejects_a_negative_seed(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([*command, "--seed", "-1"]) == 2
    assert "--seed: must be at least 0" in capsys.readouterr().err


def _ob(name: str, check: Any) -> Obligation:
    return Obligation(name, "s", check, kind=Kind.TESTED)  # no Z3 query: not a proof record


def test_an_interrupted_run_keeps_the_records_that_landed() -> None:
    def fast(_b: float) -> Outcome:
        return proved()

    def slow(_b: float) -> Outcome:
        time.sleep(60)
        return proved()

    obs = [_ob("a.fast", fast), _ob("b.slow", slow)]
    landed: list[str] = []

    def interrupt_after_first(r: Any) -> None:
        landed.append(r.name)
        # What Ctrl-C does in the parent, raised here rather than through a real SIGINT:
        # a signal is only handled by the main thread, which under a test runner's
        # worker need not be the one running this test.
        raise KeyboardInterrupt

    with pytest.raises(Interrupted) as caught:
        run_parallel(obs, 2, 60.0, on_result=interrupt_after_first)
    assert [r.name for r in caught.value.records] == ["a.fast"]


def test_an_interrupted_verify_prints_and_writes_what_landed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def fast(_b: float) -> Outcome:
        return proved()

    def interrupted(_b: float) -> Outcome:
        raise KeyboardInterrupt

    import types

    mod = types.ModuleType("fake_interrupt")
    mod.obligations = lambda level: [_ob("a.fast", fast), _ob("b.ctrl_c", interrupted)]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_interrupt", mod)
    monkeypatch.setattr(registry, "GROUPS", ("fake_interrupt",))
    out = tmp_path / "r.json"
    assert cli.main(["verify", "-j", "0", "--json", str(out)]) == 2
    doc = json.loads(out.read_text())
    assert doc["error"].startswith("evictable verify: interrupted after 1 record")
    assert [r["name"] for r in doc["records"]] == ["a.fast"]


def test_a_worker_that_hangs_past_its_backstop_is_killed_and_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from evictable.proofs.base import parallel

    monkeypatch.setattr(parallel, "GRACE_S", 0.5)

    def stuck(_b: float) -> Outcome:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        time.sleep(60)  # ignores the backstop inside the worker
        return proved()

    (r,) = run_parallel([_ob("stuck", stuck)], 1, 0.2)
    assert r.status is Status.UNKNOWN and "hang backstop" in r.counterexample


def test_faults_that_cannot_be_injected_are_reported_not_dropped() -> None:
    def own_policy_class(num_blocks: int, policy: str, enable_events: bool) -> object:
        if policy != "lru":
            raise ValueError(f"I only know 'lru', not {policy!r}")
        return CPUOffloadingManager(num_blocks, policy, enable_events)

    record = run_conformance(own_policy_class, "lru", 5, 5, seed=0)
    assert record.ok and not record.faults
    assert "does not build its policy through impl.policies.factory" in record.faults_note
    assert "faults not applicable" in record.scope() and "faults not applicable" in record.text()


def test_copies_that_cannot_be_made_are_reported_not_dropped() -> None:
    class NoPickle(CPUOffloadingManager):  # a local class: pickled by reference, it cannot be
        __slots__ = ()

    record = run_conformance(NoPickle, "lru", 5, 5, seed=0, inject_faults=False)
    assert record.copies == ("deepcopy",)
    assert "pickle: " in record.copies_note and "local object" in record.copies_note
    assert "copies checked: deepcopy (not applicable: pickle" in record.scope()


@pytest.mark.parametrize(
    "flags",
    [
        [],
        ["--contract", "safety"],
        ["--errors", "any"],
        ["--black-box"],
        ["--black-box", "--contract", "safety", "--errors", "any", "--valid-only"],
    ],
)
def test_a_subject_whose_every_call_raises_is_a_finding(tmp_path: Path, flags: list[str]) -> None:
    run = _evictable(
        tmp_path,
        "check",
        "user_code:AlwaysRaises",
        "--examples",
        "5",
        "--steps",
        "5",
        "--no-explore",
        *(flags or ["--black-box"]),
    )
    assert run.returncode in (1, 2), run.stdout + run.stderr
    if run.returncode == 2:  # refused at setup: it lacks the API for snapshots
        assert "without the manager API" in run.stderr
    else:
        assert "verdict: REJECTED" in run.stdout

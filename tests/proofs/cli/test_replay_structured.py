"""`replay` takes the structured traces of the JSON reports, and `-` for stdin; an
unknown error type is a format error (exit code 2), never a divergence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.check.replay import TraceFormatError, parse_structured, replay_text
from evictable.proofs.cli.main import main
from evictable.proofs.cli.report import schema

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = "examples.third_party_lru:make_manager"
BROKEN = "evictable.proofs.controls.manager:non_atomic_prepare_load"


def _report(path: Path, *argv: str) -> dict[str, Any]:
    here = os.getcwd()
    os.chdir(ROOT)  # the example is imported from the checkout
    try:
        assert main([*argv, "--json", str(path)]) == 1
    finally:
        os.chdir(here)
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.validate(doc, schema())
    return doc


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("report") / "check.json"
    return _report(path, "check", EXAMPLE, "--preset", "third-party", "--seed", "0", "--no-explore")


def test_a_finding_trace_is_a_list_of_steps_with_both_answers_and_states(
    report: dict[str, Any],
) -> None:
    finding = report["findings"][0]
    assert finding["class"] == "evicted_pinned" and finding["severity"] == "safety"
    steps = finding["trace"]
    assert steps[0]["op"] == "construct" and steps[0]["state_before"] is None
    assert set(steps[0]["args"]) == {"num_blocks", "policy", "enable_events"}
    last = steps[-1]
    assert last["op"] == "prepare_store" and last["model"] == {"result": None}
    assert last["result"]["evicted_keys"]  # the pinned block
    assert last["state_before"] != last["state_after"]
    assert any("HIT -> MISS" in change for change in last["changes"])
    assert finding["snippet"].startswith("from examples.third_party_lru import make_manager")


def test_a_leaked_pin_shows_in_the_state_around_the_call(tmp_path: Path) -> None:
    doc = _report(tmp_path / "b.json", "check", BROKEN, "--seed", "0", "--examples", "30")
    last = doc["findings"][0]["trace"][-1]
    assert last["op"] == "prepare_load" and last["error"]["type"] == "BlockNotFoundError"
    assert last["model"]["error"]["type"] == "BlockNotFoundError"
    assert any("READY ref_cnt 0" in c and "LOADING ref_cnt 1" in c for c in last["changes"])


def test_replay_takes_a_check_report(report: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    got = replay_text(path.read_text(encoding="utf-8"))
    assert not got.ok and got.unit == "step"
    assert got.divergence is not None and "prepare_store" in got.divergence.call
    assert got.divergence.model == "-> None"
    assert main(["replay", str(path)]) == 1
    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps(report["findings"][0]["trace"]), encoding="utf-8")
    assert main(["replay", str(steps)]) == 1


def test_replay_reads_standard_input(report: dict[str, Any]) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "evictable.proofs.cli.main", "replay", "-"],
        input=json.dumps(report["findings"][0]),
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**os.environ},
    )
    assert run.returncode == 1, run.stderr
    assert "first divergence at step" in run.stdout


def test_a_structured_trace_of_a_correct_manager_matches() -> None:
    m = CPUOffloadingManager(2)
    out = m.prepare_store(["a"])
    assert out is not None
    steps = [
        {"op": "construct", "args": {"num_blocks": 2, "policy": "lru", "enable_events": False}},
        {
            "op": "prepare_store",
            "args": {"keys": ["a"]},
            "result": {"keys_to_store": ["a"], "slot_ids": [0], "evicted_keys": []},
        },
        {"op": "copy", "args": {"how": "pickle"}},
        {"op": "complete_store", "args": {"keys": ["a"]}, "result": None},
        {"op": "lookup", "args": {"key": "a"}, "result": "hit"},
    ]
    got = replay_text(json.dumps({"steps": steps}))
    assert got.ok and got.calls == 3


def _steps_with(error: dict[str, Any]) -> str:
    return json.dumps(
        [
            {"op": "construct", "args": {"num_blocks": 1}},
            {"op": "prepare_load", "args": {"keys": ["a"]}, "error": error},
        ]
    )


def test_rejects_an_unknown_error_type_as_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="unknown error type 'KeyError'"):
        replay_text(_steps_with({"type": "KeyError", "keys": ["a"]}))
    path = tmp_path / "t.json"
    path.write_text(_steps_with({"type": "Bogus"}), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "evictable.proofs.cli.main", "replay", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and ":step 1: unknown error type 'Bogus'" in run.stderr
    lines = tmp_path / "t.jsonl"
    lines.write_text(
        '{"num_blocks": 1}\n{"op": "prepare_load", "args": {"keys": ["a"]}, '
        '"error": {"type": "Bogus"}}\n',
        encoding="utf-8",
    )
    assert main(["replay", str(lines)]) == 2


def test_rejects_a_step_made_with_an_injected_fault() -> None:
    steps = [
        {"op": "construct", "args": {"num_blocks": 1}},
        {
            "op": "prepare_store",
            "args": {"keys": ["a"]},
            "error": {"type": "InvalidArgumentError"},
            "fault": {"hook": "insert", "call": 1, "late": False},
        },
    ]
    with pytest.raises(TraceFormatError, match="injected policy fault"):
        parse_structured(steps)


def test_rejects_a_finding_the_report_does_not_have(report: dict[str, Any]) -> None:
    with pytest.raises(TraceFormatError, match="there is no finding 9"):
        parse_structured(report, finding=9)
    with pytest.raises(TraceFormatError, match="no finding"):
        parse_structured({**report, "findings": []})


def test_rejects_a_key_recorded_only_as_its_repr() -> None:
    steps = [
        {"op": "construct", "args": {"num_blocks": 1}},
        {"op": "lookup", "args": {"key": {"repr": "K(1)"}}, "result": "miss"},
    ]
    with pytest.raises(TraceFormatError, match="recorded as its repr only"):
        parse_structured(steps)

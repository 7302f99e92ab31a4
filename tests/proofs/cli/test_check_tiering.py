"""`evictable check --target tiering` through the check pipeline, without vLLM: the
model's own orchestrator conforms (exit 0), vLLM 0.33's semantics are rejected with
their classes (exit 1), and a factory without `start` is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evictable.proofs.cli.main import main

SMALL = ["--target", "tiering", "--examples", "2", "--steps", "10", "--seed", "3"]


def test_the_model_orchestrator_conforms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "r.json"
    code = main(
        ["check", "tests.proofs.check.tiering_subjects:fixed", *SMALL, "--json", str(report)]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    fields = json.loads(report.read_text())
    assert fields["target"] == "tiering" and fields["verdict"] == "conforms"
    assert fields["tiering"]["worlds"] and fields["contract"]["profile"] == "seed"
    assert "lock-step (2 walks x 10 steps per world, seed 3)" in out


def test_vllm_semantics_are_rejected_with_their_classes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "r.json"
    argv = ["check", "tests.proofs.check.tiering_subjects:vllm_semantics", *SMALL]
    code = main([*argv, "--examples", "4", "--json", str(report)])
    capsys.readouterr()
    assert code == 1
    classes = {f["class"] for f in json.loads(report.read_text())["findings"]}
    assert "never_answers" in classes
    assert "divergence" not in classes


def test_rejects_a_factory_without_start(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "evictable.model.tiering:ModelTiering", *SMALL])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "progress" not in line]
    assert code == 2
    assert "Traceback" not in err and any("start(snapshot)" in line for line in lines)

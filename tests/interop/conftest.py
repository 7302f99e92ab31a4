"""Helpers of the interop suite (it runs where vLLM 0.33 is installed: `make interop`).

Each test module starts with `pytest.importorskip("vllm")`, so that `make test`
(without vLLM) reports the suite as skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evictable.proofs.cli.main import main

Run = tuple[int, dict[str, Any], str]

_RUNS: dict[tuple[str, ...], Run] = {}
"""Runs already made in this session: a check with the same arguments (a fixed seed,
or the deterministic lazy search) is made once and its outcome shared."""


@pytest.fixture
def check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    """`check(*argv) -> (exit code, report, printed output)` of `evictable check`."""

    def run(*argv: str) -> Run:
        if argv not in _RUNS:
            report = tmp_path / "report.json"
            code = main(["check", *argv, "--json", str(report)])
            out = capsys.readouterr().out
            _RUNS[argv] = (code, json.loads(report.read_text(encoding="utf-8")), out)
        return _RUNS[argv]

    return run


def classes(report: dict[str, Any]) -> list[str]:
    """The finding classes of a check report, in order."""
    return [f["class"] for f in report["findings"]]


def finding(report: dict[str, Any], cls: str) -> dict[str, Any]:
    return next(f for f in report["findings"] if f["class"] == cls)

"""Helpers of the LMCache suite (it runs where LMCache 0.5 is installed:
`make interop-lmcache`). Each test module starts with `pytest.importorskip("lmcache")`,
so that `make test` (without LMCache) reports the suite as skipped."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from evictable.proofs.cli.main import main

os.environ.setdefault("LMCACHE_LOG_LEVEL", "ERROR")  # before LMCache makes its loggers

Run = tuple[int, dict[str, Any], str]

_RUNS: dict[tuple[str, ...], Run] = {}
"""Runs already made in this session (fixed seeds: a run is made once and shared)."""


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


def classes(report: dict[str, Any]) -> set[str]:
    """The finding classes of a check report."""
    return {f["class"] for f in report["findings"]}

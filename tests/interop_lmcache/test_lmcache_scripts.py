"""Each LMCache finding is reproduced by its script on LMCache alone (interop/lmcache/:
no evictable import), and the corrected double fixes each (docs/interop.md)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("lmcache")

from tests.interop_lmcache.conftest import classes

SCRIPTS = Path(__file__).resolve().parents[2] / "interop" / "lmcache"
FINDINGS = ("leaked_read_refs", "touch_cache_stuck", "lfu_layerwise_lost_chunks")


def _run(name: str, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LMCACHE_LOG_LEVEL": "ERROR"}
    return subprocess.run(
        [sys.executable, str(SCRIPTS / f"{name}.py"), *argv],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def test_the_scripts_are_the_findings() -> None:
    assert sorted(p.stem for p in SCRIPTS.glob("*.py")) == sorted(FINDINGS)


@pytest.mark.parametrize("name", FINDINGS)
def test_script_imports_lmcache_alone(name: str) -> None:
    tree = ast.parse((SCRIPTS / f"{name}.py").read_text(encoding="utf-8"))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    }
    assert "evictable" not in imported and "lmcache" in imported


@pytest.mark.parametrize("name", FINDINGS)
def test_script_reproduces_on_lmcache(name: str) -> None:
    run = _run(name)
    assert run.returncode == 0, f"{name} did not reproduce:\n{run.stdout}\n{run.stderr}"


def test_fifo_is_not_affected_by_the_touch_failure() -> None:
    """FIFO's `update_on_hit` does nothing: the record is emptied, no error."""
    assert _run("touch_cache_stuck", "FIFO").returncode == 1


@pytest.mark.parametrize(
    "spec",
    [
        "tests.interop_lmcache.corrected:corrected_lru",
        "tests.interop_lmcache.corrected:corrected_lfu_layerwise",
    ],
)
def test_corrected_double_has_no_finding(check: Any, spec: str) -> None:
    code, report, out = check(spec, "--seed", "0", "--examples", "120")
    assert classes(report) == set() and code == 0, out

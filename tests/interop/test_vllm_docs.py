"""Every ```python block of docs/interop.md runs as printed where vLLM is installed.

`tests/test_docs_examples.py` skips these blocks (they follow `<!-- not run -->`,
because they need vLLM); here each one runs in a fresh interpreter of the interop
venv, from an empty directory -- a finding's block stops at the defect with the
`AssertionError` of its finding, the others run through -- and each finding's
snippet is still the program `evictable check` prints for it (compared as
statements: comments, layout and the wording of `FINDING` are the page's own).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")

from tests.interop.conftest import finding
from tests.test_docs_examples import ROOT, Block, python_blocks
from tools.transcripts import regenerate, stale_message, transcripts

BLOCKS = python_blocks(ROOT / "docs" / "interop.md")
TRANSCRIPTS = transcripts(ROOT / "docs" / "interop.md")


@pytest.mark.parametrize("block", TRANSCRIPTS, ids=[b.name for b in TRANSCRIPTS])
def test_interop_md_transcript_is_current(block: Any) -> None:
    assert block.needs == "vllm"
    fresh = regenerate(block)
    assert fresh == block, stale_message(block, fresh)


def test_interop_md_has_the_vllm_examples() -> None:
    assert len(BLOCKS) >= 5 and all(b.skip for b in BLOCKS)


@pytest.mark.parametrize("block", [pytest.param(b, id=b.name) for b in BLOCKS])
def test_interop_md_block_runs_with_vllm(block: Block, tmp_path: Path) -> None:
    script = tmp_path / f"{block.path.stem}_{block.line}.py"
    script.write_text("\n" * (block.line - 1) + block.code, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    if "FINDING = " in block.code:  # a finding: it asserts the model's answer, and vLLM fails it
        last = (run.stderr.strip().splitlines() or [""])[-1]
        assert run.returncode == 1 and last.startswith("AssertionError"), run.stderr
        return
    assert run.returncode == 0, f"{block.name} failed:\n{run.stderr}"


def _program(code: str) -> str:
    """The statements of `code`, without comments, quoting, layout or the wording of
    the finding's message (`FINDING = ...`)."""
    tree = ast.parse(code)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "FINDING" for t in node.targets
        ):
            node.value = ast.Constant("")
    return ast.dump(tree)


@pytest.mark.parametrize(
    ("number", "argv", "cls"),
    [
        (0, ("evictable.proofs.adapters.vllm:lru_manager", "--seed", "0"), "slot"),
        (1, ("evictable.proofs.adapters.vllm:lru_manager", "--seed", "0"), "leaked_pin"),
        (2, ("evictable.proofs.adapters.vllm:lru_manager", "--seed", "0"), "atomicity"),
        (3, ("evictable.proofs.adapters.vllm:lazy_scanner", "--target", "lazy"), "scan"),
    ],
    ids=["finding-1", "finding-2", "finding-3", "finding-4"],
)
def test_each_finding_of_interop_md_is_the_trace_the_tool_prints(
    check: Any, number: int, argv: tuple[str, ...], cls: str
) -> None:
    _, report, _ = check(*argv)
    printed = finding(report, cls)["snippet"]
    assert _program(BLOCKS[number].code) == _program(printed), printed

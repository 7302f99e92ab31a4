"""Every ```python block of docs/interop.md runs as printed where vLLM is installed.

`tests/test_docs_examples.py` skips these blocks (they follow `<!-- not run -->`,
because they need vLLM); here each one runs in a fresh interpreter of the interop
venv, from an empty directory.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("vllm")

from tests.test_docs_examples import ROOT, Block, python_blocks

BLOCKS = python_blocks(ROOT / "docs" / "interop.md")


def test_interop_md_has_the_vllm_examples() -> None:
    assert len(BLOCKS) >= 5 and all(b.skip for b in BLOCKS)


@pytest.mark.parametrize("block", [pytest.param(b, id=b.name) for b in BLOCKS])
def test_interop_md_block_runs_with_vllm(block: Block, tmp_path: Path) -> None:
    script = tmp_path / f"{block.path.stem}_{block.line}.py"
    script.write_text("\n" * (block.line - 1) + block.code, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, f"{block.name} failed:\n{run.stderr}"

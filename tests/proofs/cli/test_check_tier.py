"""`evictable check --target tier` where vLLM is not installed: one line that says
which environment to use, exit code 2 (the interop suite runs it where vLLM is)."""

from __future__ import annotations

import importlib.util

import pytest

from evictable.proofs.cli.main import main


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_rejects_the_tier_target_without_vllm_naming_the_interop_venv(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["check", "mypkg.tiers:MyTier", "--target", "tier"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2
    assert len(lines) == 1 and "Traceback" not in err
    assert "needs vLLM 0.33" in lines[0] and ".venv-interop" in lines[0]

"""Without vLLM, the vLLM adapters say so in one line (the interop suite needs vLLM)."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import pytest

from evictable.proofs.cli.main import main

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here"
)


def test_importing_the_adapters_without_vllm_is_one_clear_error() -> None:
    sys.modules.pop("evictable.proofs.adapters.vllm", None)
    with pytest.raises(ImportError, match=r"needs vLLM 0\.33\.0 .*make interop") as info:
        importlib.import_module("evictable.proofs.adapters.vllm")
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_check_of_a_vllm_adapter_without_vllm_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["check", "evictable.proofs.adapters.vllm:lru_manager"])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "needs vLLM 0.33.0" in err

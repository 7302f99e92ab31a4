"""Without vLLM, every module of the vLLM plug-in says so in one `ImportError` that names
the extra to install (`evictable.vllm_base`'s guard runs before anything of vLLM)."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here"
)

MODULES = (
    "evictable.vllm",
    "evictable.vllm_base",
    "evictable.vllm_lru",
    "evictable.vllm_arc",
    "evictable.vllm_checked",
    "evictable.vllm_spec",
    "evictable.vllm_tiers",
    "evictable.vllm_tiering",
)


@pytest.mark.parametrize("module", MODULES)
def test_each_plugin_module_without_vllm_is_one_clear_error(module: str) -> None:
    for name in MODULES:
        sys.modules.pop(name, None)
    with pytest.raises(
        ImportError, match=r"needs vLLM 0\.33 .*pip install evictable\[vllm\]"
    ) as info:
        importlib.import_module(module)
    assert info.value.__cause__ is None and info.value.__suppress_context__

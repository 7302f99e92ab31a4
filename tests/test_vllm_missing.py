"""Without vLLM, every module of the vLLM plug-in (the package `evictable.vllm`) says so
in one `ImportError` that names the extra to install (`evictable.vllm.base`'s guard runs
before anything of vLLM)."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here"
)


def _plugin_modules() -> tuple[str, ...]:
    """`evictable.vllm` and every module in it, found without importing it."""
    spec = importlib.util.find_spec("evictable.vllm")
    assert spec is not None and spec.submodule_search_locations is not None
    found = pkgutil.iter_modules(spec.submodule_search_locations, "evictable.vllm.")
    return ("evictable.vllm", *sorted(m.name for m in found))


MODULES = _plugin_modules()


def test_the_plugin_is_one_package_of_its_modules() -> None:
    assert MODULES == (
        "evictable.vllm",
        "evictable.vllm.arc",
        "evictable.vllm.base",
        "evictable.vllm.checked",
        "evictable.vllm.lru",
        "evictable.vllm.mirrored",
        "evictable.vllm.tiering",
        "evictable.vllm.tiers",
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

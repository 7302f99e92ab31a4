"""Without SGLang, `evictable.sglang` (and the adapter package under it) says so in one
`ImportError` that names the make target, and leaves no torchvision stub behind."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sglang") is not None, reason="SGLang is installed here"
)

MODULES = ("evictable.sglang", "evictable.proofs.adapters.sglang")


@pytest.mark.parametrize("module", MODULES)
def test_without_sglang_the_import_is_one_clear_error(module: str) -> None:
    for name in MODULES:
        sys.modules.pop(name, None)
    with pytest.raises(ImportError, match=r"needs SGLang 0\.5 .*make interop-sglang") as info:
        importlib.import_module(module)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert not any(type(f).__name__ == "_StubFinder" for f in sys.meta_path)
    assert "torchvision" not in sys.modules

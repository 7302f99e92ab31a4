"""Without LMCache, every module of the LMCache plug-in says so in one `ImportError` that
names the make target that builds its venv (`make interop-lmcache`)."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("lmcache") is not None, reason="LMCache is installed here"
)

MODULES = (
    "evictable.lmcache",
    "evictable.lmcache.policy",
    "evictable.proofs.adapters.lmcache",
    "evictable.proofs.adapters.lmcache.backend",
)


@pytest.mark.parametrize("module", MODULES)
def test_each_lmcache_module_without_lmcache_is_one_clear_error(module: str) -> None:
    for name in MODULES:
        sys.modules.pop(name, None)
    with pytest.raises(ImportError, match=r"needs LMCache 0\.5 .*make interop-lmcache") as info:
        importlib.import_module(module)
    assert info.value.__cause__ is None and info.value.__suppress_context__

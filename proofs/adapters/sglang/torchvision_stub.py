"""A stand-in for `torchvision`, installed only where the real one cannot be imported.

SGLang 0.5 imports `torchvision.transforms` at module level on the way to its memory
caches (`sglang.srt.configs` loads its vision-language configs, which import it), and
`transformers` probes it. The index's torchvision wheel is built against a CUDA torch
and fails to import beside the CPU torch of `make interop-sglang` (its operators are
not registered: `operator torchvision::nms does not exist`), so the interop venv has no
torchvision. Nothing on the path of SGLang's HiCache host tier calls it.

`install()` puts a finder on `sys.meta_path` that serves `torchvision` and every
`torchvision.*` submodule as an empty module, and does so only when a real
torchvision is missing or broken. Reading any attribute of a stub module gives a
placeholder that raises `ImportError` when called, so code that really needs
torchvision fails with a message naming this stub rather than computing with it.
The stub reports `__version__ == "0.0.0"` (what `transformers` parses when it probes).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence
from typing import Any

__all__ = ["STUB_VERSION", "install", "installed", "uninstall"]

STUB_VERSION = "0.0.0"
"""The version the stub reports: older than any real torchvision release."""

_NAME = "torchvision"


class _Absent:
    """Any attribute of a stub module: usable in an annotation or a base class list,
    raising `ImportError` when called."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, name: str) -> _Absent:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Absent(f"{self._name}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise ImportError(f"{self._name}: torchvision is a stub here (no real torchvision)")

    def __mro_entries__(self, bases: tuple[object, ...]) -> tuple[type, ...]:
        return (object,)


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> _Absent:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Absent(f"{self.__name__}.{name}")


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves `torchvision` and its submodules as stub modules."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == _NAME or fullname.startswith(_NAME + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _StubModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []
        module.__version__ = STUB_VERSION  # type: ignore[attr-defined]


def installed() -> bool:
    """Whether the stub serves `torchvision` in this process."""
    return any(isinstance(f, _StubFinder) for f in sys.meta_path)


def _real_torchvision_works() -> bool:
    try:
        importlib.import_module(_NAME)
    except Exception:  # missing, or broken beside this torch (see the module doc)
        for name in [n for n in sys.modules if n == _NAME or n.startswith(_NAME + ".")]:
            del sys.modules[name]  # drop the half-imported package
        return False
    return True


def install() -> bool:
    """Install the stub unless a working torchvision is importable; return whether
    the stub is (now) in place. Idempotent."""
    if installed():
        return True
    if _real_torchvision_works():
        return False
    sys.meta_path.insert(0, _StubFinder())
    return True


def uninstall() -> None:
    """Remove the stub and every stub module it served (the adapter does so when SGLang
    itself cannot be imported, so a failed import leaves nothing behind)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _StubFinder)]
    for name, module in list(sys.modules.items()):
        if isinstance(module, _StubModule):
            del sys.modules[name]

"""Setting up a check: importing the user's factory and probing what it makes.

`load_factory("mypkg.cache:make")` imports a factory named on a command line;
`probe_manager(factory, policy, contract)` calls it once and says, in one line, why
the engines cannot drive what it returns. Both raise `SetupError`, which the command
turns into exit code 2.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from evictable.proofs.base.contract import DEFAULT, Contract
from evictable.proofs.base.protocol import ADAPTER_API, BLACK_BOX_API, Factory

__all__ = ["SetupError", "load_factory", "probe_manager"]


class SetupError(ValueError):
    """A check cannot start: a bad MODULE:FACTORY spec or an unusable factory."""


def load_factory(spec: str) -> Factory:
    """Import `MODULE:FACTORY` (the attribute may be dotted); the current directory
    is importable, as with `python -m`. Raises `SetupError` with the reason."""
    module_name, sep, attr = spec.partition(":")
    if (
        not sep
        or not module_name
        or not attr
        or ":" in attr
        or not all(part.isidentifier() for part in module_name.split(".") + attr.split("."))
    ):
        raise SetupError(f"expected MODULE:FACTORY (e.g. mypkg.cache:make), got {spec!r}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise SetupError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SetupError(f"{module_name!r} has no attribute {attr!r}") from None
    if not callable(obj):
        raise SetupError(f"{spec} is a {type(obj).__name__}, not callable")
    return obj  # type: ignore[no-any-return]


def probe_manager(factory: Factory, policy: str, contract: Contract = DEFAULT) -> None:
    """Call the factory once; raise `SetupError` if it fails or lacks the API
    (`contract`: a black box needs no `snapshot()` and no counters)."""
    try:
        manager = factory(2, policy, False)
    except Exception as exc:
        raise SetupError(
            f"factory(2, {policy!r}, False) raised {type(exc).__name__}: {exc}"
        ) from exc
    api = BLACK_BOX_API if contract.black_box else ADAPTER_API
    missing = [name for name in api if not hasattr(manager, name)]
    if missing:
        raise SetupError(
            f"factory returned a {type(manager).__name__} without the "
            f"manager API: missing {missing}"
        )

"""Setting up a check: importing the user's factory, and running user code at setup.

`load_factory("mypkg.cache:make")` imports a factory named on a command line (the
check pipeline's load stage). User code run before the engines start (the import,
the guide's probe of the factory, `check.guide`) runs through `call_user`: an
exception, a `sys.exit()` or a call that never returns (bounded by
`SETUP_BACKSTOP_S`, a hang backstop) becomes a `SetupError` naming what happened,
which the command turns into exit code 2 -- never a finding.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from evictable.proofs.base.guard import StepTimeout, wall_guard
from evictable.proofs.base.protocol import Factory

__all__ = [
    "SETUP_BACKSTOP_S",
    "SetupError",
    "call_user",
    "load_factory",
]


def _env_backstop() -> float:
    try:
        value = float(os.environ.get("EVICTABLE_SETUP_BACKSTOP_S", ""))
    except ValueError:
        return 300.0
    return value if value > 0 else 300.0


SETUP_BACKSTOP_S = _env_backstop()
"""How long an import or a constructor of user code may run before the check gives up
(a hang backstop: importing vLLM and torch takes seconds, a hang forever); default
300, `EVICTABLE_SETUP_BACKSTOP_S` overrides."""

T = TypeVar("T")


class SetupError(ValueError):
    """A check cannot start: a bad MODULE:FACTORY spec or an unusable factory."""


def call_user(what: str, fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)`, user code: what it raises, a `sys.exit()` in it, or a hang past
    `SETUP_BACKSTOP_S` becomes a `SetupError` that starts with `what`."""
    try:
        with wall_guard(SETUP_BACKSTOP_S):
            return fn(*args)
    except StepTimeout:
        raise SetupError(
            f"{what} did not return within {SETUP_BACKSTOP_S:g}s (a hang backstop)"
        ) from None
    except SystemExit as exc:
        raise SetupError(f"{what} called sys.exit({exc.code!r})") from None
    except Exception as exc:
        raise SetupError(f"{what} raised {type(exc).__name__}: {exc}") from exc


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
    obj: Any = call_user(f"importing {module_name!r}", importlib.import_module, module_name)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SetupError(f"{module_name!r} has no attribute {attr!r}") from None
    if not callable(obj):
        raise SetupError(f"{spec} is a {type(obj).__name__}, not callable")
    return obj  # type: ignore[no-any-return]

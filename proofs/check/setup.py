"""Setting up a check: importing the user's factory and probing what it makes.

`load_factory("mypkg.cache:make")` imports a factory named on a command line;
`probe_manager(factory, policy, contract)` calls it once and says, in one line, why
the engines cannot drive what it returns and what would (`check.guide`: a known
engine's class names its shipped adapter, a signature that differs from the
protocol needs an adapter, a missing `snapshot()` a black-box contract);
`probe_gpu` does the same for the GPU-side targets. All raise `SetupError`, which
the command turns into exit code 2 -- never a finding. User code runs through
`call_user`: an exception, a `sys.exit()` or a call that never returns (bounded by
`SETUP_BACKSTOP_S`, a hang backstop) becomes a `SetupError` naming what happened.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from evictable.impl.free_queue import KVCacheBlock
from evictable.proofs.base.contract import DEFAULT, Contract
from evictable.proofs.base.guard import StepTimeout, wall_guard
from evictable.proofs.base.protocol import Factory
from evictable.proofs.check.guide import guide

__all__ = [
    "SETUP_BACKSTOP_S",
    "SetupError",
    "call_user",
    "load_factory",
    "probe_gpu",
    "probe_manager",
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


def _name(factory: object, spec: str | None) -> str:
    if spec:
        return spec
    return str(getattr(factory, "__qualname__", None) or type(factory).__name__)


def probe_manager(
    factory: Factory, policy: str, contract: Contract = DEFAULT, spec: str | None = None
) -> None:
    """Call the factory once; raise `SetupError` if it fails or the engines cannot
    drive what it makes under `contract`, with what to do (`check.guide`). A class
    given as the factory is looked at before it is called (a known engine's class,
    or signatures that differ from the protocol)."""
    name = _name(factory, spec)
    if isinstance(factory, type):
        why = guide(factory, "manager", contract, name)
        if why is not None:
            raise SetupError(why)
    manager = call_user(f"factory(2, {policy!r}, False)", factory, 2, policy, False)
    why = guide(manager, "manager", contract, name)
    if why is not None:
        raise SetupError(why)


def probe_gpu(factory: Any, target: str, contract: Contract, spec: str | None = None) -> None:
    """What `probe_manager` does for the GPU targets (`free-queue`, `block-pool`,
    `lazy`): the factory itself, and -- for a queue or a pool -- what it makes from
    small arguments (two blocks, four blocks)."""
    name = _name(factory, spec)
    why = guide(factory, target, contract, name) if isinstance(factory, type) else None
    if why is not None:
        raise SetupError(why)
    if target == "free-queue":
        block = getattr(factory, "evictable_blocks", KVCacheBlock)
        blocks = [call_user(f"evictable_blocks({i})", block, i) for i in range(2)]
        made = call_user("factory(blocks)", factory, blocks)
    elif target == "block-pool":
        made = call_user("factory(4)", factory, 4)
    else:
        return  # a scanner needs a pool: the engines build both
    why = guide(made, target, contract, name)
    if why is not None:
        raise SetupError(why)

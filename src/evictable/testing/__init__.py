"""Check a KV-cache manager you wrote (or vLLM's, or a fork's) against evictable's model.

The public face of the verification suite, for your own tests and scripts:

* `check_manager(factory, policy=None, *, contract=None, errors=None, ...)` -- the
  conformance engine and the explorer against the managers `factory(num_blocks,
  policy, enable_events)` makes; returns a `ManagerCheck` with every finding, one
  per class (`Finding`), each with its shortest trace as a runnable snippet.
* Contracts: `Contract`, `Mode` (`exact`, `safety`), `Errors` (`typed`, `builtin`,
  `any`), `Inputs`, `KeySpace`, `DEFAULT`, `ContractError`; findings: `Finding`,
  `Kind` (their classes).
* The adapter protocol: `ManagerAdapter`, `Factory`, `ADAPTER_API`, `BLACK_BOX_API`.
* The lock-step machine: `make_machine(factory, policy, contract=...)` (a Hypothesis
  `RuleBasedStateMachine`; `.TestCase` runs it under pytest), `run_conformance`.
* The explorer: `explore(bounds, factory, contract=...)`, `Bounds`.
* Strategies for properties of your own: `keys`, `key_batches`, `calls`,
  `call_sequences`, and `check_calls` to replay drawn calls on the model.
* A third-party policy: `register_verified_policy` (docs/architecture.md).
* The pytest plugin (`evictable.testing.plugin`, registered through the `pytest11`
  entry point): the `evictable_check` fixture and `--evictable-seed`.

Importing this module is cheap: each name is imported on first use. Everything else
in `evictable.proofs` is internal and may change between releases.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evictable.proofs.base.bounds import Bounds
    from evictable.proofs.base.compare import Errors, Kind
    from evictable.proofs.base.contract import (
        DEFAULT,
        Contract,
        ContractError,
        Inputs,
        KeySpace,
        Mode,
    )
    from evictable.proofs.base.findings import Finding
    from evictable.proofs.base.profiles import register_verified_policy
    from evictable.proofs.base.protocol import (
        ADAPTER_API,
        BLACK_BOX_API,
        Factory,
        ManagerAdapter,
    )
    from evictable.proofs.check.manager import ManagerCheck, check_manager
    from evictable.proofs.explore.manager import explore
    from evictable.proofs.lockstep.conformance import make_machine, run_conformance
    from evictable.proofs.lockstep.strategies import (
        call_sequences,
        calls,
        check_calls,
        key_batches,
        keys,
    )

_HOME: dict[str, str] = {
    "Bounds": "evictable.proofs.base.bounds",
    "Errors": "evictable.proofs.base.compare",
    "Kind": "evictable.proofs.base.compare",
    "DEFAULT": "evictable.proofs.base.contract",
    "Contract": "evictable.proofs.base.contract",
    "ContractError": "evictable.proofs.base.contract",
    "Inputs": "evictable.proofs.base.contract",
    "KeySpace": "evictable.proofs.base.contract",
    "Mode": "evictable.proofs.base.contract",
    "Finding": "evictable.proofs.base.findings",
    "register_verified_policy": "evictable.proofs.base.profiles",
    "ADAPTER_API": "evictable.proofs.base.protocol",
    "BLACK_BOX_API": "evictable.proofs.base.protocol",
    "Factory": "evictable.proofs.base.protocol",
    "ManagerAdapter": "evictable.proofs.base.protocol",
    "ManagerCheck": "evictable.proofs.check.manager",
    "check_manager": "evictable.proofs.check.manager",
    "explore": "evictable.proofs.explore.manager",
    "make_machine": "evictable.proofs.lockstep.conformance",
    "run_conformance": "evictable.proofs.lockstep.conformance",
    "call_sequences": "evictable.proofs.lockstep.strategies",
    "calls": "evictable.proofs.lockstep.strategies",
    "check_calls": "evictable.proofs.lockstep.strategies",
    "key_batches": "evictable.proofs.lockstep.strategies",
    "keys": "evictable.proofs.lockstep.strategies",
}
"""Where each public name lives (the `TYPE_CHECKING` imports above say the same for
type checkers; `tests/test_public_face.py` holds the two to each other)."""

__all__ = [
    "ADAPTER_API",
    "BLACK_BOX_API",
    "DEFAULT",
    "Bounds",
    "Contract",
    "ContractError",
    "Errors",
    "Factory",
    "Finding",
    "Inputs",
    "KeySpace",
    "Kind",
    "ManagerAdapter",
    "ManagerCheck",
    "Mode",
    "call_sequences",
    "calls",
    "check_calls",
    "check_manager",
    "explore",
    "key_batches",
    "keys",
    "make_machine",
    "register_verified_policy",
    "run_conformance",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'evictable.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # the next access is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})

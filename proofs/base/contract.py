"""What an implementation is held to: the contract every lock-step engine checks.

A `Contract` is one value shared by the conformance engine, the explorer and the
GPU-side machines (docs/conformance.md, "Contracts"):

* `mode` -- `exact` (the default, and what this project's implementation is held
  to): results, errors and snapshots identical to the model's. `safety`: the model
  is nondeterministic wherever policies may legitimately differ (which idle,
  unprotected blocks are evicted; which free slots are handed out; recency order is
  not compared), and the implementation's observed choices resolve it
  (`base.safety`).
* `errors` -- the error contract (`compare.Errors`): `typed`, `builtin` or `any`.
  All-or-nothing is checked under every one of them.
* `black_box` -- no `snapshot()`: state is observed through the API only (lookups
  of the engine's keys, results, events, counters where exposed).
* `inputs` -- which calls are made at all: calls the model rejects for the state
  (`invalid`), batches with a repeated key (`duplicates`), malformed arguments
  (`malformed`: shapes, types, bad constructor arguments).
* `keys` -- how keys are made (`KeySpace`): in the caller's own format, so that an
  adapter sees the keys it would see in production.
* `profile` -- which semantics the model specifies (`model.vllm033.PROFILES`):
  `seed` (the default, docs/semantics.md), `vllm-0.33` (vLLM 0.33's
  request-scoped recency, `model.vllm033`), `sglang-0.5` (SGLang 0.5's host tier,
  `model.sglang05`; exact contract only) or `lmcache-0.5` (LMCache 0.5's CPU tier,
  `model.lmcache05`; exact contract only).
* `following` -- set only by the engines, when they drive a finding on to its
  consequence (`Contract.follow`).

An adapter may *declare* its contract: a factory attribute `evictable_contract`
(a `Contract`, or a dict of field overrides such as `{"errors": "any"}`).
`resolve(factory, ...)` starts from that declaration, applies a named preset
(`PRESETS`: `third-party` = black box, safety contract, any error type, valid inputs
only) and then explicit choices (the command line's flags) on top.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evictable.model.types import Key
from evictable.model.vllm033 import PROFILES
from evictable.proofs.base.compare import Errors

__all__ = [
    "DEFAULT",
    "PRESETS",
    "Contract",
    "ContractError",
    "Inputs",
    "KeySpace",
    "Mode",
    "declared",
    "resolve",
]


class ContractError(ValueError):
    """A contract that cannot be built (an unknown mode, a bad declaration)."""


class Mode(enum.Enum):
    """How results and states are compared."""

    EXACT = "exact"
    SAFETY = "safety"


@dataclass(frozen=True)
class Inputs:
    """The input switches: which kinds of call the engines make (all, by default)."""

    invalid: bool = True
    """Calls the model rejects in the current state (a load of an absent key, ...)."""
    duplicates: bool = True
    """Key batches with a repeated key."""
    malformed: bool = True
    """Malformed arguments: wrong shapes and types, bad constructor arguments."""

    @staticmethod
    def valid_only() -> Inputs:
        return Inputs(invalid=False, duplicates=False, malformed=False)

    def describe(self) -> str:
        off = [name for name in ("invalid", "duplicates", "malformed") if not getattr(self, name)]
        return "all inputs" if not off else "no " + ", no ".join(off) + " calls"


def _default_key(i: int) -> Key:
    return f"k{i}".encode()


@dataclass(frozen=True)
class KeySpace:
    """How the engines make the i-th key of their key pool.

    `make(i)` returns the key (hashable; equal keys must mean the same block);
    `preamble` holds the import lines a runnable snippet needs to rebuild keys the
    way they print (a key whose `repr` is `K(3)` needs `K` imported). The default
    space is the engines' own: `b'k0'`, `b'k1'`, ... for the conformance engine and
    `'a'`, `'b'`, ... for the explorer.
    """

    make: Callable[[int], Key] | None = None
    preamble: tuple[str, ...] = ()
    name: str = "default"

    def pool(self, n: int, default: Callable[[int], Key] = _default_key) -> tuple[Key, ...]:
        """The first `n` keys (distinct: a key space that repeats itself is an error)."""
        make = self.make or default
        keys = tuple(make(i) for i in range(n))
        if len(set(keys)) != n:
            raise ContractError(f"key space {self.name!r} does not give {n} distinct keys")
        return keys


@dataclass(frozen=True)
class Contract:
    """One contract (see the module docstring)."""

    mode: Mode = Mode.EXACT
    errors: Errors = Errors.TYPED
    black_box: bool = False
    inputs: Inputs = field(default_factory=Inputs)
    keys: KeySpace = field(default_factory=KeySpace)
    profile: str = "seed"
    following: bool = False
    """Following a divergence to its consequence (`lockstep.follow`): the counters and
    the implementation's own invariants are not compared, so that a run that already
    showed them wrong goes on to what they lead to. Never set by a user."""

    @property
    def safety(self) -> bool:
        return self.mode is Mode.SAFETY

    @property
    def exact(self) -> bool:
        return self.mode is Mode.EXACT and not self.black_box

    def describe(self) -> str:
        """One line, e.g. `safety contract, any errors, black box, no malformed calls`."""
        parts = [f"{self.mode.value} contract", f"{self.errors.value} errors"]
        if self.black_box:
            parts.append("black box")
        parts.append(self.inputs.describe())
        if self.keys.name != "default":
            parts.append(f"keys: {self.keys.name}")
        if self.profile != "seed":
            parts.append(f"profile {self.profile}")
        if self.following:
            parts.append("counters not compared (following)")
        return ", ".join(parts)

    def follow(self) -> Contract:
        """The contract a divergence is followed under (`lockstep.follow`): the safety
        contract (the implementation's legal choices are its own), counters and the
        implementation's own invariants not compared; errors, inputs, keys, profile
        and black box as they are."""
        return dataclasses.replace(self, mode=Mode.SAFETY, following=True)

    def as_dict(self) -> dict[str, Any]:
        """The contract as report fields (`#/$defs/contract` of the report schema)."""
        return {
            "mode": self.mode.value,
            "errors": self.errors.value,
            "black_box": self.black_box,
            "inputs": {
                "invalid": self.inputs.invalid,
                "duplicates": self.inputs.duplicates,
                "malformed": self.inputs.malformed,
            },
            "keys": self.keys.name,
            "profile": self.profile,
        }


DEFAULT = Contract()
"""The exact contract with typed errors, every input, the engines' own keys."""


def _enum(kind: type[enum.Enum], value: object, what: str) -> Any:
    if isinstance(value, kind):
        return value
    for member in kind:
        if value == member.value:
            return member
    known = ", ".join(str(m.value) for m in kind)
    raise ContractError(f"unknown {what} {value!r} (known: {known})")


def _apply(base: Contract, overrides: Mapping[str, Any]) -> Contract:
    changes: dict[str, Any] = {}
    inputs = base.inputs
    for name, value in overrides.items():
        if value is None:
            continue
        if name == "mode":
            changes["mode"] = _enum(Mode, value, "contract")
        elif name == "errors":
            changes["errors"] = _enum(Errors, value, "error contract")
        elif name == "black_box":
            changes["black_box"] = bool(value)
        elif name == "keys":
            if not isinstance(value, KeySpace):
                raise ContractError(f"keys must be a KeySpace, got {value!r}")
            changes["keys"] = value
        elif name == "inputs":
            if not isinstance(value, Inputs):
                raise ContractError(f"inputs must be an Inputs, got {value!r}")
            inputs = value
        elif name in ("invalid", "duplicates", "malformed"):
            inputs = dataclasses.replace(inputs, **{name: bool(value)})
        elif name == "profile":
            if value not in PROFILES:
                raise ContractError(f"unknown profile {value!r} (known: {', '.join(PROFILES)})")
            changes["profile"] = str(value)
        elif name == "valid_only":
            if value:
                inputs = Inputs.valid_only()
        else:
            raise ContractError(f"unknown contract field {name!r}")
    return dataclasses.replace(base, inputs=inputs, **changes)


def declared(factory: object) -> Contract:
    """The contract an adapter factory declares (`evictable_contract`), else `DEFAULT`."""
    decl = getattr(factory, "evictable_contract", None)
    if decl is None:
        return DEFAULT
    if isinstance(decl, Contract):
        return decl
    if isinstance(decl, Mapping):
        return _apply(DEFAULT, decl)
    raise ContractError(
        f"{getattr(factory, '__name__', factory)!r}.evictable_contract must be a Contract "
        f"or a dict, got {type(decl).__name__}"
    )


PRESETS: dict[str, dict[str, Any]] = {
    "third-party": {"mode": "safety", "errors": "any", "black_box": True, "valid_only": True},
}
"""Named sets of contract choices. `third-party`: a manager you did not write, checked
through its API alone -- black box, the safety contract (any legal victims and slots,
recency not compared), any exception as a rejection, valid calls only."""


def resolve(factory: object, preset: str | None = None, **choices: Any) -> Contract:
    """The factory's declared contract, then the `preset` (`PRESETS`), then `choices`
    on top (None: keep what is below). Choices: `mode`, `errors`, `black_box`,
    `valid_only`, `invalid`, `duplicates`, `malformed`, `inputs`, `keys`, `profile`.
    Raises `ContractError` (an unknown preset too)."""
    base = declared(factory)
    if preset is not None:
        if preset not in PRESETS:
            raise ContractError(f"unknown preset {preset!r} (known: {', '.join(sorted(PRESETS))})")
        base = _apply(base, PRESETS[preset])
    got = _apply(base, choices)
    if got.profile == "lmcache-0.5" and got.safety:
        raise ContractError("the lmcache-0.5 profile has the exact contract only")
    return got

"""A target of `evictable check`: what the factory makes, and how the stages treat it.

The check pipeline (`check.pipeline`) runs the same stages for every target; a
`Target` is the plug-in that says, for one kind of subject, how it is loaded, what
the guide stage settles, which engines run and which finding classes they report.
`register_target` adds one (it then appears in `evictable check --target`, with its
own options); the built-in targets are registered by `check.pipeline`.

* `Request` -- what was asked for (the command line's choices, or the Python API's);
* `Subject` -- what the load stage made of it, completed by the guide stage;
* `EngineRun` -- what the target's engines did: findings (not yet ranked), status,
  lines for the terminal, fields for the report.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evictable.proofs.base.compare import Kind
from evictable.proofs.base.contract import Contract
from evictable.proofs.base.findings import Finding
from evictable.proofs.check.setup import SetupError, load_factory

__all__ = [
    "TARGETS",
    "EngineRun",
    "Request",
    "Subject",
    "Target",
    "load_subject",
    "register_target",
    "target",
    "targets",
]


@dataclass(frozen=True)
class Request:
    """What was asked for: the subject, its target, the contract choices, the sizes."""

    spec: str
    """`MODULE:FACTORY` (or, from Python, any name for the factory)."""
    target: str = "manager"
    preset: str | None = None
    choices: Mapping[str, Any] = field(default_factory=dict)
    """Contract choices on top of the preset (`base.contract.resolve`'s keywords;
    None values keep what is below)."""
    policy: str | None = None
    examples: int = 200
    steps: int = 40
    seed: int | None = None
    workers: int = 2
    explore: bool = True
    options: Mapping[str, Any] = field(default_factory=dict)
    """The target's own options (`lazy`: `pool`, `blocks`), by name."""
    contract: Contract | None = None
    """A contract given whole (from Python), used as it is: no preset, no choices."""

    def option(self, name: str, default: Any = None) -> Any:
        value = self.options.get(name)
        return default if value is None else value


@dataclass(frozen=True)
class Subject:
    """What the load stage made of the request, completed by the guide stage."""

    spec: str
    factory: Any
    import_s: float = 0.0
    policy: str | None = None
    """The policy name the factory is called with (manager target; set by its guide)."""
    parts: Mapping[str, Any] = field(default_factory=dict)
    """Further loaded pieces (`lazy`: the block pool factory, `pool`)."""


@dataclass(frozen=True)
class EngineRun:
    """What a target's engines did: their findings (not yet ranked), whether they
    could run, what the terminal shows of them and their report fields."""

    findings: tuple[Finding, ...]
    status: str
    """"passed", "failed" (findings) or "error" (the engines could not reach a verdict)."""
    lines: tuple[str, ...] = ()
    """What ran, one line each (engines, rounds, figures), for the terminal."""
    fields: Mapping[str, Any] = field(default_factory=dict)
    """The target's fields of the report (`seed`, `conformance`, `explorations`, ...)."""
    error: str | None = None
    """Why no verdict was reached (status "error"), one line."""
    detail: Any = None
    """The target's own result object (`check.manager.ManagerCheck`, ...)."""
    held: str | None = None
    """The contract the engines held the subject to, when it is the target's own
    rather than the resolved manager contract (the terminal's `contract:` line)."""


Loader = Callable[[Request], Subject]
Guide = Callable[[Subject, Contract, Request], Subject]
Engines = Callable[[Subject, Contract, Request], EngineRun]


def load_subject(request: Request) -> Subject:
    """The default load stage: import `request.spec` (`setup.load_factory`), timed."""
    t0 = time.perf_counter()
    factory = load_factory(request.spec)
    return Subject(request.spec, factory, time.perf_counter() - t0)


@dataclass(frozen=True)
class Target:
    """One `--target` of `evictable check`: a plug-in for the stages."""

    name: str
    makes: str
    """What the factory makes, from what (`--help`): `(num_blocks, policy, ...) -> manager`."""
    guide: Guide
    engines: Engines
    load: Loader = load_subject
    kinds: tuple[Kind, ...] = ()
    """The finding classes its engines report (docs and `--help`)."""
    arguments: Callable[[Any], None] | None = None
    """Adds the target's own command-line options to the `check` parser (argparse's
    `add_argument` group); their values reach the stages as `Request.options`."""


TARGETS: dict[str, Target] = {}
"""The targets by name, in registration order (the first is the default)."""


def register_target(t: Target) -> Target:
    """Add `t` to `TARGETS` (a second registration under one name replaces the first)."""
    TARGETS[t.name] = t
    return t


def target(name: str) -> Target:
    """The registered target `name`; `SetupError` naming the known ones otherwise."""
    try:
        return TARGETS[name]
    except KeyError:
        raise SetupError(f"unknown target {name!r} (known: {', '.join(TARGETS)})") from None


def targets() -> Sequence[Target]:
    """Every registered target, in order of registration."""
    return tuple(TARGETS.values())

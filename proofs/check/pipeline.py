"""`evictable check` as one pipeline: each stage visited once, in one direction.

    load the subject -> resolve the contract -> guide -> run the engines -> rank -> report

* **load** (`Target.load`, by default `setup.load_factory` of the request's
  `MODULE:FACTORY`): import the user's code, timed apart from the checking;
* **resolve** (`base.contract.resolve`, the only place a check resolves its
  contract): the factory's declaration, the preset, the request's choices on top;
* **guide** (`Target.guide`, `check.guide`): look at the subject once and say, in
  one line, why the engines cannot drive it and what would (a `SetupError`, never a
  finding); settle what the target needs to know (the manager's policy);
* **run the engines** (`Target.engines`): the target's engines under the contract,
  continuing past findings (the manager's: the conformance engine, the explorer, and
  following every soft divergence to its consequence, `lockstep.follow`);
* **rank** (`base.findings.group`): one finding per class, most severe first;
* **report** (`Checked.text`, `Checked.fields`): what the terminal shows and the
  fields of the JSON report (`cli.report` wraps them in its envelope, `cli.html`
  and `cli.junit` draw the same document).

A *target* is a stage plug-in (`Target`): what the factory makes (`--target`), how
it is loaded, guided and checked, and which finding classes its engines report.
The built-in targets are `manager` (`check.manager`), `free-queue`,
`block-pool`, `lazy` (`check.gpu`), and `tier`, `tiering`
(`check.tiering_targets`); another one is added with `register_target` (and
appears in `evictable check --target` with its own options), with no change to the
stages.

Every stage runs under the run's watch (`base.watch`): a call of the subject that
blocks or spins is a finding, progress goes to stderr at least every
`watch.PROGRESS_S` seconds when asked for, and an interrupted run names the call
that was in flight.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from evictable.proofs.base import watch
from evictable.proofs.base.contract import Contract, ContractError, resolve
from evictable.proofs.base.findings import Finding, findings_block, group
from evictable.proofs.base.flight import bounds_text
from evictable.proofs.check.gpu import GPU_TARGETS
from evictable.proofs.check.manager import MANAGER
from evictable.proofs.check.setup import SetupError
from evictable.proofs.check.target import (
    TARGETS,
    EngineRun,
    Request,
    Subject,
    Target,
    register_target,
    target,
    targets,
)
from evictable.proofs.check.tiering_targets import TIERING_TARGETS

__all__ = [
    "BUILT_IN",
    "TARGETS",
    "Checked",
    "EngineRun",
    "Request",
    "Subject",
    "Target",
    "check",
    "engines",
    "guide",
    "load",
    "rank",
    "register_target",
    "resolve_contract",
    "target",
    "targets",
]


BUILT_IN: tuple[Target, ...] = (MANAGER, *GPU_TARGETS, *TIERING_TARGETS)
"""The targets every `evictable check` knows, the default first."""

for _t in BUILT_IN:
    TARGETS.setdefault(_t.name, _t)


# ------------------------------------------------------------------ the stages


def load(request: Request) -> Subject:
    """Stage 1: import the subject (`SetupError` when it cannot be)."""
    watch.status("loading the subject")
    return target(request.target).load(request)


def resolve_contract(subject: Subject, request: Request) -> Contract:
    """Stage 2: the contract, resolved once: the factory's declaration, the preset,
    the request's choices (`SetupError` for a bad one)."""
    if request.contract is not None:
        return request.contract
    try:
        return resolve(subject.factory, preset=request.preset, **dict(request.choices))
    except ContractError as exc:
        raise SetupError(str(exc)) from exc  # the cause says it was the contract


def guide(subject: Subject, contract: Contract, request: Request) -> Subject:
    """Stage 3: whether the engines can drive the subject under the contract, and
    what the target settles before they run (`SetupError` with what to do)."""
    watch.status("looking at the subject")
    return target(request.target).guide(subject, contract, request)


def engines(subject: Subject, contract: Contract, request: Request) -> EngineRun:
    """Stage 4: the target's engines."""
    return target(request.target).engines(subject, contract, request)


def rank(run: EngineRun) -> tuple[Finding, ...]:
    """Stage 5: one finding per class, the shortest trace of each, most severe first
    (`base.findings.group`)."""
    return group(run.findings)


@dataclass(frozen=True)
class Checked:
    """A whole check: every stage's outcome, and the report (stage 6)."""

    request: Request
    subject: Subject
    contract: Contract
    run: EngineRun
    findings: tuple[Finding, ...]
    seconds: float

    @property
    def code(self) -> int:
        """0 no finding, 1 a finding, 2 no verdict (the engines could not run)."""
        if self.findings:
            return 1
        return 2 if self.run.status == "error" else 0

    def text(self) -> str:
        """What the terminal shows: the subject, the contract, what ran, the findings."""
        s, r = self.subject, self.request
        what = f"target {r.target}" + (f", policy {s.policy!r}" if s.policy is not None else "")
        head = [
            f"evictable check {s.spec} ({what})",
            f"contract: {self.run.held or self.contract.describe()}",
            f"import and construction: {s.import_s:.1f}s",
            f"per-step bound: {bounds_text()}",
            *self.run.lines,
            "",
            findings_block(self.findings),
        ]
        return "\n".join(head)

    def fields(self) -> dict[str, Any]:
        """The report's fields for this check (`cli.report` adds the envelope)."""
        out: dict[str, Any] = {
            "spec": self.subject.spec,
            "target": self.request.target,
            "policy": self.subject.policy or "none",
            "seed": self.request.seed,
            "contract": self.contract.as_dict(),
            "verdict": "conforms" if self.code == 0 else "rejected",
            "explorer": None,
            "explorations": [],
        }
        out.update(self.run.fields)
        out["findings"] = [f.as_dict() for f in self.findings]
        timings = dict(out.get("timings", {}))
        out["timings"] = {"import_s": round(self.subject.import_s, 4), **timings}
        if self.run.error is not None:
            out["error"] = f"evictable check: {self.run.error}"
        return out


def check(request: Request, subject: Subject | None = None) -> Checked:
    """Every stage, in order, each once (see the module docstring). `subject`: a
    factory already in hand (the Python API, the pytest fixture), which skips the
    load stage. Raises `SetupError` when the check cannot start."""
    t0 = time.perf_counter()
    with watch.running(f"evictable check {request.spec}"):
        if subject is None:
            subject = load(request)
        contract = resolve_contract(subject, request)
        subject = guide(subject, contract, request)
        run = engines(subject, contract, request)
        ranked = rank(run)
    return Checked(request, subject, contract, run, ranked, time.perf_counter() - t0)

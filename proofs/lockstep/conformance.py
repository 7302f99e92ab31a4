"""The lock-step conformance engine: any implementation against the model.

Point it at a *factory* `(num_blocks, policy, enable_events) -> adapter`, where the
adapter is any object with the manager API (`ManagerAdapter` below;
`impl.manager.CPUOffloadingManager` and `model.manager.ModelManager` satisfy it as
they are). The engine (a Hypothesis `RuleBasedStateMachine`, see
`evictable.proofs.lockstep.machine`) drives the reference `ModelManager` and the adapter
side by side with valid calls, bad input and, when the adapter builds its policy
through `impl.policies.factory`, faults injected into policy hooks; after every
step it compares results, errors and snapshots (docs/conformance.md).

* `make_machine(factory, policy)` -- the machine class, for pytest (`.TestCase`).
* `run_conformance(factory, policy, examples, steps, seed, contract=...)` -- a run
  without pytest, returning a `ConformanceRecord`. The run holds the adapter to a
  `base.contract.Contract` (by default the one the factory declares, else the
  exact contract) and continues past a finding: each example that diverges is
  recorded and abandoned, the next one starts afresh, and at the end the shortest
  failure of each class (`base.findings`) is shrunk by replaying candidate
  action sequences without Hypothesis (`evictable.proofs.lockstep.shrink`). The
  record holds one `Finding` per class, each with its shortest trace as Python calls
  annotated with both sides' answers and as a runnable snippet.
* `obligations(level)` -- `conformance.<policy>` for every policy that both the
  model (`MODEL_POLICIES`) and the implementation's factory know, each with a
  negative control (a realistically broken adapter that the same run must refute).
"""

from __future__ import annotations

import random
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from hypothesis import Phase
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from evictable.proofs.base.compare import Kind as FindingKind
from evictable.proofs.base.contract import DEFAULT, Contract, ContractError, resolve
from evictable.proofs.base.faults import PLAN, fault_policy_name
from evictable.proofs.base.findings import Finding, checked_snippet
from evictable.proofs.base.guard import guard_session
from evictable.proofs.base.profiles import policies_of, profile
from evictable.proofs.base.protocol import ADAPTER_API, BLACK_BOX_API, Factory
from evictable.proofs.base.records import (
    DeadlineExceeded,
    Outcome,
    Status,
    proved,
    refuted,
)
from evictable.proofs.lockstep.arc_rules import ArcRules
from evictable.proofs.lockstep.copies import copy_support
from evictable.proofs.lockstep.failures import script_of
from evictable.proofs.lockstep.inputs import KEYS
from evictable.proofs.lockstep.lmcache_rules import LmcacheRules
from evictable.proofs.lockstep.machine import build_machine
from evictable.proofs.lockstep.manager import Action, ConformanceFailure, replay
from evictable.proofs.lockstep.observer import StepObserver
from evictable.proofs.lockstep.settings import engine_settings
from evictable.proofs.lockstep.shrink import REPLAYS, shrink

__all__ = [
    "POLICY_RULES",
    "PROFILE_RULES",
    "SIZES",
    "ConformanceFailure",
    "ConformanceRecord",
    "make_machine",
    "run_conformance",
]


HANG_REPLAYS = 25
"""The replay budget of shrinking a call that spins or blocks: every replay that
reaches it waits out the session's shorter bound (`base.flight.guard_session`)."""

POLICY_RULES: dict[str, type] = {"arc": ArcRules}
"""Extra conformance rules of the built-in policies (a profile's own `rules` wins)."""

PROFILE_RULES: dict[str, type] = {"lmcache-0.5": LmcacheRules}
"""Extra conformance rules of a semantic profile (its own calls: LMCache's pins,
removals and leases), black box included; they replace the policy's."""

SIZES: dict[str, tuple[int, int]] = {
    "quick": (50, 30),
    "default": (200, 50),
    "thorough": (2000, 100),
}
"""Examples x steps per obligation, by level."""


@dataclass(frozen=True)
class ConformanceRecord:
    """The result of one conformance run.

    `status` is "passed", "failed" (a divergence: `trace` is the shortest failing
    trace found) or "error" (the run could not be made, e.g. a broken factory).
    `first_failure_example` / `first_failure_steps` say how quickly the first
    divergence was hit (1-based example index; total steps executed until then).
    """

    policy: str
    status: Literal["passed", "failed", "error"]
    examples: int
    steps: int
    examples_run: int
    steps_run: int
    seconds: float
    faults: bool
    reason: str = ""
    trace: str = ""
    first_failure_example: int | None = None
    first_failure_steps: int | None = None
    faults_fired: int = 0
    outcomes: tuple[tuple[str, int], ...] = ()
    """What the model answered during the run, by kind, with counts (sorted)."""
    findings: tuple[Finding, ...] = ()
    """One per class, in order of discovery (the first is `reason`/`trace`)."""
    contract: Contract = DEFAULT
    seed: int | None = None
    """The seed the run used (drawn afresh when none was asked for): it reproduces it."""
    faults_note: str = ""
    """Why faults were not injected ("" when they were, or were not asked for)."""
    copies: tuple[str, ...] = ()
    """The copy round trips the run checked (`lockstep.copies`)."""
    copies_note: str = ""
    """Why the other round trips were not checked ("" when all were)."""
    first_failure_s: float | None = None
    """Seconds from the start of the run to its first divergence (a measurement)."""

    def scope(self) -> str:
        """What the run did and did not check, in one line (never a silent omission)."""
        faults = (
            f"faults on, {self.faults_fired} fired"
            if self.faults
            else f"faults not applicable: {self.faults_note}"
            if self.faults_note
            else "faults off"
        )
        copies = ", ".join(self.copies) or "none"
        if self.copies_note:
            copies += f" (not applicable: {self.copies_note})"
        return f"{faults}; copies checked: {copies}"

    @property
    def ok(self) -> bool:
        return self.status == "passed"

    def text(self) -> str:
        """A readable verdict: one summary line, then the reason and trace if any."""
        head = (
            f"conformance[{self.policy}] {self.status}: {self.examples_run} examples, "
            f"{self.steps_run} steps, {self.seconds:.2f}s "
            f"(budget {self.examples}x{self.steps}; {self.scope()})"
        )
        if self.first_failure_example is not None:
            head += (
                f"; first divergence in example {self.first_failure_example} "
                f"after {self.first_failure_steps} steps"
                + (f" ({self.first_failure_s:.1f}s)" if self.first_failure_s is not None else "")
            )
        if self.status == "failed" and self.seed is not None:
            head += f" (seed {self.seed} reproduces it)"
        if len(self.findings) > 1:
            classes = ", ".join(f.kind.value for f in self.findings)
            return "\n".join(
                [head, f"{len(self.findings)} classes of finding: {classes}"]
                + [f.text() for f in self.findings]
            )
        return "\n".join(x for x in (head, self.reason, self.trace) if x)

    def coverage(self) -> str:
        """The model's answers during the run by kind, e.g. `prepare_store:evicts=41`."""
        return ", ".join(f"{kind}={count}" for kind, count in self.outcomes)

    def outcome(self) -> Outcome:
        """As a proof outcome: passed -> proved, failed -> counterexample, else error."""
        if self.status == "passed":
            return proved(
                f"{self.examples_run} examples, {self.steps_run} steps, "
                f"{self.faults_fired} policy-hook faults fired"
            )
        if self.status == "failed":
            return refuted(f"{self.reason}\n{self.trace}")
        return Outcome(Status.ERROR, self.reason)


def probe_faults(factory: Factory, policy: str) -> str:
    """Why faults cannot be injected into `factory`'s policy ("" when they can: it
    builds its policy by name through `impl.policies.factory`, and a fault armed in
    `insert` fires when it stores a key; what the adapter then does with the fault
    is for the engine to judge)."""
    name = fault_policy_name(policy)
    if name is None:
        return f"policy {policy!r} has no fault-injecting variant"
    try:
        adapter = factory(2, name, False)
    except Exception as exc:
        PLAN.disarm()
        return (
            f"the factory does not build its policy through impl.policies.factory: "
            f"factory(2, {name!r}, False) raised {type(exc).__name__}: {exc}"
        )
    raised: BaseException | None = None
    try:
        PLAN.arm("insert", 1)
        adapter.prepare_store([KEYS[0]])
    except Exception as exc:  # the injected fault, or something else
        raised = exc
    finally:
        fired = PLAN.disarm()
    if fired is None:
        what = (
            "" if raised is None else f" (prepare_store raised {type(raised).__name__}: {raised})"
        )
        return f"the adapter never called its policy's insert: no fault was injected{what}"
    return ""  # injected: an adapter that then swallows the fault is a finding, not a skip


def make_machine(
    factory: Factory,
    policy: str = "lru",
    inject_faults: bool | None = None,
    contract: Contract = DEFAULT,
    collect: bool = False,
    require_copies: bool = False,
) -> type[RuleBasedStateMachine]:
    """A lock-step machine class bound to `factory`, `policy` and `contract`.

    `inject_faults`: True (required: raises ValueError if the factory does not build
    its policy through `impl.policies.factory`), False, or None (use when possible).
    `collect`: record failures in the machine's `stats` instead of raising.
    `require_copies`: raise ValueError unless the adapters survive every copy round
    trip (`lockstep.copies`; otherwise the copy rule uses the modes that work).
    Use `make_machine(...).TestCase` as a pytest test class.
    """
    if require_copies:
        why = copy_support(factory, policy)[1]
        if why:
            raise ValueError(f"the adapters do not survive every copy round trip: {why}")
    if policy not in policies_of(contract.profile):
        known = sorted(policies_of(contract.profile))
        raise ValueError(f"the model has no policy {policy!r}; known: {known}")
    faults = False
    why = ""
    if inject_faults is not False:
        why = probe_faults(factory, policy)
        faults = not why
        if inject_faults and not faults:
            raise ValueError(f"fault injection requested, but {why}")
    machine = build_machine(
        factory, policy, fault_policy_name(policy) if faults else None, PLAN, contract, collect
    )
    machine.faults_note = why
    mixin = PROFILE_RULES.get(contract.profile)
    if mixin is None and not contract.black_box:
        mixin = profile(policy).rules or POLICY_RULES.get(policy)
    return machine if mixin is None else type(machine.__name__, (mixin, machine), {})


def _error(policy: str, examples: int, steps: int, reason: str) -> ConformanceRecord:
    return ConformanceRecord(policy, "error", examples, steps, 0, 0, 0.0, False, reason)


def _preflight(factory: object, policy: str, contract: Contract = DEFAULT) -> str:
    """Why a run cannot be made, or "" if it can."""
    if not callable(factory):
        return f"factory is not callable: {factory!r}"
    if policy not in policies_of(contract.profile):
        return f"the model has no policy {policy!r}; known: {sorted(policies_of(contract.profile))}"
    try:
        adapter = factory(1, policy, False)
    except Exception as exc:
        return f"factory(1, {policy!r}, False) raised {type(exc).__name__}: {exc}"
    api = BLACK_BOX_API if contract.black_box else ADAPTER_API
    missing = [name for name in api if not hasattr(adapter, name)]
    if missing:
        return f"adapter {type(adapter).__name__} lacks {', '.join(missing)}"
    return ""


def run_conformance(
    factory: Factory,
    policy: str = "lru",
    examples: int = 200,
    steps: int = 50,
    seed: int | None = None,
    inject_faults: bool | None = None,
    shrink_replays: int = REPLAYS,
    contract: Contract | None = None,
    stop_at_first: bool = False,
    require_copies: bool = False,
    observer: StepObserver | None = None,
) -> ConformanceRecord:
    """Run the engine without pytest: `examples` runs of up to `steps` steps each.

    `seed` None draws a fresh seed (recorded in the record and printed with a
    failure, so the run can be reproduced); an int makes the run reproducible.
    `contract` None: the factory's declared contract (`contract.declared`). The run
    continues past findings (`stop_at_first` stops at the first instead); the
    shortest failure of each class is then shrunk by at most `shrink_replays` replays
    (a work bound: the trace is the same at any load). `require_copies`: see `make_machine`.
    `observer` also judges each side's every call (`lockstep.observer`; the refinement
    of the proved relation, `proofs.refine.conformance`).
    Never raises for a broken factory or adapter: that is reported as status "error".
    """
    try:
        contract = resolve(factory) if contract is None else contract
    except ContractError as exc:
        return _error(policy, examples, steps, str(exc))
    why = _preflight(factory, policy, contract)
    if why:
        return _error(policy, examples, steps, why)
    try:
        machine = make_machine(
            factory,
            policy,
            inject_faults,
            contract,
            collect=not stop_at_first,
            require_copies=require_copies,
        )
    except ValueError as exc:
        return _error(policy, examples, steps, str(exc))
    if seed is None:  # fresh randomness, but a seed that can be printed and re-run
        seed = random.SystemRandom().randrange(2**32)
    machine.observer = observer
    machine = hypothesis_seed(seed)(machine)
    stats = machine.stats  # type: ignore[attr-defined]
    faults = machine.fault_policy is not None  # type: ignore[attr-defined]
    # Shrinking is done by replay, below.
    config = engine_settings(
        examples, steps, derandomize=False, phases=(Phase.explicit, Phase.generate)
    )
    fault_policy = machine.fault_policy  # type: ignore[attr-defined]
    start = time.perf_counter()
    status: Literal["passed", "failed", "error"] = "passed"
    reason = ""
    found: list[ConformanceFailure] = []
    with guard_session():  # once a call spun or blocked, later ones are stopped sooner
        try:
            run_state_machine_as_test(machine, settings=config)
            found = list(stats.findings.values())
        except ConformanceFailure as failure:
            found = failure.every()
        except DeadlineExceeded:
            raise  # the obligation's wall-clock bound: the runner reports `unknown`
        except Exception as exc:
            status = "error"
            reason = f"the run crashed: {type(exc).__name__}: {exc}\n" + "".join(
                traceback.format_exception(exc)[-4:]
            )
        finally:
            PLAN.disarm()
        findings = _shrunk(
            factory, policy, fault_policy, contract, found, stats.hits, shrink_replays, observer
        )
    if findings:
        status = "failed"
    seconds = time.perf_counter() - start
    return ConformanceRecord(
        policy,
        status,
        examples,
        steps,
        stats.examples,
        stats.steps,
        seconds,
        faults,
        findings[0].reason if findings else reason,
        findings[0].trace if findings else "",
        stats.first_failure_example,
        stats.first_failure_total_steps,
        stats.faults_fired,
        tuple(sorted(stats.outcomes.items())),
        findings,
        contract,
        seed,
        machine.faults_note,  # type: ignore[attr-defined]
        machine.copy_modes,  # type: ignore[attr-defined]
        machine.copies_note,  # type: ignore[attr-defined]
        stats.first_failure_s,
    )


def _shrunk(
    factory: Factory,
    policy: str,
    fault_policy: str | None,
    contract: Contract,
    found: Sequence[ConformanceFailure],
    hits: Mapping[FindingKind, int],
    replays: int,
    observer: StepObserver | None = None,
) -> tuple[Finding, ...]:
    """Each failure shrunk by at most `replays` replays (keeping its class), as a
    `Finding`."""
    out: list[Finding] = []
    for failure in found:

        def probe(
            actions: Sequence[Action], kind: FindingKind = failure.kind
        ) -> ConformanceFailure | None:
            got = replay(factory, policy, fault_policy, PLAN, actions, contract, observer)
            return got.as_kind(kind) if got is not None else None

        hangs = failure.kind in (FindingKind.HANG, FindingKind.BLOCKED)
        best, _ = shrink(probe, failure, min(replays, HANG_REPLAYS) if hangs else replays)
        lines = [(line.code, line.note, line.raised) for line in best.lines]
        steps = tuple(line.step() for line in best.lines)
        out.append(
            Finding(
                best.kind,
                "conformance engine",
                best.reason,
                "\n".join(best.trace),
                checked_snippet(factory, contract, lines, steps, best.kind, best.reason),
                best.calls,
                max(1, hits.get(best.kind, 1)),
                steps,
                script=script_of(best.actions),
            )
        )
    return tuple(out)


# ------------------------------------------------------------------ obligations

"""The lock-step core of the conformance engine, independent of Hypothesis.

A `LockStep` holds the reference `ModelManager` and an implementation built by a
factory `(num_blocks, policy, enable_events) -> adapter`, and applies *actions* to
both: `Start` (build both sides), `Step` (one manager call), `Fault` (one call on
the implementation with a policy hook armed to raise) and `Construct` (a
constructor call with bad arguments, which both sides must reject). After each
action it compares:

* results (`==`), or errors: both raise or neither; both are `LifecycleError`s with
  the same `identity()` (type, keys, block ids);
* snapshots (`==`), and on every error that neither snapshot changed;
* the counters `num_evictable` / `num_pending` of both sides;
* `model.invariants.check_snapshot` on both snapshots, and the implementation's own
  `check_invariants()` when it has one.

A divergence raises `ConformanceFailure`, carrying the readable trace (the actions
so far written as Python calls with both sides' answers) and the actions
themselves, so that `replay` can re-run any sequence of actions without Hypothesis
(the shrinker in `evictable.proofs.lockstep.shrink` does exactly that).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from evictable.model.errors import LifecycleError
from evictable.model.invariants import check_snapshot
from evictable.model.lifecycle import CpuState
from evictable.model.manager import ModelManager
from evictable.model.types import Key, ManagerSnapshot
from evictable.proofs.lockstep.compare import Kind, Reply, diff, invoke, judge, same_error
from evictable.proofs.lockstep.copies import Copy, apply_copy
from evictable.proofs.lockstep.faults import FaultPlan
from evictable.proofs.lockstep.guard import StepTimeout, step_guard
from evictable.proofs.lockstep.inputs import Call
from evictable.proofs.obligations import check_deadline

__all__ = [
    "Action",
    "AdapterFactory",
    "ConformanceFailure",
    "Construct",
    "Copy",
    "Fault",
    "LockStep",
    "RunStats",
    "Start",
    "Step",
    "replay",
]

AdapterFactory = Callable[[int, str, bool], Any]
"""`(num_blocks, policy, enable_events) -> adapter` (see `conformance.ManagerAdapter`)."""


@dataclass(frozen=True)
class Start:
    """Build both sides: the model with the policy, the impl with `impl_policy`."""

    num_blocks: int
    events: bool
    faulty: bool


@dataclass(frozen=True)
class Step:
    """One manager call on both sides."""

    call: Call


@dataclass(frozen=True)
class Fault:
    """`call` on the impl with policy hook `hook` raising on its k-th call: at the
    hook's entry, or with `late` after its body ran (the policy already changed)."""

    call: Call
    hook: str
    k: int
    late: bool = False


@dataclass(frozen=True)
class Construct:
    """A constructor call that both the model class and the factory must reject."""

    num_blocks: object
    policy: str
    events: object


Action = Start | Step | Fault | Construct | Copy


class ConformanceFailure(AssertionError):
    """The implementation diverged from the model; the message is the readable trace."""

    def __init__(self, reason: str, trace: Sequence[str], actions: Sequence[Action]) -> None:
        self.reason = reason
        self.trace = tuple(trace)
        self.actions = tuple(actions)
        super().__init__(self.text())

    def text(self) -> str:
        return "\n".join([self.reason, "trace:", *(f"  {line}" for line in self.trace)])


@dataclass
class RunStats:
    """Counts kept across all examples of one run."""

    examples: int = 0
    steps: int = 0
    first_failure_example: int | None = None
    first_failure_step: int | None = None
    first_failure_total_steps: int | None = None
    fault_examples: int = 0
    faults_fired: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    """What the model answered, by kind ("prepare_store:evicts", "prepare_load:
    BlockNotReadyError", "fault:insert", ...): evidence that the run was not vacuous."""

    def failed(self, step_no: int) -> None:
        if self.first_failure_example is None:
            self.first_failure_example = self.examples
            self.first_failure_step = step_no
            self.first_failure_total_steps = self.steps


def _invoke(target: Any, call: Call) -> Reply:
    """Call `target.<call.method>` (or `target` itself for `call.method == ""`)."""
    args, kwargs = call.build()
    try:
        fn = getattr(target, call.method) if call.method else target
    except Exception as exc:  # a missing method is compared like any other outcome
        return Reply(True, exc)
    return invoke(fn, *args, **kwargs)


def _outcome(method: str, reply: Reply) -> str:
    """The kind of a model answer, for `RunStats.outcomes`."""
    if reply.raised:
        return f"{method}:{type(reply.value).__name__}"
    value = reply.value
    if method == "prepare_store":
        if value is None:
            return "prepare_store:none"
        return (
            "prepare_store:evicts" if getattr(value, "evicted_keys", None) else "prepare_store:ok"
        )
    if method in ("complete_store", "take_events") and not value:
        return f"{method}:empty"
    return f"{method}:ok"


class LockStep:
    """Model and implementation side by side; `apply` one action at a time."""

    def __init__(
        self,
        factory: AdapterFactory,
        policy: str,
        fault_policy: str | None,
        plan: FaultPlan,
        stats: RunStats | None = None,
    ) -> None:
        self.factory = factory
        self.policy = policy
        self.fault_policy = fault_policy
        self.plan = plan
        self.stats = stats if stats is not None else RunStats()
        self.model: ModelManager | None = None
        self.impl: Any = None
        self.faulty = False
        self.trace: list[str] = []
        self.actions: list[Action] = []
        self.step_no = 0
        self.m_snap: ManagerSnapshot | None = None
        self.i_snap: ManagerSnapshot | None = None

    # ------------------------------------------------------------ queries

    def keys_in(self, *states: CpuState) -> list[Key]:
        """Keys in `states` now (from the model's snapshot after the last action)."""
        if self.m_snap is None:
            return []
        return sorted((e.key for e in self.m_snap.blocks if e.state in states), key=repr)

    # ------------------------------------------------------------ helpers

    def _fail(self, reason: str) -> NoReturn:
        self.stats.failed(self.step_no)
        raise ConformanceFailure(reason, self.trace, self.actions)

    def _sides(self) -> tuple[ModelManager, Any, ManagerSnapshot, ManagerSnapshot]:
        if self.model is None or self.m_snap is None or self.i_snap is None:
            raise RuntimeError("a LockStep must Start before any other action")
        return self.model, self.impl, self.m_snap, self.i_snap

    def _impl_snapshot(self, label: str) -> ManagerSnapshot:
        try:
            snap: object = self.impl.snapshot()
        except Exception as exc:
            self._fail(f"{label}: impl.snapshot() raised {type(exc).__name__}: {exc}")
        if not isinstance(snap, ManagerSnapshot):
            self._fail(f"{label}: impl.snapshot() returned a {type(snap).__name__}")
        return snap

    def _check_after(
        self, label: str, snaps: tuple[ManagerSnapshot, ManagerSnapshot] | None = None
    ) -> None:
        """Compare both sides after an action (`snaps`: their snapshots, when already
        taken); remember their snapshots."""
        model, impl = self.model, self.impl
        if model is None:
            raise RuntimeError("a LockStep must Start before any other action")
        m_snap, i_snap = (
            snaps if snaps is not None else (model.snapshot(), self._impl_snapshot(label))
        )
        if m_snap != i_snap:
            self._fail(f"{label}: snapshots differ (model != impl): {diff(m_snap, i_snap)}")
        bad = check_snapshot(m_snap)
        if bad:
            self._fail(f"{label}: model snapshot violates {bad} (model bug)")
        bad = check_snapshot(i_snap)
        if bad:
            self._fail(f"{label}: impl snapshot violates invariants {bad}")
        checker = getattr(impl, "check_invariants", None)
        if callable(checker):
            try:
                checker()
            except Exception as exc:
                self._fail(f"{label}: impl.check_invariants() failed: {type(exc).__name__}: {exc}")
        try:
            counters_i = (impl.num_evictable, impl.num_pending)
        except Exception as exc:
            self._fail(f"{label}: impl counters raised {type(exc).__name__}: {exc}")
        counters_m = (model.num_evictable, model.num_pending)
        if counters_m != counters_i:
            self._fail(
                f"{label}: counters (num_evictable, num_pending): model {counters_m} "
                f"!= impl {counters_i}"
            )
        self.m_snap, self.i_snap = m_snap, i_snap

    def _compare(
        self, label: str, rm: Reply, ri: Reply, m_before: ManagerSnapshot, i_before: ManagerSnapshot
    ) -> None:
        m_after = self._model_snapshot()
        i_after = self._impl_snapshot(label)
        found = judge(rm, ri, m_before, i_before, m_after, i_after)
        if found is not None:
            model_bug = " (model bug)" if found.kind is Kind.MODEL_BUG else ""
            self._fail(f"{label}: {found.reason}{model_bug}")
        self._check_after(label, (m_after, i_after))

    def _model_snapshot(self) -> ManagerSnapshot:
        model, _, _, _ = self._sides()
        return model.snapshot()

    def _begin(self, action: Action) -> str:
        check_deadline("conformance")
        self.actions.append(action)
        self.step_no += 1
        self.stats.steps += 1
        return f"step {self.step_no}"

    # ------------------------------------------------------------ actions

    def apply(self, action: Action) -> None:
        """Apply one action to both sides and compare (raises `ConformanceFailure`).

        The action runs under the per-step wall-clock bound (`lockstep.guard`): a call
        that does not return in time is a failure with its trace, not a hang."""
        try:
            with step_guard():
                if isinstance(action, Start):
                    self._start(action)
                elif isinstance(action, Step):
                    self._step(action)
                elif isinstance(action, Fault):
                    self._fault(action)
                elif isinstance(action, Copy):
                    apply_copy(self, action)
                else:
                    self._construct(action)
        except StepTimeout as timeout:
            call = getattr(action, "call", None)
            self.trace.append(f"m.{call.text}  # {timeout}" if call else f"{action}  # {timeout}")
            if not self.actions or self.actions[-1] is not action:
                self.actions.append(action)
            self._fail(f"step {self.step_no}: the call {timeout}")

    def _start(self, a: Start) -> None:
        self.actions.append(a)
        self.stats.examples += 1
        self.faulty = a.faulty and self.fault_policy is not None
        if self.faulty:
            self.stats.fault_examples += 1
        impl_policy = self.fault_policy if self.faulty and self.fault_policy else self.policy
        self.plan.disarm()
        self.trace.append(f"m = factory({a.num_blocks!r}, {impl_policy!r}, {a.events!r})")
        self.model = ModelManager(a.num_blocks, self.policy, a.events)
        try:
            self.impl = self.factory(a.num_blocks, impl_policy, a.events)
        except Exception as exc:
            self._fail(f"construction: factory raised {type(exc).__name__}: {exc}")
        self._check_after("construction")

    def _step(self, a: Step) -> None:
        label = self._begin(a) + f" ({a.call.method})"
        model, impl, m_before, i_before = self._sides()
        rm, ri = _invoke(model, a.call), _invoke(impl, a.call)
        self.stats.outcomes[_outcome(a.call.method, rm)] += 1
        both_raised = rm.raised and ri.raised and same_error(rm.value, ri.value)
        if both_raised or (not rm.raised and rm == ri):
            self.trace.append(f"m.{a.call.text}  # {ri.describe()}")
        else:
            self.trace.append(f"m.{a.call.text}  # model {rm.describe()}; impl {ri.describe()}")
        self._compare(label, rm, ri, m_before, i_before)

    def _fault(self, a: Fault) -> None:
        when = " after its body" if a.late else ""
        label = self._begin(a) + f" ({a.call.method}, fault in {a.hook} call {a.k}{when})"
        model, impl, m_before, i_before = self._sides()
        fired = None
        if self.faulty:  # else the policy cannot fail: an ordinary call
            self.plan.arm(a.hook, a.k, a.late)
            try:
                ri = _invoke(impl, a.call)
            finally:
                fired = self.plan.disarm()
        else:
            ri = _invoke(impl, a.call)
        if fired is None:
            # The hook was not reached k times: an ordinary call, compared as usual.
            rm = _invoke(model, a.call)
            self.trace.append(
                f"m.{a.call.text}  # (no fault fired) model {rm.describe()}; impl {ri.describe()}"
            )
            self._compare(label, rm, ri, m_before, i_before)
            return
        self.stats.faults_fired += 1
        self.stats.outcomes[f"fault:{a.hook}"] += 1
        self.trace.append(
            f"m.{a.call.text}  # policy hook {a.hook!r} raises on call {a.k}{when}; "
            f"impl {ri.describe()}; model not stepped"
        )
        if not ri.raised or ri.value is not fired:
            self._fail(f"{label}: impl did not re-raise the injected fault: {ri.describe()}")
        i_after = self._impl_snapshot(label)
        if i_after != i_before:
            self._fail(
                f"{label}: impl changed state although the call failed "
                f"(before != after): {diff(i_before, i_after)}"
            )
        self._check_after(label)

    def _construct(self, a: Construct) -> None:
        label = self._begin(a) + " (construction)"
        text = f"factory({a.num_blocks!r}, {a.policy!r}, {a.events!r})"
        call = Call.construct(text, a.num_blocks, a.policy, a.events)
        rm, ri = _invoke(ModelManager, call), _invoke(self.factory, call)
        self.trace.append(f"{text}  # model {rm.describe()}; impl {ri.describe()}")
        if not rm.raised or not isinstance(rm.value, LifecycleError):
            self._fail(f"{label}: the model accepted a bad constructor argument (model bug)")
        if not ri.raised:
            self._fail(f"{label}: impl accepted a bad constructor argument")
        if not same_error(rm.value, ri.value):
            self._fail(f"{label}: errors differ: model {rm.describe()}, impl {ri.describe()}")
        self._check_after(label)


def replay(
    factory: AdapterFactory,
    policy: str,
    fault_policy: str | None,
    plan: FaultPlan,
    actions: Sequence[Action],
) -> ConformanceFailure | None:
    """Run `actions` from scratch; the failure they provoke, or None."""
    lock = LockStep(factory, policy, fault_policy, plan)
    try:
        for action in actions:
            lock.apply(action)
    except ConformanceFailure as failure:
        return failure
    finally:
        plan.disarm()
    return None

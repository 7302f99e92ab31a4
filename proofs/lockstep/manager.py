"""The lock-step core of the conformance engine, independent of Hypothesis.

A `LockStep` holds the reference manager and an implementation built by a factory
`(num_blocks, policy, enable_events) -> adapter`, and applies *actions* to both:
`Start` (build both sides), `Step` (one manager call), `Fault` (one call on the
implementation with a policy hook armed to raise) and `Construct` (a constructor
call with bad arguments, which both sides must reject). Every call and every
comparison goes through `base.cpu_contract` under the run's
`base.contract.Contract`, so that the same code serves the exact contract, the
safety contract and black-box runs:

* results, or errors (both raise or neither; the error contract decides what counts
  as the same error);
* the observed states (snapshots, their safety view, or what a black box shows),
  and on every error that neither side changed;
* the implementation's snapshot invariants, its `check_invariants()` and counters.

A divergence is a `ConformanceFailure`: its class (`compare.Kind`: atomicity,
leaked pin, orphaned slot, ...), the reason, the readable trace (the actions so far
as Python calls with both sides' answers) and the actions themselves, so that
`replay` can re-run any sequence of actions without Hypothesis (the shrinker in
`evictable.proofs.lockstep.shrink` does exactly that).

**Continuing past a finding.** A `LockStep` made with `collect=True` does not raise:
it records the failure in the run's `RunStats` (one entry per class, keeping the
shortest) and ignores the rest of the example; the engine then starts the next
example from scratch. The model never has to be resynchronised with a diverged
implementation: every example starts both sides afresh.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, NoReturn

from evictable.model.errors import LifecycleError
from evictable.model.lifecycle import CpuState
from evictable.model.manager import ModelManager
from evictable.model.types import Key, ManagerSnapshot
from evictable.proofs.base.compare import Kind, Mismatch, Reply, diff, invoke, same_error
from evictable.proofs.base.contract import DEFAULT, Contract
from evictable.proofs.base.cpu_contract import (
    ObservationError,
    Side,
    judge_call,
    judge_state,
    make_model,
    model_reply,
    observe,
    pair,
    refused_by_table,
)
from evictable.proofs.base.faults import FaultPlan
from evictable.proofs.base.guard import Called, StepBlocked, StepTimeout, step_guard
from evictable.proofs.base.protocol import Factory
from evictable.proofs.base.records import check_deadline
from evictable.proofs.lockstep.copies import apply_copy
from evictable.proofs.lockstep.failures import (
    Action,
    ConformanceFailure,
    Construct,
    Copy,
    Fault,
    RawStep,
    RunStats,
    Start,
    Step,
    TraceLine,
)
from evictable.proofs.lockstep.inputs import KEYS, Call
from evictable.proofs.lockstep.observer import StepObserver

__all__ = [
    "Action",
    "ConformanceFailure",
    "Construct",
    "Copy",
    "Fault",
    "LockStep",
    "RunStats",
    "Start",
    "Step",
    "TraceLine",
    "replay",
]


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
        factory: Factory,
        policy: str,
        fault_policy: str | None,
        plan: FaultPlan,
        stats: RunStats | None = None,
        contract: Contract = DEFAULT,
        collect: bool = False,
    ) -> None:
        self.factory = factory
        self.policy = policy
        self.fault_policy = fault_policy
        self.plan = plan
        self.stats = stats if stats is not None else RunStats()
        self.contract = contract
        self.collect = collect
        self.keys: tuple[Key, ...] = contract.keys.pool(len(KEYS))
        self.model: ModelManager | None = None
        self.impl: Any = None
        self.faulty = False
        self.diverged = False
        self.counted = True
        self.lines: list[TraceLine] = []
        self.actions: list[Action] = []
        self.step_no = 0
        self.m_snap: ManagerSnapshot | None = None
        """The model's full snapshot after the last action (what rules draw keys from)."""
        self.m_side: Side | None = None
        self.i_side: Side | None = None
        self.observer: StepObserver | None = None
        """Holds each side's calls to something more (`lockstep.observer`), if set."""
        self._queued: list[tuple[Any, ...]] = []

    # ------------------------------------------------------------ queries

    @property
    def trace(self) -> list[str]:
        return [line.text() for line in self.lines]

    def keys_in(self, *states: CpuState) -> list[Key]:
        """Keys in `states` now (from the model's snapshot after the last action)."""
        if self.m_snap is None:
            return []
        return sorted((e.key for e in self.m_snap.blocks if e.state in states), key=repr)

    # ------------------------------------------------------------ helpers

    def _fail(
        self, reason: str, kind: Kind = Kind.STATE, also: Sequence[tuple[Kind, str]] = ()
    ) -> NoReturn:
        self.stats.failed(self.step_no)
        raise ConformanceFailure(reason, self.lines, self.actions, kind, also)

    def _fail_all(self, label: str, found: Sequence[Mismatch]) -> None:
        """Fail with every finding of one step (none: no failure)."""
        if not found:
            return
        tagged = [
            (m.kind, f"{label}: {m.reason}" + (" (model bug)" if m.kind is Kind.MODEL_BUG else ""))
            for m in found
        ]
        self._fail(tagged[0][1], tagged[0][0], tagged[1:])

    def _sides(self) -> tuple[ModelManager, Any, Side, Side]:
        if self.model is None or self.m_side is None or self.i_side is None:
            raise RuntimeError("a LockStep must Start before any other action")
        return self.model, self.impl, self.m_side, self.i_side

    def _observe(self, label: str) -> tuple[Side, Side]:
        """Both sides' state now under the contract."""
        if self.model is None:
            raise RuntimeError("a LockStep must Start before any other action")
        m = observe(self.contract, self.model, self.keys, self.counted)
        try:
            i = observe(self.contract, self.impl, self.keys, self.counted)
        except ObservationError as exc:
            self._fail(f"{label}: {exc}", Kind.STATE)
        return m, i

    def _check_after(self, label: str, sides: tuple[Side, Side] | None = None) -> None:
        """Compare both sides' states after an action (`sides`: when already observed);
        remember them."""
        model = self.model
        if model is None:
            raise RuntimeError("a LockStep must Start before any other action")
        m, i = sides if sides is not None else self._observe(label)
        found = judge_state(self.contract, model, self.impl, m, i)
        if found is not None:
            bug = " (model bug)" if found.kind is Kind.MODEL_BUG else ""
            self._fail(f"{label}: {found.reason}{bug}", found.kind)
        self.m_side, self.i_side = m, i
        self.m_snap = m.full if m.full is not None else model.snapshot()

    def _begin(self, action: Action) -> str:
        check_deadline("conformance")
        self.actions.append(action)
        self.step_no += 1
        self.stats.steps += 1
        return f"step {self.step_no}"

    # ------------------------------------------------------------ actions

    def apply(self, action: Action) -> None:
        """Apply one action to both sides and compare. Raises `ConformanceFailure`, or,
        with `collect`, records it and ignores the rest of the example.

        The action runs under the per-step CPU-time bound (`base.guard`): a call
        that does not return in time is a failure with its trace, not a hang."""
        if self.diverged:
            return
        try:
            try:
                try:
                    call = getattr(action, "call", None)
                    with step_guard(what=Called(call.text) if call is not None else action):
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
                except ConformanceFailure:
                    self._flush_observed()  # the observer's verdict on the step comes first
                    raise
                self._flush_observed()
            except StepTimeout as timeout:
                call = getattr(action, "call", None)
                code = f"m.{call.text}" if call is not None else f"{action}"
                if not self.lines or self.lines[-1].code != code:
                    self.lines.append(TraceLine(code, f"impl {timeout}", True))
                if not self.actions or self.actions[-1] is not action:
                    self.actions.append(action)
                kind = Kind.BLOCKED if isinstance(timeout, StepBlocked) else Kind.HANG
                self._fail(f"step {self.step_no}: the call {code} {timeout}", kind)
        except ConformanceFailure as failure:
            if not self.collect:
                raise
            self.diverged = True
            for each in failure.every():
                self.stats.record(each)

    def _start(self, a: Start) -> None:
        self.actions.append(a)
        self._queued = []
        self.stats.examples += 1
        self.faulty = a.faulty and self.fault_policy is not None
        if self.faulty:
            self.stats.fault_examples += 1
        impl_policy = self.fault_policy if self.faulty and self.fault_policy else self.policy
        self.plan.disarm()
        shown = (
            f"fault_policy_name({self.policy!r})"  # registers it: the snippet runs as printed
            if self.faulty and self.fault_policy
            else repr(impl_policy)
        )
        self.lines.append(
            TraceLine(
                f"m = factory({a.num_blocks!r}, {shown}, {a.events!r})",
                raw=RawStep("construct", (a.num_blocks, impl_policy, a.events)),
            )
        )
        self.model = make_model(self.contract, a.num_blocks, self.policy, a.events)
        try:
            self.impl = self.factory(a.num_blocks, impl_policy, a.events)
        except Exception as exc:
            self._fail(
                f"construction: factory raised {type(exc).__name__}: {exc}", Kind.REJECTED_GOOD_CALL
            )
        try:
            self.counted = (self.impl.num_evictable, self.impl.num_pending) is not None
        except AttributeError:
            self.counted = False
        except Exception:  # a crashing counter is reported by the state check
            self.counted = True
        m_side, i_side = self._observe("construction")
        self._attach(after=i_side.view, expected=m_side.view)
        self._check_after("construction", (m_side, i_side))
        if self.observer is not None:
            self.observer.start()

    def _observed(
        self, label: str, side: str, call: Call, reply: Reply, before: Side, after: Side
    ) -> None:
        """Queue one side's call for the observer (it needs both full snapshots); the
        observer judges it after the step, outside the step's hang backstop (its work
        is the suite's own, bounded by its own limits)."""
        if self.observer is None or before.full is None or after.full is None:
            return
        args, kwargs = call.build()
        self._queued.append(
            (label, side, call.method, args, kwargs, reply, before.full, after.full)
        )

    def _flush_observed(self) -> None:
        """The observer's verdicts on the calls queued by the step (raises the first)."""
        queued, self._queued = self._queued, []
        observer = self.observer
        if observer is None:
            return
        for label, side, method, args, kwargs, reply, before, after in queued:
            why = observer.step(side, method, args, kwargs, reply, before, after)
            if why is not None:
                self._fail(f"{label}: {why}", Kind.STATE)

    def _step(self, a: Step) -> None:
        model, impl, m_before, i_before = self._sides()
        if not self.contract.inputs.invalid and refused_by_table(
            model, a.call.method, a.call.build
        ):
            return  # not made: the contract has no calls the table refuses
        label = self._begin(a) + f" ({a.call.method})"
        model_before = self.m_snap if self.m_snap is not None else model.snapshot()
        rm, ri = pair(self.contract, model, impl, a.call.method, a.call.build)
        self.stats.outcomes[_outcome(a.call.method, rm)] += 1
        both_raised = (
            rm.raised and ri.raised and same_error(rm.value, ri.value, self.contract.errors)
        )
        if both_raised or (not rm.raised and rm == ri):
            note = ri.describe()
        else:
            note = f"model {rm.describe()}; impl {ri.describe()}"
        self.lines.append(TraceLine(f"m.{a.call.text}", note, rm.raised or ri.raised))
        self._judge(label, a.call, rm, ri, m_before, i_before, model_before)

    def _judge(
        self,
        label: str,
        call: Call,
        rm: Reply,
        ri: Reply,
        m_before: Side,
        i_before: Side,
        model_before: ManagerSnapshot,
    ) -> None:
        """Observe both sides after `call` answered `rm` / `ri`, judge the call under
        the contract (every finding it makes), then the state after it."""
        m_after, i_after = self._observe(label)
        self._observed(label, "the model", call, rm, m_before, m_after)
        self._observed(label, "the implementation", call, ri, i_before, i_after)
        args, kwargs = call.build()
        self._attach(
            args=args,
            kwargs=tuple(kwargs.items()),
            impl=ri,
            model=rm,
            before=i_before.view,
            after=i_after.view,
            expected=m_after.view,
        )
        found = judge_call(
            self.contract,
            call.method,
            args,
            rm,
            ri,
            m_before,
            i_before,
            m_after,
            i_after,
            model_before,
        )
        self._fail_all(label, found)
        self._check_after(label, (m_after, i_after))

    def _attach(self, **what: Any) -> None:
        """Complete the raw step of the last trace line with `what` (`RawStep` fields)."""
        if not self.lines:
            return
        last = self.lines[-1]
        raw = last.raw if last.raw is not None else RawStep(_op_of(last.code))
        self.lines[-1] = dataclasses.replace(last, raw=dataclasses.replace(raw, **what))

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
            model_before = self.m_snap if self.m_snap is not None else model.snapshot()
            rm = model_reply(self.contract, model, a.call.method, a.call.build, ri)
            self.lines.append(
                TraceLine(
                    f"m.{a.call.text}",
                    f"(no fault fired) model {rm.describe()}; impl {ri.describe()}",
                    rm.raised or ri.raised,
                )
            )
            self._judge(label, a.call, rm, ri, m_before, i_before, model_before)
            return
        self.stats.faults_fired += 1
        self.stats.outcomes[f"fault:{a.hook}"] += 1
        late = ", late=True" if a.late else ""
        args, kwargs = a.call.build()
        self.lines.append(
            TraceLine(
                f"with PLAN.failing({a.hook!r}, {a.k}{late}): m.{a.call.text}",
                f"policy hook {a.hook!r} raises on call {a.k}{when}; impl {ri.describe()}; "
                "model not stepped",
                True,
                RawStep(
                    a.call.method,
                    args,
                    tuple(kwargs.items()),
                    ri,
                    None,
                    i_before.view,
                    None,
                    (("hook", a.hook), ("call", a.k), ("late", a.late)),
                ),
            )
        )
        if not ri.raised or ri.value is not fired:
            self._fail(
                f"{label}: impl did not re-raise the injected fault: {ri.describe()}", Kind.ERROR
            )
        _, i_after = self._observe(label)
        self._observed(label, "the implementation", a.call, ri, i_before, i_after)
        if i_after.view != i_before.view:
            self._fail(
                f"{label}: impl changed state although the call failed "
                f"(before != after): {diff(i_before.view, i_after.view)}",
                Kind.ATOMICITY,
            )
        self._check_after(label)
        if self.i_side is not None:
            self._attach(after=self.i_side.view)

    def _construct(self, a: Construct) -> None:
        label = self._begin(a) + " (construction)"
        text = f"factory({a.num_blocks!r}, {a.policy!r}, {a.events!r})"
        call = Call.construct(text, a.num_blocks, a.policy, a.events)
        rm, ri = _invoke(ModelManager, call), _invoke(self.factory, call)
        self.lines.append(TraceLine(text, f"model {rm.describe()}; impl {ri.describe()}", True))
        if not rm.raised or not isinstance(rm.value, LifecycleError):
            self._fail(
                f"{label}: the model accepted a bad constructor argument (model bug)",
                Kind.MODEL_BUG,
            )
        if not ri.raised:
            self._fail(f"{label}: impl accepted a bad constructor argument", Kind.ACCEPTED_BAD_CALL)
        if not same_error(rm.value, ri.value, self.contract.errors):
            self._fail(
                f"{label}: errors differ: model {rm.describe()}, impl {ri.describe()}", Kind.ERROR
            )
        self._check_after(label)


def _op_of(code: str) -> str:
    head = code.split("(", 1)[0]
    return "construct" if "=" in head else head.rsplit(".", 1)[-1]


def _invoke(target: Any, call: Call) -> Reply:
    """Call `target.<call.method>` (or `target` itself for `call.method == ""`)."""
    args, kwargs = call.build()
    try:
        fn = getattr(target, call.method) if call.method else target
    except Exception as exc:  # a missing method is compared like any other outcome
        return Reply(True, exc)
    return invoke(fn, *args, **kwargs)


def replay(
    factory: Factory,
    policy: str,
    fault_policy: str | None,
    plan: FaultPlan,
    actions: Sequence[Action],
    contract: Contract = DEFAULT,
    observer: StepObserver | None = None,
) -> ConformanceFailure | None:
    """Run `actions` from scratch; the failure they provoke, or None."""
    lock = LockStep(factory, policy, fault_policy, plan, contract=contract)
    lock.observer = observer
    try:
        for action in actions:
            lock.apply(action)
    except ConformanceFailure as failure:
        return failure
    finally:
        plan.disarm()
    return None

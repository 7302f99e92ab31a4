"""The Hypothesis front end of the conformance engine: what to try, not how to compare.

`build_machine(factory, policy, fault_policy, plan)` returns a
`RuleBasedStateMachine` class whose rules draw calls -- valid operations biased
towards keys in the states that make them interesting, bad input, bad constructor
arguments and policy-hook faults -- and hand each one, as an action, to a
`evictable.proofs.lockstep.manager.LockStep`, which makes it on both sides and compares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from evictable.model.lifecycle import CpuState
from evictable.model.types import Key
from evictable.proofs.base.contract import DEFAULT, Contract
from evictable.proofs.base.faults import HOOKS, FaultPlan
from evictable.proofs.base.protocol import Factory
from evictable.proofs.lockstep.copies import MODES, Copy, copy_support
from evictable.proofs.lockstep.inputs import (
    BAD_ENABLE_EVENTS,
    BAD_NUM_BLOCKS,
    KEYS,
    Call,
    bad_key_calls,
    bad_lookup_calls,
    bad_success_calls,
)
from evictable.proofs.lockstep.manager import Construct, Fault, LockStep, RunStats, Start, Step
from evictable.proofs.lockstep.observer import StepObserver

__all__ = ["MAX_BLOCKS", "NUM_BLOCKS", "UNKNOWN_POLICY", "build_machine"]

MAX_BLOCKS = 6
"""Largest `num_blocks` tried: small, so that eviction and `None` happen often."""

UNKNOWN_POLICY = "no-such-policy"

_P, _R, _L = CpuState.PENDING, CpuState.READY, CpuState.LOADING

_PICKS = {
    size: st.lists(st.integers(0, 2 * len(KEYS) - 1), min_size=1, max_size=size)
    for size in (1, 2, 3, 4, 5, MAX_BLOCKS + 2)
}
"""Key picks, one strategy per list size, one draw per key: a pick names a preferred key
(modulo their number) -- in mixed mode only when below len(KEYS), else a pool key."""

NUM_BLOCKS = st.sampled_from((3, 2, 4, 1, 5, 6, 0))
"""Simplest first: 3 blocks (room to store, and eviction soon); 0 blocks comes last."""
_HOOK_FAULTS = tuple(h for h in HOOKS if h not in ("insert", "evict"))
_COIN = st.booleans()
_INDEX = st.integers(0, 2 * len(KEYS) - 1)
_MODE = st.integers(0, 9)
_MIXED, _EMPTY_BATCH = 7, 9
_BAD_NUM_BLOCKS = st.sampled_from((*BAD_NUM_BLOCKS, 1))  # 1: valid, with another bad argument
_BAD_EVENTS = st.sampled_from((None, *(e for e in BAD_ENABLE_EVENTS if e is not None)))
"""None: an unknown policy name instead; else a non-bool `enable_events`."""
_METHOD = st.sampled_from(
    ("prepare_store", "complete_store", "prepare_load", "complete_load", "touch")
)
_BAD_KEY_INDEX = st.integers(0, len(bad_key_calls("touch", ())) - 1)
_BAD_SCALAR_INDEX = st.integers(0, len(bad_success_calls(()) + bad_lookup_calls()) - 1)


def build_machine(
    factory: Factory,
    policy: str,
    fault_policy: str | None,
    plan: FaultPlan,
    contract: Contract = DEFAULT,
    collect: bool = False,
) -> type[RuleBasedStateMachine]:
    """A fresh machine class bound to `factory` and `policy`, with its own `RunStats`.

    `fault_policy` is the registered name of the fault-injecting variant of `policy`
    (None disables fault injection); `plan` is the switch that arms it. `contract`
    decides the keys (its key space) and which inputs are drawn (its switches);
    `collect` makes the lock-step record failures instead of raising them.
    """

    class LockStepMachine(_Machine):
        pass

    LockStepMachine.factory = staticmethod(factory)
    LockStepMachine.policy = policy
    LockStepMachine.fault_policy = fault_policy
    LockStepMachine.plan = plan
    LockStepMachine.stats = RunStats()
    LockStepMachine.contract = contract
    LockStepMachine.collect = collect
    LockStepMachine.copy_modes, LockStepMachine.copies_note = (
        ((), "a black box is copied through snapshot(), which it does not have")
        if contract.black_box
        else copy_support(factory, policy)
    )
    return LockStepMachine


class _Machine(RuleBasedStateMachine):
    factory: ClassVar[Factory]
    policy: ClassVar[str]
    fault_policy: ClassVar[str | None]
    plan: ClassVar[FaultPlan]
    stats: ClassVar[RunStats]
    contract: ClassVar[Contract] = DEFAULT
    collect: ClassVar[bool] = False
    copy_modes: ClassVar[tuple[str, ...]]
    """The round trips the factory's adapters support (`lockstep.copies`); none for a
    black box (a copy is compared through `snapshot()`)."""
    copies_note: ClassVar[str] = ""
    """Why the other round trips are not checked ("" when every one is)."""
    faults_note: ClassVar[str] = ""
    """Why faults are not injected ("" when they are, or were not asked for)."""
    observer: ClassVar[StepObserver | None] = None
    """Holds each side's calls to something more (`lockstep.observer`), if set."""

    def __init__(self) -> None:
        super().__init__()
        cls = type(self)
        self.lock = LockStep(
            cls.factory,
            cls.policy,
            cls.fault_policy,
            cls.plan,
            cls.stats,
            cls.contract,
            cls.collect,
        )
        self.lock.observer = cls.observer
        self.keys = self.lock.keys

    def _keys(
        self, data: st.DataObject, preferred: Sequence[Key], max_size: int, unique: bool = True
    ) -> list[Key]:
        """A key list, drawn mostly from `preferred` (the keys in the states that make
        the call interesting): seven draws in ten take only preferred keys, two mix
        them half and half with the whole pool, one is the empty batch.

        Draws come from fixed strategies (a fresh strategy per draw is slow in
        Hypothesis); they shrink towards the first preferred key.
        """
        mode = data.draw(_MODE)
        if mode == _EMPTY_BATCH:
            return []
        only_preferred = mode < _MIXED and bool(preferred)
        picks = data.draw(_PICKS[max_size])
        out: list[Key] = []
        n = len(self.keys)
        for pick in picks:
            if preferred and (only_preferred or pick < n):
                key = preferred[pick % len(preferred)]
            else:
                key = self.keys[pick % n]
            if not unique or key not in out:
                out.append(key)
        return out

    # ------------------------------------------------------------ set-up

    @initialize(num_blocks=NUM_BLOCKS, events=st.booleans(), faulty=st.booleans())
    def start(self, num_blocks: int, events: bool, faulty: bool) -> None:
        self.lock.apply(Start(num_blocks, events, faulty))

    # ------------------------------------------------------------ valid operations

    @rule(data=st.data())
    def store(self, data: st.DataObject) -> None:
        """Any keys (every state is valid here): new ones are stored, resident ones
        are skipped and protected from eviction."""
        keys = self._keys(data, (), 5)
        self.lock.apply(Step(Call.keys("prepare_store", keys)))

    @rule(data=st.data())
    def store_and_commit(self, data: st.DataObject) -> None:
        """prepare_store then complete_store of what it stored: the common pair, as one
        rule, so that READY blocks (and loads of them) are frequent."""
        absent = [k for k in self.keys if k not in self.lock.keys_in(_P, _R, _L)]
        keys = self._keys(data, absent, 3)
        self.lock.apply(Step(Call.keys("prepare_store", keys)))
        stored = [k for k in keys if k in self.lock.keys_in(_P)]
        self.lock.apply(Step(Call.keys("complete_store", stored, success=True)))

    @precondition(lambda self: bool(self.lock.keys_in(_P)))
    @rule(data=st.data(), success=st.booleans())
    def commit(self, data: st.DataObject, success: bool) -> None:
        keys = self._keys(data, self.lock.keys_in(_P), 4)
        self.lock.apply(Step(Call.keys("complete_store", keys, success=success)))

    @precondition(lambda self: bool(self.lock.keys_in(_R, _L)))
    @rule(data=st.data(), success=st.booleans())
    def commit_resident(self, data: st.DataObject, success: bool) -> None:
        """complete_store of a batch with READY and LOADING keys on purpose, mixed with
        any PENDING ones: the resident keys must be ignored (not re-committed, not
        dropped, their pins and places kept), the pending ones committed or aborted."""
        lock = self.lock
        keys = self._keys(data, lock.keys_in(_R, _L) + lock.keys_in(_P), 4)
        lock.apply(Step(Call.keys("complete_store", keys, success=success)))

    @precondition(lambda self: bool(self.lock.keys_in(_R, _L)))
    @rule(data=st.data())
    def load_begin(self, data: st.DataObject) -> None:
        keys = self._keys(data, self.lock.keys_in(_R, _L), 3)
        self.lock.apply(Step(Call.keys("prepare_load", keys)))

    @precondition(lambda self: bool(self.lock.keys_in(_R, _L)))
    @rule(data=st.data())
    def load_and_finish(self, data: st.DataObject) -> None:
        """prepare_load then complete_load of the same keys (a whole load), so that
        ref counts often go 0 -> 1 -> 0 and blocks re-enter the evictable list."""
        keys = self._keys(data, self.lock.keys_in(_R, _L), 3)
        self.lock.apply(Step(Call.keys("prepare_load", keys)))
        loading = self.lock.keys_in(_L)
        self.lock.apply(Step(Call.keys("complete_load", [k for k in keys if k in loading])))

    @precondition(lambda self: bool(self.lock.keys_in(_L)))
    @rule(data=st.data())
    def load_end(self, data: st.DataObject) -> None:
        keys = self._keys(data, self.lock.keys_in(_L), 3)
        self.lock.apply(Step(Call.keys("complete_load", keys)))

    @rule(data=st.data(), load=st.booleans())
    def wrong_state(self, data: st.DataObject, load: bool) -> None:
        """A batch of good keys with one key the call must refuse, at any position:
        prepare_load of an ABSENT or PENDING key, complete_load of an ABSENT, PENDING
        or READY one (ref underflow). Hits the per-key checks, "the first offender
        decides", and all-or-nothing when good keys come before the offender."""
        lock = self.lock
        if not lock.contract.inputs.invalid:
            return
        good = lock.keys_in(_R, _L) if load else lock.keys_in(_L)
        refused = lock.keys_in(_P) if load else lock.keys_in(_P, _R)
        absent = [k for k in self.keys if k not in lock.keys_in(_P, _R, _L)]
        offenders = refused + absent[:2]
        offender = offenders[data.draw(_INDEX) % len(offenders)]
        keys = [k for k in self._keys(data, good, 3) if k != offender]
        keys.insert(data.draw(_INDEX) % (len(keys) + 1), offender)
        lock.apply(Step(Call.keys("prepare_load" if load else "complete_load", keys)))

    @rule(data=st.data(), poison=st.integers(0, 3))
    def touch(self, data: st.DataObject, poison: int) -> None:
        """Mostly READY keys (they move), mixed with any others (they must not); one
        time in four (when malformed calls are on) with an unhashable key among them,
        which touch must skip without dropping the keys around it."""
        keys: list[object] = list(self._keys(data, self.lock.keys_in(_R), 5, unique=False))
        if poison == 0 and self.lock.contract.inputs.malformed:
            keys.insert(data.draw(_INDEX) % (len(keys) + 1), [1])
        self.lock.apply(Step(Call.keys("touch", keys)))

    @rule(data=st.data(), what=st.integers(0, 7))
    def observe(self, data: st.DataObject, what: int) -> None:
        """lookup, take_events, and now and then reset_cache."""
        if what == 0:
            call = Call.plain("reset_cache")
        elif what <= 3:
            call = Call.plain("take_events")
        else:
            keys = self._keys(data, self.lock.keys_in(_P, _R, _L), 1) or [self.keys[0]]
            call = Call.plain("lookup", keys[0])
        self.lock.apply(Step(call))

    # ------------------------------------------------------------ bad input

    @rule(data=st.data(), kind=st.integers(0, 3))
    def bad_input(self, data: st.DataObject, kind: int) -> None:
        """Malformed key batches (mostly), non-bool `success` and unhashable lookups,
        bad constructor arguments: `num_blocks`, an unknown policy name, a non-bool
        `enable_events`. Under a contract without malformed calls only the duplicate
        batch is made (if duplicates are on)."""
        inputs = self.lock.contract.inputs
        if not inputs.malformed:
            if inputs.duplicates:
                keys = self._keys(data, self.lock.keys_in(_P, _R, _L), 3) or [self.keys[0]]
                self.lock.apply(Step(bad_key_calls(data.draw(_METHOD), keys)[0]))
            return
        if kind <= 1:
            method = data.draw(_METHOD)
            keys = self._keys(data, self.lock.keys_in(_P, _R, _L), 3)
            index = data.draw(_BAD_KEY_INDEX)
            if index == 0 and not inputs.duplicates:
                return
            self.lock.apply(Step(bad_key_calls(method, keys)[index]))
        elif kind == 2:
            keys = self._keys(data, self.lock.keys_in(_P), 2)
            calls = bad_success_calls(keys) + bad_lookup_calls()
            self.lock.apply(Step(calls[data.draw(_BAD_SCALAR_INDEX)]))
        else:
            num_blocks = data.draw(_BAD_NUM_BLOCKS)
            events: object = data.draw(_COIN)
            policy = self.policy
            if num_blocks == 1 and type(num_blocks) is int:  # valid: break another argument
                bad = data.draw(_BAD_EVENTS)
                policy, events = (UNKNOWN_POLICY, events) if bad is None else (policy, bad)
            self.lock.apply(Construct(num_blocks, policy, events))

    # ------------------------------------------------------------ copies

    @precondition(lambda self: bool(self.copy_modes))
    @rule(which=st.integers(0, len(MODES) - 1))
    def copy_roundtrip(self, which: int) -> None:
        """Copy the implementation (deepcopy or pickle), check the copy equals the
        original and is independent of it, and go on with the copy."""
        modes = self.copy_modes
        self.lock.apply(Copy(modes[which % len(modes)]))

    # ------------------------------------------------------------ fault injection

    @precondition(lambda self: self.lock.faulty)
    @rule(
        data=st.data(),
        hook=st.sampled_from(("insert", "evict")),
        k=st.sampled_from((2, 1)),
        late=st.booleans(),
    )
    def fault_in_store(self, data: st.DataObject, hook: str, k: int, late: bool) -> None:
        """prepare_store with `insert` failing on its k-th key, or `evict` failing; at
        the hook's entry or after its body (victims already taken, key filed)."""
        keys = self._keys(data, (), MAX_BLOCKS + 2)
        call = Call.keys("prepare_store", keys)
        self.lock.apply(Fault(call, hook, 1 if hook == "evict" else k, late))

    @precondition(lambda self: self.lock.faulty)
    @rule(
        data=st.data(),
        hook=st.sampled_from(_HOOK_FAULTS),
        k=st.sampled_from((2, 1)),
        late=st.booleans(),
    )
    def fault_in_hook(self, data: st.DataObject, hook: str, k: int, late: bool) -> None:
        """A call that reaches a per-key hook (`mark_evictable`, `mark_non_evictable`,
        `remove`), `touch` or `clear`, which fails on the first or second key -- after
        the policy has already changed for the first one -- at the hook's entry or
        after its body (`late`: the policy changed for that key as well)."""
        lock = self.lock
        # A hook is reached only through keys in the right state: start from the drawn
        # hook and take the first one whose keys exist now (touch always can).
        reaches = {
            "remove": (_P,),
            "mark_non_evictable": (_R,),
            "mark_evictable": (_P, _L),
            "touch": (),
            "clear": (),
        }
        order = _HOOK_FAULTS[_HOOK_FAULTS.index(hook) :] + _HOOK_FAULTS[: _HOOK_FAULTS.index(hook)]
        hook = next(h for h in order if not reaches[h] or lock.keys_in(*reaches[h]))
        if hook == "mark_evictable" and not lock.keys_in(_P):
            call = Call.keys("complete_load", self._keys(data, lock.keys_in(_L), 3))
        elif hook == "remove":
            call = Call.keys("complete_store", self._keys(data, lock.keys_in(_P), 4), success=False)
        elif hook == "mark_non_evictable":
            call = Call.keys("prepare_load", self._keys(data, lock.keys_in(_R), 3))
        elif hook == "mark_evictable" and (not lock.keys_in(_L) or data.draw(_COIN)):
            call = Call.keys("complete_store", self._keys(data, lock.keys_in(_P), 4))
        elif hook == "mark_evictable":
            call = Call.keys("complete_load", self._keys(data, lock.keys_in(_L), 3))
        elif hook == "clear":
            call, k = Call.plain("reset_cache"), 1
        else:
            call = Call.keys("touch", self._keys(data, lock.keys_in(_R), 5, unique=False))
            k = 1  # touch is called once per manager call
        lock.apply(Fault(call, hook, k, late))

"""ARC-specific rules for the conformance engine: reach the states where ARC differs.

The engine's generic rules rarely produce what ARC's behaviour hinges on: many
successful evictions (so ghosts accumulate past N and get trimmed), ghost hits in
both B1 and B2 (so the target moves both ways), T2 entries, and evictions where T1
is below its target while T2 has no idle entry (the T1 fallback). `ArcRules` adds
five rules, each made of ordinary manager calls through the same `LockStep` (so
the calls are compared, traced and replayed like every other step):

* `settle` -- commit every pending key and end one load of every loading key;
* `store_absent` -- `prepare_store` of absent keys, preferring ghosts (evicts);
* `touch_lists` -- `touch` of keys drawn from B1, B2, T1 and T2;
* `pin_t2` -- `prepare_load` of every idle T2 key (so the next eviction that wants
  T2 must fall back to T1);
* `fallback_pressure` -- the three in a row: touch every B1 ghost (the target grows
  past |T1|), pin T2, store absent keys (the eviction must take T1's idle entries).

`evictable.proofs.lockstep.conformance.make_machine` mixes these rules into the machine for policy
"arc" (`POLICY_RULES`).
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st
from hypothesis.stateful import rule

from evictable.model.lifecycle import CpuState
from evictable.model.types import ArcPolicySnapshot, Key
from evictable.proofs.lockstep.inputs import KEYS, Call
from evictable.proofs.lockstep.manager import LockStep, Step

__all__ = ["ArcRules"]

_PICKS = st.lists(st.integers(0, 63), min_size=1, max_size=4)


class ArcRules:
    """A mixin of extra rules for a lock-step machine whose policy is ARC."""

    lock: LockStep

    def _arc(self) -> ArcPolicySnapshot | None:
        """ARC's lists: the model's, or under the safety contract (whose model keeps
        no recency) the implementation's own snapshot's."""
        for snap in (self.lock.m_snap, self.lock.i_side.full if self.lock.i_side else None):
            if snap is not None and isinstance(snap.policy, ArcPolicySnapshot):
                return snap.policy
        return None

    @staticmethod
    def _pick(data: st.DataObject, pool: Sequence[Key]) -> list[Key]:
        if not pool:
            return []
        out: list[Key] = []
        for i in data.draw(_PICKS):
            key = pool[i % len(pool)]
            if key not in out:
                out.append(key)
        return out

    @rule()
    def settle(self) -> None:
        """Every pending key commits and every loading key loses one load."""
        pending = self.lock.keys_in(CpuState.PENDING)
        if pending:
            self.lock.apply(Step(Call.keys("complete_store", pending)))
        loading = self.lock.keys_in(CpuState.LOADING)
        if loading:
            self.lock.apply(Step(Call.keys("complete_load", loading)))

    @rule(data=st.data())
    def store_absent(self, data: st.DataObject) -> None:
        """Store keys that are not resident, ghosts first: the cache evicts to make room."""
        arc = self._arc()
        if arc is None:
            return
        resident = set(arc.t1) | set(arc.t2)
        ghosts = [k for k in (*arc.b1, *arc.b2) if k not in resident]
        pool = getattr(self, "keys", KEYS)  # the machine's key pool (its contract's keys)
        others = [k for k in pool if k not in resident and k not in ghosts]
        keys = self._pick(data, ghosts + others)
        if keys:
            self.lock.apply(Step(Call.keys("prepare_store", keys)))

    @rule(data=st.data())
    def touch_lists(self, data: st.DataObject) -> None:
        """Touch keys drawn from B1, B2, T1 and T2 (ghost hits move the target)."""
        arc = self._arc()
        if arc is None:
            return
        keys = self._pick(data, [*arc.b1, *arc.b2, *arc.t1, *arc.t2])
        if keys:
            self.lock.apply(Step(Call.keys("touch", keys)))

    @rule()
    def pin_t2(self) -> None:
        """Load every idle T2 key: T2 has no eligible entry until they are settled."""
        arc = self._arc()
        if arc is None:
            return
        ready = set(self.lock.keys_in(CpuState.READY))
        keys = [k for k in arc.t2 if k in ready]
        if keys:
            self.lock.apply(Step(Call.keys("prepare_load", keys)))

    @rule(data=st.data())
    def fallback_pressure(self, data: st.DataObject) -> None:
        """Grow the target, pin T2, then store: the eviction must fall back to T1."""
        arc = self._arc()
        if arc is None:
            return
        if arc.b1:
            self.lock.apply(Step(Call.keys("touch", list(arc.b1))))
        self.pin_t2()
        self.store_absent(data)

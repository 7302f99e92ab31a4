"""ARC-specific rules for the conformance engine: reach the states where ARC differs.

The engine's generic rules rarely produce what ARC's behaviour hinges on: many
successful evictions (so ghosts accumulate past N and get trimmed), ghost hits in
both B1 and B2 (so the target moves both ways), T2 entries, and evictions where T1
is below its target while T2 has no idle entry (the T1 fallback). `ArcRules` adds
five rules, and a start that makes ghost hits at once (`ghost_hits`: B1 and B2
ghosts, the target moved both ways, early in every example), each made of ordinary
manager calls through the same `LockStep` (so the calls are compared, traced and
replayed like every other step):

* `settle` -- commit every pending key and end one load of every loading key;
* `store_absent` -- `prepare_store` of absent keys, preferring ghosts (evicts);
* `touch_lists` -- `touch` of keys drawn from B1, B2, T1 and T2;
* `pin_t2` -- `prepare_load` of every idle T2 key (so the next eviction that wants
  T2 must fall back to T1);
* `touch_storm` -- one `touch` of a long batch of resident keys with repeats (stale
  index entries pile up until the index is compacted, in one call);
* `fallback_pressure` -- the three in a row: touch every B1 ghost (the target grows
  past |T1|), pin T2, store absent keys (the eviction must take T1's idle entries).

`evictable.proofs.lockstep.conformance.make_machine` mixes these rules into the machine for policy
"arc" (`POLICY_RULES`).
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from evictable.model.lifecycle import CpuState
from evictable.model.types import ArcPolicySnapshot, Key
from evictable.proofs.lockstep.inputs import KEYS, Call
from evictable.proofs.lockstep.machine import NUM_BLOCKS
from evictable.proofs.lockstep.manager import LockStep, Start, Step

__all__ = ["ArcRules"]

_PICKS = st.lists(st.integers(0, 63), min_size=1, max_size=4)
_EXTRA = st.integers(0, 2)


class ArcRules:
    """A mixin of extra rules for a lock-step machine whose policy is ARC."""

    lock: LockStep

    @initialize(num_blocks=NUM_BLOCKS, events=st.booleans(), faulty=st.booleans(), data=st.data())
    def start(self, num_blocks: int, events: bool, faulty: bool, data: st.DataObject) -> None:
        """Build both sides, then make ghost hits at once (see `ghost_hits`): every ARC
        example starts with ghosts in B1 and B2 and the target already moved."""
        self.lock.apply(Start(num_blocks, events, faulty))
        self.ghost_hits(data)

    def _absent(self) -> list[Key]:
        arc = self._arc()
        if arc is None:
            return []
        known = {*arc.t1, *arc.t2, *arc.b1, *arc.b2}
        return [k for k in KEYS if k not in known]

    def _store_commit(self, count: int) -> None:
        """Store and commit `count` never-seen keys in one call each (once the cache is
        full, each key stored evicts one and leaves a ghost)."""
        keys = self._absent()[:count]
        if not keys:
            return
        self.lock.apply(Step(Call.keys("prepare_store", keys)))
        pending = [k for k in keys if k in self.lock.keys_in(CpuState.PENDING)]
        if pending:
            self.lock.apply(Step(Call.keys("complete_store", pending)))

    def ghost_hits(self, data: st.DataObject) -> None:
        """Overflow the cache (ghosts in B1), promote a T1 key to T2 and overflow again
        (so T2 sheds into B2), then touch a B1 and a B2 ghost: the target grows and
        shrinks. How far each phase goes is drawn."""
        n = self.lock.model.num_blocks if self.lock.model is not None else 0
        if n == 0:
            return
        self._store_commit(n)  # full
        arc = self._arc()
        if arc is not None and arc.t1:
            self.lock.apply(Step(Call.keys("touch", [arc.t1[-1]])))  # one key in T2
        for _ in range(2 + data.draw(_EXTRA)):  # evictions, from T1 and then T2
            self._store_commit(max(1, n // 2))
        arc = self._arc()
        if arc is not None:
            hits = [
                ghosts[-1 - data.draw(_EXTRA) % len(ghosts)]
                for ghosts in (arc.b1, arc.b2)
                if ghosts
            ]
            for key in hits:
                self.lock.apply(Step(Call.keys("touch", [key])))

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

    @rule(data=st.data(), length=st.integers(8, 48))
    def touch_storm(self, data: st.DataObject, length: int) -> None:
        """One touch of a long batch of resident keys, repeats included: each idle key
        met moves and leaves a stale entry behind in its list's index, so one call can
        pile up enough of them for the index to be compacted."""
        resident = self.lock.keys_in(CpuState.READY, CpuState.PENDING, CpuState.LOADING)
        if not resident:
            return
        picks = data.draw(
            st.lists(st.integers(0, len(resident) - 1), min_size=length, max_size=length)
        )
        self.lock.apply(Step(Call.keys("touch", [resident[i] for i in picks])))

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

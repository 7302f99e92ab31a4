"""LMCache's own calls in the conformance engine: the `lmcache-0.5` profile's rules.

The generic rules make the seed's calls (store, commit, load, release, lookup,
reset); LMCache's CPU tier has more that change its state, and `LmcacheRules` makes
them, each an ordinary manager call through the same `LockStep` (compared, traced
and replayed like every other step) on the profile's model
(`model.lmcache05.Lmcache05Manager`) and the implementation:

* `pin_lookup` -- `lookup_pin(keys)`: a prefix of indexed keys, now and then with an
  absent or pending key inside it (the prefix stops there);
* `touch_cache` -- `touch_cache()`: the recorded lookups become policy hits;
* `unpin` -- `unpin(keys)`, mostly of pinned keys;
* `force_remove` -- `remove(keys)`, mostly of pinned or read keys;
* `expire` -- `expire_pins(keys)`: pin leases run out;
* `race` -- a pinned lookup, then the key leaves the index before its recorded hit is
  handed to the policy (a forced remove, or an expired lease and an eviction by a
  store), then `touch_cache()`: what another thread of LMCache can do between the two
  lock holds of a lookup.

`evictable.proofs.lockstep.conformance.make_machine` mixes these rules into the machine
under the `lmcache-0.5` profile (`PROFILE_RULES`).
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from evictable.model.lifecycle import CpuState
from evictable.model.types import Key
from evictable.proofs.lockstep.inputs import Call
from evictable.proofs.lockstep.manager import LockStep, Step

__all__ = ["LmcacheRules"]

_PICKS = st.lists(st.integers(0, 63), min_size=1, max_size=3)
_INDEX = st.integers(0, 63)
_P, _R, _L = CpuState.PENDING, CpuState.READY, CpuState.LOADING


class LmcacheRules:
    """A mixin of extra rules for a lock-step machine under the `lmcache-0.5` profile."""

    lock: LockStep
    keys: Sequence[Key]

    def _indexed(self) -> list[Key]:
        return self.lock.keys_in(_R, _L)

    def _pinned(self) -> list[Key]:
        model = self.lock.model
        pins = getattr(model, "pins", {})
        return sorted(pins, key=repr)

    def _draw(self, data: st.DataObject, preferred: Sequence[Key]) -> list[Key]:
        """Distinct keys, mostly from `preferred`, else from the whole pool."""
        pool = list(preferred) or list(self.keys)
        out: list[Key] = []
        for pick in data.draw(_PICKS):
            key = pool[pick % len(pool)] if pick < 48 else self.keys[pick % len(self.keys)]
            if key not in out:
                out.append(key)
        return out

    def _call(self, method: str, keys: Sequence[Key]) -> None:
        self.lock.apply(Step(Call.keys(method, keys)))

    @precondition(lambda self: bool(self.lock.keys_in(_R, _L)))
    @rule(data=st.data(), miss=st.integers(0, 3))
    def pin_lookup(self, data: st.DataObject, miss: int) -> None:
        keys = self._draw(data, self._indexed())
        if miss == 0:
            other = [k for k in self.keys if k not in self._indexed() and k not in keys]
            if other:
                keys.insert(data.draw(_INDEX) % (len(keys) + 1), other[0])
        self._call("lookup_pin", keys)

    @rule()
    def touch_cache(self) -> None:
        self.lock.apply(Step(Call.plain("touch_cache")))

    @rule(data=st.data())
    def unpin(self, data: st.DataObject) -> None:
        self._call("unpin", self._draw(data, self._pinned()))

    @precondition(lambda self: bool(self.lock.keys_in(_R, _L)))
    @rule(data=st.data())
    def force_remove(self, data: st.DataObject) -> None:
        busy = self.lock.keys_in(_L)
        self._call("remove", self._draw(data, busy or self._indexed()))

    @precondition(lambda self: bool(getattr(self.lock.model, "pins", None)))
    @rule(data=st.data())
    def expire(self, data: st.DataObject) -> None:
        self._call("expire_pins", self._draw(data, self._pinned()))

    @precondition(lambda self: bool(self.lock.keys_in(_R, _L)))
    @rule(data=st.data(), how=st.integers(0, 1))
    def race(self, data: st.DataObject, how: int) -> None:
        keys = self._draw(data, self._indexed())[:2]
        self._call("lookup_pin", keys)
        if how == 0:
            self._call("remove", keys[-1:])
        else:
            self._call("expire_pins", keys)
            fresh = [k for k in self.keys if k not in self.lock.keys_in(_P, _R, _L)]
            self._call("prepare_store", fresh[: len(keys)])
        self.lock.apply(Step(Call.plain("touch_cache")))

"""The reference ARC policy (docs/semantics.md, "ARC"): four plain lists and a float target.

Written for clarity, not speed: every list is a Python list, least recent first, and
eviction scans it. `impl/policies/arc.py` is the fast path and is checked against
this model by the conformance engine.

State:

* `t1` -- resident keys seen once since they entered (recency).
* `t2` -- resident keys seen again while ready (frequency).
* `b1`, `b2` -- ghosts: keys recently evicted from `t1` / `t2`, each at most N long.
* `target` -- the adaptive target size of `t1`, a float in [0, N], starting at 0.

The policy keeps only order. A key's ref count (and so whether it is pending, ready
or idle) is owned by the manager and read through `ref_of`; what a ref count means
is taken from the lifecycle table (`model.lifecycle.CPU_MACHINE`), not restated.
The hooks `mark_evictable` / `mark_non_evictable` therefore move nothing: an entry
keeps its place in `t1` / `t2` whatever its ref count. They keep `idle`, the keys
the policy has been told are evictable, which the snapshot reports as its
`evictable` view (so a missed or extra hook call is observable, and the manager's
invariant "evictable exactly when READY" is checked of ARC as of LRU).
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass

from evictable.model.errors import InvalidArgumentError
from evictable.model.lifecycle import CPU_MACHINE, CpuState, StateSpec
from evictable.model.policy import RefOf
from evictable.model.types import ArcPolicySnapshot, Key

__all__ = [
    "ModelArc",
    "is_evictable_ref",
    "is_pending_ref",
    "target_after_b1_hit",
    "target_after_b2_hit",
]


def _spec_of(ref: int | None) -> StateSpec | None:
    """The resident CPU state whose ref-count range holds `ref` (None when absent)."""
    if ref is None:
        return None
    for spec in CPU_MACHINE.states:
        if spec.resident and spec.admits(ref):
            return spec
    return None


def is_evictable_ref(ref: int | None) -> bool:
    """A block with this ref count is evictable (the table's flag: READY, ref 0)."""
    spec = _spec_of(ref)
    return spec is not None and spec.flag


def is_pending_ref(ref: int | None) -> bool:
    """A block with this ref count has its store in flight (PENDING, ref -1)."""
    spec = _spec_of(ref)
    return spec is not None and spec.state is CpuState.PENDING


def target_after_b1_hit(target: float, b1: int, b2: int, capacity: int) -> float:
    """A B1 ghost hit: T1 was too small. `target + max(1, |B2|/|B1|)`, capped at N.

    Pre: `b1 >= 1` (the hit key is in B1). Shared with `impl` so both round alike.
    """
    return min(target + max(1.0, b2 / b1), float(capacity))


def target_after_b2_hit(target: float, b1: int, b2: int) -> float:
    """A B2 ghost hit: T2 was too small. `target - max(1, |B1|/|B2|)`, floored at 0.

    Pre: `b2 >= 1` (the hit key is in B2). Shared with `impl` so both round alike.
    """
    return max(target - max(1.0, b1 / b2), 0.0)


@dataclass(frozen=True)
class _Candidate:
    """One chosen victim and the resident list it leaves (`t1` or `t2`)."""

    key: Key
    from_t1: bool


class ModelArc:
    """ARC over plain lists; implements `model.policy.ModelPolicy`."""

    name = "arc"

    def __init__(self, capacity: int) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
            raise InvalidArgumentError(f"ARC capacity must be an int >= 0, got {capacity!r}")
        self.capacity = capacity
        self.t1: list[Key] = []
        self.t2: list[Key] = []
        self.b1: list[Key] = []
        self.b2: list[Key] = []
        self.target: float = 0.0
        self.idle: set[Key] = set()

    # ------------------------------------------------------------ residency

    def insert(self, key: Key) -> None:
        """A key became resident (PENDING): T1's most-recent end; it stops being a ghost."""
        if key in self.t1 or key in self.t2:
            raise InvalidArgumentError(f"ARC insert: key {key!r} is already resident")
        _discard(self.b1, key)
        _discard(self.b2, key)
        self.t1.append(key)

    def remove(self, key: Key) -> None:
        """A PENDING key left residency (failed store): out of T1/T2, and no ghost."""
        if key not in self.t1 and key not in self.t2:
            raise InvalidArgumentError(f"ARC remove: key {key!r} is not resident")
        _discard(self.t1, key)
        _discard(self.t2, key)
        self.idle.discard(key)

    def mark_evictable(self, key: Key) -> None:
        """Ref count reached 0: nothing moves; the key joins the idle view."""
        self.idle.add(key)

    def mark_non_evictable(self, key: Key) -> None:
        """Ref count went 0 -> 1: nothing moves; the key leaves the idle view."""
        self.idle.discard(key)

    # ------------------------------------------------------------ recency

    def touch(self, keys: Sequence[Key], ref_of: RefOf) -> None:
        """A recency hint, keys walked in reverse (so the first ends most recent).

        In T1 and ready -> T2 MRU; in T1 and pending -> T1 MRU; in T2 -> T2 MRU;
        a ghost hit in B1 grows the target, in B2 shrinks it, and the ghost moves to
        its list's MRU end. Other keys are ignored. Never raises.
        """
        for key in reversed(keys):
            self.touch_one(key, ref_of)

    def touch_one(self, key: Key, ref_of: RefOf) -> None:
        if key in self.t1:
            self.t1.remove(key)
            if is_pending_ref(ref_of(key)):
                self.t1.append(key)
            else:
                self.t2.append(key)
        elif key in self.t2:
            self.t2.remove(key)
            self.t2.append(key)
        elif key in self.b1:
            self.target = target_after_b1_hit(
                self.target, len(self.b1), len(self.b2), self.capacity
            )
            self.b1.remove(key)
            self.b1.append(key)
        elif key in self.b2:
            self.target = target_after_b2_hit(self.target, len(self.b1), len(self.b2))
            self.b2.remove(key)
            self.b2.append(key)

    # ------------------------------------------------------------ eviction

    def evict(self, n: int, protected: Set[Key], ref_of: RefOf) -> list[Key] | None:
        """Choose `n` victims among idle, unprotected residents, then commit; or None.

        Selection (nothing changes yet): `t1` starts as |T1|, pinned entries included.
        Each round: if `t1 >= int(target)`, take T1's next eligible entry; if none was
        taken, T2's next eligible entry; if T2 has none, T1's next eligible entry; if
        there is none at all, fail. Taking from T1 lowers `t1` by one.
        Commit, in candidate order: leave T1/T2, become the MRU ghost in B1/B2; then
        trim each ghost list from its least-recent end to N.
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InvalidArgumentError(f"ARC evict: n must be an int >= 0, got {n!r}")
        chosen: list[_Candidate] = []
        taken: set[Key] = set()

        def next_eligible(entries: list[Key]) -> Key | None:
            for key in entries:
                if key not in protected and key not in taken and is_evictable_ref(ref_of(key)):
                    return key
            return None

        t1 = len(self.t1)
        for _ in range(n):
            pick: _Candidate | None = None
            if t1 >= int(self.target):
                key = next_eligible(self.t1)
                pick = None if key is None else _Candidate(key, from_t1=True)
            if pick is None:
                key = next_eligible(self.t2)
                pick = None if key is None else _Candidate(key, from_t1=False)
            if pick is None:
                key = next_eligible(self.t1)
                pick = None if key is None else _Candidate(key, from_t1=True)
            if pick is None:
                return None  # not enough idle, unprotected entries: nothing changed
            if pick.from_t1:
                t1 -= 1
            chosen.append(pick)
            taken.add(pick.key)

        for c in chosen:
            self.idle.discard(c.key)
            if c.from_t1:
                self.t1.remove(c.key)
                self.b1.append(c.key)
            else:
                self.t2.remove(c.key)
                self.b2.append(c.key)
        _trim_front(self.b1, self.capacity)
        _trim_front(self.b2, self.capacity)
        return [c.key for c in chosen]

    # ------------------------------------------------------------ reset / view

    def clear(self) -> None:
        """Forget everything: all four lists empty, target back to 0."""
        self.t1.clear()
        self.t2.clear()
        self.b1.clear()
        self.b2.clear()
        self.target = 0.0
        self.idle.clear()

    def snapshot(self) -> ArcPolicySnapshot:
        """The four lists, least recent first, the target and the idle view."""
        return ArcPolicySnapshot(
            t1=tuple(self.t1),
            t2=tuple(self.t2),
            b1=tuple(self.b1),
            b2=tuple(self.b2),
            target=float(self.target),
            evictable=frozenset(self.idle),
        )


def _discard(entries: list[Key], key: Key) -> None:
    """Remove `key` from `entries` if present."""
    if key in entries:
        entries.remove(key)


def _trim_front(entries: list[Key], limit: int) -> None:
    """Drop least-recent entries until at most `limit` remain."""
    if len(entries) > limit:
        del entries[: len(entries) - limit]

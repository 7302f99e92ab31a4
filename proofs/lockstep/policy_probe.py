"""The built-in policies' own API in lock-step with the model policies.

The manager calls a policy only as its contract allows (validated arguments, records
it made, the batch methods), so the policy's per-key methods and their argument
checks -- public API a caller may use directly -- are never reached through it.
`policy_probe(name)` drives the implementation's class for `name`
(`impl.policies.factory.builtin_class`, or any class given) and the model's policy
(`model.manager.MODEL_POLICIES`) side by side through their per-key API, keeping
the records and ref counts itself as a manager would:

* `runs` seeded random runs of `steps` calls each over a few keys: `insert` (with a
  new record that has no key yet, or a record the last `evict` released), a store's
  end (`mark_evictable`) or failure (`remove`), loads (`mark_non_evictable` /
  `mark_evictable` at the 0 edges), `remove` of an idle or loaded key, `touch`
  (resident, ghost and unknown keys), `evict(n, protected)` (`n` sometimes an int
  subclass), and `checkpoint()` / `rollback(saved)` (the model restored from a copy,
  the records' ref counts by the probe, as the manager does); after every call the
  snapshots are equal, the victims' keys are the model's, and `check_invariants()`
  holds (a fixed prelude first reaches ARC's heap and overflows its second ghost list);
* between them, calls outside the preconditions, judged by the implementation's
  own documented checks (the model policies are specified on their preconditions
  only): a resident key inserted, a record of the wrong class or still linked for
  another key, a key that is not resident removed, a bad `n` -- refused with
  `InvalidArgumentError`, nothing changed (so is a `rollback` of an object that is no
  checkpoint token); a key that is not resident marked --
  refused or ignored, nothing changed;
* constructors with a bad capacity: both sides raise `InvalidArgumentError`;
* for the LRU, its list corrupted through the records' public links
  (`LRU_CORRUPTIONS`): `snapshot` and `listed` raise `InvariantViolationError`
  ("lru_list_exact") naming the defect, and so does an `evict` that meets a
  protected key twice on a cycle.

Returns None when every call agrees, else the first disagreement with its trace.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

from evictable.impl.block import BlockStatus
from evictable.impl.policies.factory import builtin_class
from evictable.model.errors import InvalidArgumentError, InvariantViolationError
from evictable.model.manager import MODEL_POLICIES
from evictable.model.types import Key
from evictable.proofs.base.compare import Reply, invoke
from evictable.proofs.lockstep.inputs import BAD_NUM_BLOCKS

__all__ = ["BAD_N", "policy_probe"]

KEYS: tuple[Key, ...] = (b"a", b"b", b"c", b"d", b"e")
CAPACITY = 3
BAD_N: tuple[object, ...] = (-1, True, 1.5, "1", None)
"""`evict` counts both sides must refuse (`InvalidArgumentError`)."""
BAD_TOKENS: tuple[object, ...] = (None, (), (1, 2, 3), "saved")
"""Objects not shaped like any `checkpoint()` token: `rollback` refuses them."""


class _Count(int):
    """An int subclass: a valid count on both sides."""


class _Divergence(Exception):
    pass


class _Run:
    """One lock-step run: the implementation's policy, the model's, the records."""

    def __init__(self, cls: type[Any], name: str) -> None:
        self.impl = cls(CAPACITY)
        self.model = MODEL_POLICIES[name](CAPACITY)
        self.records: dict[Key, BlockStatus] = {}
        self.released: list[BlockStatus] = []
        self.slot = 0
        self.trace: list[str] = []
        self.saved: tuple[object, Any, dict[Key, tuple[BlockStatus, int]]] | None = None

    def ref_of(self, key: Key) -> int | None:
        rec = self.records.get(key)
        return None if rec is None else rec.ref_cnt

    def reusable(self) -> bool:
        """Whether a record the policy let go may be reused: the policy says so, and no
        checkpoint is pending (as the manager: it never reuses records of a policy it
        checkpoints, since `rollback` restores places, not the records' keys)."""
        return bool(getattr(self.impl, "releases_evicted_records", False)) and self.saved is None

    def fail(self, why: str) -> None:
        raise _Divergence(why + "\n" + "\n".join(self.trace[-12:]))

    def compare(self, what: str) -> None:
        ms, ri = self.model.snapshot(), invoke(self.impl.snapshot)
        if ri.raised or ri.value != ms:
            self.fail(f"{what}: snapshots differ: model {ms}, impl {ri.describe()}")
        ci = invoke(self.impl.check_invariants)
        if ci.raised:
            self.fail(f"{what}: impl.check_invariants() failed: {ci.describe()}")

    def both(self, what: str, model: Callable[[], object], impl: Callable[[], object]) -> Reply:
        """Make a call on both sides: both raise `InvalidArgumentError` or neither; on a
        refusal the implementation is unchanged."""
        self.trace.append(what)
        before = self.impl.snapshot()
        rm, ri = invoke(model), invoke(impl)
        if rm.raised and not isinstance(rm.value, InvalidArgumentError):
            self.fail(f"{what}: the model raised {rm.describe()} (model bug)")
        if rm.raised != ri.raised or (ri.raised and not isinstance(ri.value, InvalidArgumentError)):
            self.fail(f"{what}: model {rm.describe()}, impl {ri.describe()}")
        if ri.raised and self.impl.snapshot() != before:
            self.fail(f"{what}: impl changed although it refused the call")
        self.compare(what)
        return ri

    def refused(self, what: str, impl: Callable[[], object], may_ignore: bool = False) -> None:
        """A call outside the preconditions: refused (or, `may_ignore`, ignored), nothing
        changed."""
        self.trace.append(what)
        before = self.impl.snapshot()
        ri = invoke(impl)
        if ri.raised and not isinstance(ri.value, InvalidArgumentError):
            self.fail(f"{what}: impl {ri.describe()}, want InvalidArgumentError")
        if not ri.raised and not may_ignore:
            self.fail(f"{what}: impl {ri.describe()}, want InvalidArgumentError")
        if self.impl.snapshot() != before:
            self.fail(f"{what}: impl changed although it refused the call")
        self.compare(what)

    # ------------------------------------------------------------ undo

    def checkpoint(self) -> None:
        self.trace.append("saved = checkpoint()")
        refs = {k: (b, b.ref_cnt) for k, b in self.records.items()}
        self.saved = (self.impl.checkpoint(), copy.deepcopy(self.model), refs)

    def rollback(self) -> None:
        """Back to the last checkpoint: the records and ref counts as a manager restores
        them, the policy by `rollback(saved)`, the model by its copy."""
        if self.saved is None:
            return
        token, model, refs = self.saved
        self.saved = None
        self.trace.append("rollback(saved)")
        self.records = {}
        for key, (block, ref) in refs.items():
            block.ref_cnt = ref
            self.records[key] = block
        self.released = []
        self.model = model
        ri = invoke(self.impl.rollback, token)
        if ri.raised:
            self.fail(f"rollback(saved): impl {ri.describe()}")
        self.compare("rollback(saved)")

    # ------------------------------------------------------------ calls

    def insert(self, key: Key, reuse: bool) -> None:
        if reuse and self.released:
            rec = self.released.pop()
            rec.ref_cnt = -1
        else:
            rec = self.impl.record_class(self.slot)  # no key yet: insert files it
            self.slot += 1
        self.both(
            f"insert({key!r})", lambda: self.model.insert(key), lambda: self.impl.insert(key, rec)
        )
        self.records[key] = rec

    def stored(self, key: Key) -> None:
        self.records[key].ref_cnt = 0
        self.both(
            f"mark_evictable({key!r})  # stored",
            lambda: self.model.mark_evictable(key),
            lambda: self.impl.mark_evictable(key),
        )

    def aborted(self, key: Key) -> None:
        out = self.both(
            f"remove({key!r})", lambda: self.model.remove(key), lambda: self.impl.remove(key)
        )
        if not out.raised:
            rec = self.records.pop(key)
            if self.reusable():
                self.released.append(rec)  # dropped by `remove`: free for reuse too

    def load(self, key: Key) -> None:
        rec = self.records[key]
        rec.ref_cnt += 1
        if rec.ref_cnt == 1:
            self.both(
                f"mark_non_evictable({key!r})",
                lambda: self.model.mark_non_evictable(key),
                lambda: self.impl.mark_non_evictable(key),
            )

    def unload(self, key: Key) -> None:
        rec = self.records[key]
        rec.ref_cnt -= 1
        if rec.ref_cnt == 0:
            self.both(
                f"mark_evictable({key!r})  # load end",
                lambda: self.model.mark_evictable(key),
                lambda: self.impl.mark_evictable(key),
            )

    def touch(self, keys: list[Key]) -> None:
        self.both(
            f"touch({keys!r})",
            lambda: self.model.touch(list(keys), self.ref_of),
            lambda: self.impl.touch(list(keys)),
        )

    def evict(self, n: object, protected: frozenset[Key]) -> None:
        self.trace.append(f"evict({n!r}, {set(protected)!r})")
        before = self.impl.snapshot()
        rm = invoke(self.model.evict, n, protected, self.ref_of)
        ri = invoke(self.impl.evict, n, protected)
        if rm.raised or ri.raised:
            if not (rm.raised and ri.raised and isinstance(ri.value, InvalidArgumentError)):
                self.fail(f"evict({n!r}): model {rm.describe()}, impl {ri.describe()}")
            if self.impl.snapshot() != before:
                self.fail(f"evict({n!r}): impl changed although it refused the call")
            return
        got = None if ri.value is None else [k for k, _ in ri.value]
        if got != rm.value:
            self.fail(f"evict({n!r}, {set(protected)!r}): model {rm.value}, impl {got}")
        for key, rec in ri.value or ():
            if self.records.get(key) is not rec:
                self.fail(f"evict: victim {key!r} came back with another record")
            del self.records[key]
            if self.reusable():
                self.released.append(rec)
        self.compare("evict")


def _bad_calls(r: _Run, rnd: random.Random) -> None:
    """Calls outside the policy's preconditions, judged by its own documented checks
    (the model policies are specified on their preconditions only): refused with
    `InvalidArgumentError` and no change, or, for a mark of a key that is not
    resident, refused or ignored -- never another exception, never a change."""
    absent = [k for k in KEYS if k not in r.records]
    if r.records:
        key = rnd.choice([k for k in KEYS if k in r.records])
        fresh = r.impl.record_class(99)
        r.refused(f"insert({key!r})  # resident", lambda: r.impl.insert(key, fresh))
        other = r.records[key]
        if absent and (other.prev is not None or other.next is not None):  # linked: filed
            new = absent[0]
            r.refused(f"insert({new!r}, the record of {key!r})", lambda: r.impl.insert(new, other))
    idle = [k for k in KEYS if k in r.records and r.records[k].ref_cnt == 0]
    if idle:  # already idle: the LRU refuses a second mark, ARC ignores it, as the models
        key = idle[0]
        r.both(
            f"mark_evictable({key!r})  # already idle",
            lambda: r.model.mark_evictable(key),
            lambda: r.impl.mark_evictable(key),
        )
    if absent:
        key = absent[0]
        r.refused(f"remove({key!r})  # absent", lambda: r.impl.remove(key))
        r.refused(
            f"mark_non_evictable({key!r})  # absent", lambda: r.impl.mark_non_evictable(key), True
        )
        r.refused(f"mark_evictable({key!r})  # absent", lambda: r.impl.mark_evictable(key), True)
        if r.impl.record_class is not BlockStatus:  # a record of the wrong class
            plain = BlockStatus(98)
            r.refused(f"insert({key!r}, a BlockStatus)", lambda: r.impl.insert(key, plain))
    bad = rnd.choice(BAD_N)
    r.refused(f"evict({bad!r})", lambda: r.impl.evict(bad, frozenset()))
    token = rnd.choice(BAD_TOKENS)
    r.refused(f"rollback({token!r})", lambda: r.impl.rollback(token))


def _one_run(cls: type[Any], name: str, rnd: random.Random, steps: int) -> None:
    r = _Run(cls, name)
    for _ in range(steps):
        pending = [k for k, b in r.records.items() if b.ref_cnt < 0]
        ready = [k for k, b in r.records.items() if b.ref_cnt >= 0]
        loading = [k for k, b in r.records.items() if b.ref_cnt > 0]
        absent = [k for k in KEYS if k not in r.records]
        choice = rnd.randrange(10)
        if choice == 0 and absent and len(r.records) < CAPACITY:
            r.insert(rnd.choice(absent), rnd.random() < 0.5)
        elif choice == 1 and pending:
            r.stored(rnd.choice(pending))
        elif choice == 2 and pending and rnd.random() < 0.4:
            r.aborted(rnd.choice(pending))
        elif choice == 2 and ready and rnd.random() < 0.2:  # any resident key may leave
            r.aborted(rnd.choice(ready))
        elif choice == 3 and ready:
            r.load(rnd.choice(ready))
        elif choice == 4 and loading:
            r.unload(rnd.choice(loading))
        elif choice == 5:
            r.touch(rnd.sample(KEYS, rnd.randrange(3)))
        elif choice == 6:
            n = rnd.randrange(3)
            count = _Count(n) if rnd.random() < 0.2 else n  # an int subclass is an int
            r.evict(count, frozenset(rnd.sample(KEYS, rnd.randrange(2))))
        elif choice == 7:
            _bad_calls(r, rnd)
        elif choice == 8:
            r.checkpoint()
        elif choice == 9 and r.saved is not None:
            r.rollback()


# ------------------------------------------------------------------ a corrupted LRU list


def _lru_with(n: int, cls: type[Any]) -> tuple[Any, list[BlockStatus]]:
    lru = cls(n)
    recs = []
    for i, key in enumerate(KEYS[:n]):
        rec = BlockStatus(i)
        lru.insert(key, rec)
        rec.ref_cnt = 0
        lru.mark_evictable(key)
        recs.append(rec)
    return lru, recs


def _dangling(lru: Any, recs: list[BlockStatus]) -> None:
    recs[1].next = None


def _back_link(lru: Any, recs: list[BlockStatus]) -> None:
    recs[2].prev = recs[0]


def _cycle(lru: Any, recs: list[BlockStatus]) -> None:
    del lru.blocks[KEYS[0]]  # more listed records than resident ones: only the budget ends it


LRU_CORRUPTIONS: dict[str, tuple[Callable[[Any, list[BlockStatus]], None], str]] = {
    "a dangling link after the second record": (_dangling, "ends in a dangling link after"),
    "the third record links back to the first": (_back_link, "does not link back to"),
    "more records listed than resident": (_cycle, "without closing the ring (a cycle)"),
}
"""How the LRU's list is broken through the records' public links, and what the
bounded walk's error must say."""


def lru_corruption_probe(cls: type[Any] | None = None) -> str | None:
    """Every bounded walk of a corrupted LRU list (`snapshot`, `listed`) raises
    `InvariantViolationError` ("lru_list_exact") naming the defect; None when so."""
    impl_cls: type[Any] | None = cls if cls is not None else builtin_class("lru")
    if impl_cls is None:
        return "no built-in LRU"
    for label, (corrupt, detail) in LRU_CORRUPTIONS.items():
        for what in ("snapshot", "listed"):
            lru, recs = _lru_with(3, impl_cls)
            corrupt(lru, recs)
            got = invoke(
                lambda lru=lru, what=what: list(
                    getattr(lru, what)() if what == "listed" else [lru.snapshot()]
                )
            )
            err = got.value
            if not got.raised or not isinstance(err, InvariantViolationError):
                return f"LRU list with {label}: {what}() {got.describe()}"
            if err.names != ("lru_list_exact",) or detail not in str(err):
                return f"LRU list with {label}: {what}() raised {err}, want: {detail}"
    lru, recs = _lru_with(3, impl_cls)  # a true cycle: evict meets a protected key twice
    recs[2].next = recs[0]
    got = invoke(lru.evict, 10, frozenset({KEYS[0]}))
    err = got.value
    if not (isinstance(err, InvariantViolationError) and err.names == ("lru_list_exact",)):
        return f"LRU list with a cycle: evict(10, {{{KEYS[0]!r}}}) {got.describe()}"
    return None


def _bind_insert(r: _Run, rec: BlockStatus) -> Callable[[], object]:
    return lambda: r.impl.insert(KEYS[-1], rec)


def policy_probe(
    name: str, cls: type[Any] | None = None, runs: int = 60, steps: int = 40, seed: int = 0
) -> str | None:
    """The first disagreement of `cls` (default: the built-in class of `name`) with the
    model policy `name`, or None."""
    impl_cls: type[Any] | None = cls if cls is not None else builtin_class(name)
    if impl_cls is None or name not in MODEL_POLICIES:
        return f"policy {name!r} is not built in and in the model"
    return _probe(name, impl_cls, runs, steps, seed)


def _probe(name: str, impl_cls: type[Any], runs: int, steps: int, seed: int) -> str | None:
    for capacity in BAD_NUM_BLOCKS:
        rm, ri = invoke(MODEL_POLICIES[name], capacity), invoke(impl_cls, capacity)
        if not (rm.raised and ri.raised and isinstance(ri.value, InvalidArgumentError)):
            return f"{name}({capacity!r}): model {rm.describe()}, impl {ri.describe()}"
    try:  # idle records admitted newest first: ARC files the last one in its heap
        # (an insert of each record, still linked, is refused); then rollback over a
        # heap, and the second ghost list trimmed
        r = _Run(impl_cls, name)
        for key in KEYS[:CAPACITY]:
            r.insert(key, False)
        for key in reversed(KEYS[:CAPACITY]):
            r.stored(key)
        for key in KEYS[:CAPACITY]:
            rec = r.records[key]
            r.refused(f"insert({KEYS[-1]!r}, the record of {key!r})", _bind_insert(r, rec))
        r.checkpoint()  # with a heap entry: evicting it changes the heap, rollback restores it
        r.evict(1, frozenset())
        r.rollback()
        r.evict(CAPACITY, frozenset())
        for key in KEYS:  # every key through T2 and out: the second ghost list overflows
            r.insert(key, True)
            r.stored(key)
            r.touch([key])
            r.evict(1, frozenset())
    except _Divergence as why:
        return f"{name} policy API: {why}"
    if impl_cls is builtin_class("lru"):
        broken = lru_corruption_probe(impl_cls)
        if broken is not None:
            return broken
    rnd = random.Random(seed)
    for _ in range(runs):
        try:
            _one_run(impl_cls, name, rnd, steps)
        except _Divergence as why:
            return f"{name} policy API: {why}"
    return None

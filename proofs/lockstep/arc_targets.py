"""ARC with a fractional target: ghost hits of both kinds on uneven ghost lists.

ARC's target moves by `max(1, |B2|/|B1|)` on a B1 hit and by `max(1, |B1|/|B2|)` on a
B2 hit, and eviction compares `|T1|` with `int(target)`. With two slots a ghost list
holds at most two keys, every ratio is 1 or 2, and the target is always an integer:
an implementation that rounds the target instead of truncating it (or compares it
unrounded) agrees with the model on every call. Three slots and ghost lists of two
and three keys give a target of 1.5, where `int` and `round` part.

`scenarios(shape)` enumerates a family of call sequences over `SLOTS` slots, each
replayed in lock-step on the model and the implementation (results, errors and
snapshots -- ARC's four lists and its target included -- compared after every call):

1. **a B1 hit at 3/2** (from target 0 to 1.5): three keys stored and touched into T2,
   three more stored and touched one by one (each evicts T2's oldest: B2 fills to
   three), three stored untouched (each evicts the one before from T1: B1 gets two),
   then a touch of the oldest B1 ghost;
2. optionally **a B2 hit at 3/2** (from 3 to 1.5): a second B1 hit (1.5 -> 3), T2's
   keys pinned while three more keys go through T1 (B1 fills to three), one B2 ghost
   stored again (B2 down to two), the pins released, a touch of a B2 ghost;
3. then, with `|T1|` at or around `int(target)` (`t1_moves` of T1's keys touched into
   T2 first), a `prepare_store` of `victims` new keys with and without one T2 key
   pinned -- the eviction whose list depends on how the target is rounded -- and its
   commit, and one more store.

The family is finite and stated by `Shape`; `run(shape, factory)` replays all of it
and returns the first failure (with its call sequence) or the count.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from evictable.proofs.base.contract import DEFAULT, Contract
from evictable.proofs.base.protocol import Factory
from evictable.proofs.lockstep.arc_orders import Orders, replay_all
from evictable.proofs.lockstep.failures import Action, Start, Step
from evictable.proofs.lockstep.inputs import Call
from evictable.proofs.lockstep.observer import StepObserver

__all__ = ["SLOTS", "Shape", "Targets", "run", "scenarios"]

SLOTS = 3
"""The fewest slots with a fractional target: ghost lists of three and two keys."""


@dataclass(frozen=True)
class Shape:
    """The family: which ghost hits lead to the evictions, how many of T1's keys move
    to T2 before them, how many victims, with or without a pinned T2 key."""

    b2_hit: tuple[bool, ...] = (False, True)
    t1_moves: tuple[int, ...] = (0, 1)
    victims: tuple[int, ...] = (1, 2)
    pinned: tuple[bool, ...] = (False, True)

    def describe(self) -> str:
        hits = "a B1 hit at 3/2" + (", then a B2 hit at 3/2" if True in self.b2_hit else "")
        pins = "/".join("with" if p else "without" for p in self.pinned)
        return (
            f"ARC, {SLOTS} slots, 14 keys: {hits} (target 1.5), then evictions with "
            f"{'/'.join(map(str, self.t1_moves))} T1 keys moved to T2 x "
            f"{'/'.join(map(str, self.victims))} victims x {pins} a pinned T2 key "
            f"({self.count()} call sequences)"
        )

    def count(self) -> int:
        return len(self.b2_hit) * len(self.t1_moves) * len(self.victims) * len(self.pinned)


def _k(i: int) -> bytes:
    return f"k{i}".encode()


def _store(*keys: bytes) -> list[Action]:
    return [Step(Call.keys("prepare_store", keys)), Step(Call.keys("complete_store", keys))]


def _b1_hit() -> list[Action]:
    """Target 0 -> 1.5: B2 = [k1, k0, k3], B1 = [k7, k6] when k6 is touched."""
    acts: list[Action] = [
        *_store(_k(0), _k(1), _k(2)),
        Step(Call.keys("touch", [_k(0), _k(1), _k(2)])),
    ]
    for i in (3, 4, 5):  # each evicts T2's oldest: B2 fills to three
        acts += [*_store(_k(i)), Step(Call.keys("touch", [_k(i)]))]
    for i in (6, 7, 8):  # each evicts the key before it from T1: B1 = [k6, k7]
        acts += _store(_k(i))
    acts.append(Step(Call.keys("touch", [_k(6)])))  # B1 hit: + |B2|/|B1| = 3/2
    return acts


def _b2_hit() -> list[Action]:
    """From the end of `_b1_hit`: target 1.5 -> 3 -> 1.5 (a B2 hit at |B1|/|B2| = 3/2)."""
    t2 = [_k(4), _k(5)]
    acts: list[Action] = [Step(Call.keys("touch", [_k(7)]))]  # B1 hit: 1.5 + 3/2 = 3
    acts.append(Step(Call.keys("prepare_load", t2)))  # T2 pinned: evictions take T1's key
    for i in (10, 11, 12):
        acts += _store(_k(i))  # B1 = [k8, k10, k11]
    acts += _store(_k(1))  # a B2 ghost stored again: B2 = [k0, k3]
    acts.append(Step(Call.keys("complete_load", t2)))
    acts.append(Step(Call.keys("touch", [_k(0)])))  # B2 hit: 3 - |B1|/|B2| = 3 - 3/2
    return acts


def _evictions(b2_hit: bool, t1_moves: int, victims: int, pinned: bool) -> list[Action]:
    """The evictions after the hits: T1 is [k8] (B1 path) or [k1] (B2 path)."""
    t1 = [_k(1)] if b2_hit else [_k(8)]
    t2 = [_k(4)]
    fresh = [_k(20 + i) for i in range(victims + 1)]
    acts: list[Action] = []
    if t1_moves:
        acts.append(Step(Call.keys("touch", t1[:t1_moves])))
    if pinned:
        acts.append(Step(Call.keys("prepare_load", t2)))
    acts.append(Step(Call.keys("prepare_store", fresh[:victims])))
    acts.append(Step(Call.keys("complete_store", fresh[:victims])))
    if pinned:
        acts.append(Step(Call.keys("complete_load", t2)))
    acts += _store(fresh[victims])
    return acts


def scenarios(shape: Shape) -> Iterator[list[Action]]:
    """Every call sequence of the family (see the module docstring)."""
    for b2, moves, victims, pinned in itertools.product(
        shape.b2_hit, shape.t1_moves, shape.victims, shape.pinned
    ):
        acts: list[Action] = [Start(SLOTS, False, False), *_b1_hit()]
        if b2:
            acts += _b2_hit()
        yield acts + _evictions(b2, moves, victims, pinned)


Targets = Orders
"""The outcome of `run` (`arc_orders.Orders`: sequences, calls, the first failure)."""


def run(
    shape: Shape,
    factory: Factory,
    contract: Contract = DEFAULT,
    observer: StepObserver | None = None,
) -> Targets:
    """Replay every sequence of `shape` against `factory`'s ARC managers; stop at the
    first failure. `observer` also judges every call of both sides."""
    return replay_all(scenarios(shape), factory, contract, observer)

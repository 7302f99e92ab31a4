"""ARC where its idle index is hardest: every order in which idle records come back.

The ARC implementation keeps each list's idle records in a ring, a late ring and a
heap (`impl.policies.arc_index`), chosen by the order in which records become idle
again. Which structure a record lands in, and which entries an eviction walks,
depends on that order -- and on a protected key and an eviction that fails half-way
-- in ways the explorer's two or three slots and random runs rarely reach: five
blocks with four records going idle out of order are needed to put entries in all
three structures at once.

`scenarios(shape)` enumerates a family of call sequences, each replayed in lock-step
on the model and the implementation (`lockstep.manager.replay`: results, errors and
snapshots, ARC's lists and target included, compared after every call):

1. store and commit `blocks` keys (T1, in order), optionally touch some into T2;
2. pin every key (one load each), then end the loads of all but one, in a given
   order (every order of every choice of the key left pinned, the last keys -- T1's
   -- first: with one of them held, the records coming back fill the heaps of both
   lists, where the index bugs show soonest);
3. optionally an eviction that must fail inside the policy: the batch protects the
   two keys that went idle first (the ring's) and needs one victim more than the
   others can give, so the policy walks (and takes) every other idle record, heaped
   ones included, before it gives up, and must change nothing;
4. a `prepare_store` of `victims` new keys with one resident key in the batch (it is
   protected: never evicted), for every choice of that key;
5. end the last load and evict again, so that what the first eviction left behind is
   walked too.

The family is finite and stated by `Shape`; `run(shape, factory)` replays all of it
and returns the first failure (with its shortest call sequence) or the count.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from evictable.proofs.base.contract import DEFAULT, Contract
from evictable.proofs.base.faults import PLAN
from evictable.proofs.base.protocol import Factory
from evictable.proofs.lockstep.failures import Action, Start, Step
from evictable.proofs.lockstep.inputs import Call
from evictable.proofs.lockstep.manager import ConformanceFailure, replay
from evictable.proofs.lockstep.observer import StepObserver

__all__ = ["Orders", "Shape", "replay_all", "run", "scenarios"]


@dataclass(frozen=True)
class Shape:
    """The family: `blocks` slots (all stored), T2 prefixes touched, evictions of
    `victims` keys each, with and without a failed eviction first."""

    blocks: int = 5
    victims: tuple[int, ...] = (1, 2, 3)
    touched: tuple[int, ...] = (3, 0)
    """How many of the first keys are touched into T2 before the pins (three, so that
    T2 too gets records back out of order: a heap of its own)."""
    failed_first: tuple[bool, ...] = (False, True)

    def describe(self) -> str:
        return (
            f"ARC, {self.blocks} blocks: every order of {self.blocks - 1} idle records "
            f"coming back x every protected key x {'/'.join(map(str, self.victims))} "
            f"victims x {'/'.join(map(str, self.touched))} keys in T2 x "
            f"{_failed_text(self.failed_first)} failed "
            f"eviction first ({self.count()} call sequences)"
        )

    def count(self) -> int:
        n = self.blocks
        orders = n * len(list(itertools.permutations(range(n - 1))))
        return orders * n * len(self.victims) * len(self.touched) * len(self.failed_first)


def _failed_text(failed_first: tuple[bool, ...]) -> str:
    """How the family's sequences start their evictions, in words."""
    if len(set(failed_first)) > 1:
        return "with and without a"
    return "a" if failed_first[0] else "no"


def _k(i: int) -> bytes:
    return f"k{i}".encode()


def scenarios(shape: Shape) -> Iterator[list[Action]]:
    """Every call sequence of the family (see the module docstring)."""
    n = shape.blocks
    keys = [_k(i) for i in range(n)]
    for touched in shape.touched:
        for held in reversed(range(n)):  # T1's keys first: the others fill both lists' heaps
            idle = [i for i in range(n) if i != held]
            for order in itertools.permutations(idle):
                for protected in range(n):
                    for victims in shape.victims:
                        for failed in shape.failed_first:
                            yield _sequence(keys, touched, held, order, protected, victims, failed)


def _sequence(
    keys: Sequence[bytes],
    touched: int,
    held: int,
    order: Sequence[int],
    protected: int,
    victims: int,
    failed: bool,
) -> list[Action]:
    n = len(keys)
    fresh = [_k(n + i) for i in range(n + 1)]
    acts: list[Action] = [Start(n, False, False)]
    acts.append(Step(Call.keys("prepare_store", keys)))
    acts.append(Step(Call.keys("complete_store", keys)))
    if touched:
        acts.append(Step(Call.keys("touch", keys[:touched])))
    acts.append(Step(Call.keys("prepare_load", keys)))
    for i in order:
        acts.append(Step(Call.keys("complete_load", [keys[i]])))
    if failed:  # two idle keys protected, one victim more than the rest: refused
        guard = [keys[i] for i in order[:2]]
        acts.append(Step(Call.keys("prepare_store", [*guard, *fresh[: len(order) - 1]])))
    acts.append(Step(Call.keys("prepare_store", [keys[protected], *fresh[:victims]])))
    acts.append(Step(Call.keys("complete_store", fresh[:victims])))
    acts.append(Step(Call.keys("complete_load", [keys[held]])))
    acts.append(Step(Call.keys("prepare_store", fresh[victims : victims + 2])))
    return acts


@dataclass(frozen=True)
class Orders:
    """The outcome of replaying a family of call sequences (`replay_all`): how many
    sequences and calls were replayed, and the first failure (None: every sequence
    agreed)."""

    sequences: int
    calls: int
    failure: ConformanceFailure | None

    def line(self) -> str:
        return f"{self.sequences} call sequences, {self.calls} calls, every call compared"


def replay_all(
    sequences: Iterable[list[Action]],
    factory: Factory,
    contract: Contract = DEFAULT,
    observer: StepObserver | None = None,
) -> Orders:
    """Replay each sequence against `factory`'s ARC managers in lock-step with the
    model; stop at the first failure. `observer` also judges every call of both
    sides."""
    count = calls = 0
    for actions in sequences:
        count += 1
        calls += len(actions) - 1
        failure = replay(factory, "arc", None, PLAN, actions, contract, observer)
        if failure is not None:
            return Orders(count, calls, failure)
    return Orders(count, calls, None)


def run(
    shape: Shape,
    factory: Factory,
    contract: Contract = DEFAULT,
    observer: StepObserver | None = None,
) -> Orders:
    """Replay every sequence of `shape` against `factory`'s ARC managers; stop at the
    first failure. `observer` also judges every call of both sides (the proved
    relation's refinement, `refine.conformance.RefinementObserver`)."""
    return replay_all(scenarios(shape), factory, contract, observer)

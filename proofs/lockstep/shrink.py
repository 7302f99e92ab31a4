"""Shrinking a failing conformance run to a short trace, by replay.

Hypothesis finds a divergence; this module makes its trace short. It replays
candidate action sequences through a fresh `LockStep` (no Hypothesis involved, so a
replay costs microseconds per step) and keeps any candidate that still diverges:
drop chunks of actions (halving the chunk size down to single actions), fold a
call into an earlier one of the same method (its keys appended), simplify the
set-up (fewer blocks, events off, no fault policy), and drop keys from key lists,
until nothing more can be removed or the replay budget is spent (a count of
replays, so the trace reported is the same on a busy machine as on an idle one). A
failure
that is a hanging call is shrunk under the short per-step bound of a guard session
(`base.guard`), so each replay that still hangs costs a fraction of a second.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from evictable.proofs.base.guard import guard_session
from evictable.proofs.lockstep.inputs import Call
from evictable.proofs.lockstep.manager import Action, ConformanceFailure, Fault, Start, Step

__all__ = ["REPLAYS", "shrink"]

Probe = Callable[[Sequence[Action]], ConformanceFailure | None]


def _smaller_starts(start: Start) -> list[Start]:
    out = [replace(start, num_blocks=n) for n in range(start.num_blocks)]
    if start.events:
        out.append(replace(start, events=False))
    if start.faulty:
        out.append(replace(start, faulty=False))
    return out


def _fewer_keys(action: Action) -> list[Action]:
    if not isinstance(action, Step | Fault):
        return []
    out: list[Action] = []
    for i in range(len(action.call.key_list or ())):
        smaller = action.call.without_key(i)
        if smaller is not None:
            out.append(replace(action, call=smaller))
    return out


def _merged(first: Action, later: Action) -> Action | None:
    """`first` with `later`'s keys appended, when both are key calls of one method."""
    if not isinstance(first, Step) or type(later) is not Step:
        return None
    a, b = first.call, later.call
    if a.key_list is None or b.key_list is None or (a.method, a.options) != (b.method, b.options):
        return None
    keys = list(dict.fromkeys([*a.key_list, *b.key_list]))
    return Step(Call.keys(a.method, keys, **dict(a.options)))


REPLAYS = 2000
"""The default replay budget of one shrink (most shrinks end far below it)."""


class _Shrinker:
    def __init__(self, probe: Probe, failure: ConformanceFailure, budget: int) -> None:
        self.probe = probe
        self.best = failure
        self.budget = budget
        self.replays = 0

    @property
    def actions(self) -> list[Action]:
        return list(self.best.actions)

    def _try(self, candidate: Sequence[Action]) -> bool:
        if self.replays >= self.budget:
            return False
        self.replays += 1
        failure = self.probe(candidate)
        if failure is None:
            return False
        self.best = failure  # its actions end at the failing step
        return True

    def drop_chunks(self) -> bool:
        improved = False
        chunk = max(1, (len(self.best.actions) - 1) // 2)
        while chunk >= 1:
            i = 1  # the Start action stays
            while i < len(self.best.actions):
                acts = self.actions
                if self._try(acts[:i] + acts[i + chunk :]):
                    improved = True
                else:
                    i += chunk
            chunk //= 2
        return improved

    def simplify_each(self, variants: Callable[[Action], list[Action]]) -> bool:
        improved = False
        i = 0
        while i < len(self.best.actions):
            for variant in variants(self.best.actions[i]):
                acts = self.actions
                if self._try([*acts[:i], variant, *acts[i + 1 :]]):
                    improved = True
                    break
            else:
                i += 1
        return improved

    def merge_calls(self) -> bool:
        """Fold a later call into an earlier one of the same method and options (its
        keys appended, repeats dropped): one call fewer when the failure survives."""
        improved = False
        i = 1
        while i < len(self.best.actions):
            merged = False
            for j in range(i + 1, len(self.best.actions)):
                acts = self.actions
                candidate = _merged(acts[i], acts[j])
                if candidate is not None and self._try(
                    [*acts[:i], candidate, *acts[i + 1 : j], *acts[j + 1 :]]
                ):
                    improved = merged = True
                    break
            if not merged:
                i += 1
        return improved

    def run(self) -> ConformanceFailure:
        while self.replays < self.budget:
            changed = self.drop_chunks()
            changed |= self.merge_calls()
            changed |= self.simplify_each(
                lambda a: list(_smaller_starts(a)) if isinstance(a, Start) else []
            )
            changed |= self.simplify_each(_fewer_keys)
            if not changed:
                break
        return self.best


def shrink(
    probe: Probe, failure: ConformanceFailure, replays: int = REPLAYS
) -> tuple[ConformanceFailure, int]:
    """The shortest failure found from `failure` by at most `replays` replays, and how
    many it took.

    `probe(actions)` replays actions and returns the failure they provoke (or None).
    If the original actions do not fail again on replay (a nondeterministic
    implementation), `failure` is returned unchanged.
    """
    # One guard session for every replay: once a replay hangs (the failure is a call
    # that does not return), later replays wait only the short bound for it.
    with guard_session():
        again = probe(failure.actions)
        if again is None:
            return failure, 1
        shrinker = _Shrinker(probe, again, replays)
        return shrinker.run(), shrinker.replays + 1

"""A subject of the search engine built by replay: any model/implementation pair.

Some worlds cannot be copied: a live `iter_blocks_after` iterator is a generator,
and its implementation's hidden state (the iteration epoch) is exactly what is
checked. A `ReplaySubject` therefore hands the engine each state as the path of
actions that reaches it, rebuilds the state by replaying the path on a fresh
world (model and implementation side by side), checks it, and makes every action
of its alphabet on a rebuilt world, comparing both sides through the one
comparator (`base.compare.judge`, in the world's `apply`).

An action that changes nothing (an error, a query) leaves the working world in use
for the next action, so a state costs one replay per state-changing edge; when the
subject has a `probe` (an action that looks at hidden state, such as one step of a
live iterator), it is made right after each such action instead. A
failure met on a reused world is first tried on a fresh one; if only the reused
world fails (an earlier no-op call left hidden damage, such as a failed call that
killed a live iterator), the trace includes the calls made before it.

A concrete subject defines `fresh()`, `actions(world)`, `apply(world, action)`,
`key(world)` and `check(world)`; labels (actions) must be hashable and picklable
(forked workers send them back).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from typing import Generic, TypeVar

from evictable.proofs.explore.engine import Expansion, Found

__all__ = ["ReplaySubject"]

W = TypeVar("W")
A = TypeVar("A", bound=Hashable)

Path = tuple[A, ...]


class ReplaySubject(ABC, Generic[W, A]):
    """States as paths of actions; see the module doc."""

    def __init__(self) -> None:
        self.seen: set[Hashable] = set()
        self.in_flight: A | None = None
        """The action being made (None between actions): the edge the engine reports
        when one hangs."""

    # ------------------------------------------------------------ to define

    @abstractmethod
    def fresh(self) -> W:
        """A new world in its initial state (model and implementation)."""

    @abstractmethod
    def actions(self, world: W) -> Sequence[A]:
        """The actions to try in `world` (valid and invalid calls alike)."""

    @abstractmethod
    def apply(self, world: W, action: A) -> str | None:
        """Make `action` on both sides of `world`; why they disagree, or None."""

    @abstractmethod
    def key(self, world: W) -> Hashable:
        """The state of `world` as far as its future depends on it (from the model)."""

    @abstractmethod
    def check(self, world: W) -> str | None:
        """Why the state of `world` is wrong (invariants, snapshots), or None."""

    # ------------------------------------------------------------ the engine's side

    def replay(self, path: Sequence[A]) -> tuple[W, str | None]:
        """A fresh world moved along `path` (`quiet` while replaying: each call of the
        path was judged when its edge was first made); then judging again."""
        world = self.fresh()
        self.quiet(world, True)
        try:
            for action in path:
                why = self.apply(world, action)
                if why is not None:
                    return world, f"replaying the path: {why}"
        finally:
            self.quiet(world, False)
        return world, None

    def quiet(self, world: W, on: bool) -> None:
        """Switch judging off (`on`) or back on for a replay. Default: always judge."""

    def probe(self, world: W) -> A | None:
        """An action that looks at hidden state (a step of a live iterator), made after
        every action that changed nothing observable; None: no probe (the default)."""
        return None

    def root(self) -> tuple[Hashable, Path[A]]:
        return self.key(self.fresh()), ()

    def expand(self, path: Path[A]) -> Expansion[Path[A], A]:
        """Check the state reached by `path` and every action out of it."""
        self.in_flight = None  # left set when an edge hangs: the engine reports it
        out = self._expand(path)
        self.in_flight = None
        return out

    def _expand(self, path: Path[A]) -> Expansion[Path[A], A]:
        out: Expansion[Path[A], A] = Expansion()
        world, why = self.replay(path)
        if why is None:
            why = self.check(world)
        if why is not None:
            out.found = Found(why)
            return out
        here = self.key(world)
        work: W | None = world
        hist: list[A] = []
        for action in self.actions(world):
            if work is None:
                work, _ = self.replay(path)
                hist = []
            self.in_flight = action
            why = self.apply(work, action)
            after = self.key(work)
            if why is None and after != here:
                why = self.check(work)
            self.in_flight = None
            out.edges += 1
            if why is not None:
                out.found = self._blame(path, hist, action, why)
                return out
            if after == here:
                probe = self.probe(work)
                if probe is None:
                    hist.append(action)  # nothing changed: the world serves the next action
                    continue
                # Nothing observable changed, but hidden state might have (a failed
                # call that killed a live iterator): look through the probe.
                self.in_flight = probe
                why = self.apply(work, probe)
                self.in_flight = None
                if why is not None:
                    out.found = Found(why, probe, (*path, *hist, action))
                    return out
                work = None
                continue
            work = None
            if after not in self.seen:  # this process's own filter: less to send back
                self.seen.add(after)
                out.successors.append((after, (*path, action), action))
        return out

    def _blame(self, path: Path[A], hist: list[A], action: A, why: str) -> Found[A]:
        """The failure of `action`, on the state itself if it fails there afresh, else
        after the no-op actions the working world had seen."""
        if not hist:
            return Found(why, action)
        world, failed = self.replay(path)
        if failed is None:
            again = self.apply(world, action) or self.check(world)
            if again is not None:
                return Found(again, action)
        return Found(why, action, (*path, *hist))

"""Any lazy offload scanner over any block pool, under a contract, searched breadth-first.

`check_lazy(scanner_factory, pool_factory, contract, bounds)` explores every state
reachable within `explore.lazy.Bounds` -- pool operations (allocate, prefix-hit
touch, free, cache a block in use, reset the prefix cache) and scanner operations
(step with a capacity, complete, abort) -- with the model pool
(`model.block_pool.ModelBlockPool`) and a model scanner beside the implementation's
pool and scanner, and checks in every state:

* every call: the same result (block ids) and the same error under the error
  contract, nothing changed on an error, equal pool states (the safety contract
  leaves out this project's link generations; a black box is seen through
  `get_all_free_blocks`, the blocks' `ref_cnt` and `get_cached_block`);
* the scanner's choices: exact -- what `ModelLazyOffload` (generation-checked
  cursor) selects; safety -- any selection of distinct free, hashed, not yet
  offloaded blocks within the step's capacity, which the model then follows
  (`FollowingScanner`: the blocks are pinned and in flight on both sides);
* **scan completeness, observed** (`drain`): from every state, with no pool change
  and room on the CPU, `model.lazy_offload.no_stall_bound` steps must select every
  block that needs offloading and sits in the free queue. A scanner whose cursor
  skipped such a block, or stalled, leaves it unselected: a `scan completeness`
  finding with the shortest trace that leads there.

The search runs in rounds, masking the classes already found (as the manager's
explorer, `check.manager`). Traces print as runnable snippets that build the pool
and scanner with their own factories.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evictable.model.block_pool import ModelBlockPool, check_pool_snapshot
from evictable.model.lazy_offload import ModelLazyOffload, Validation, needs_offload, no_stall_bound
from evictable.model.types import BlockId
from evictable.proofs.base.compare import Kind, Mismatch, Reply, describe, invoke, judge
from evictable.proofs.base.contract import Contract
from evictable.proofs.base.findings import Finding, factory_source
from evictable.proofs.base.gpu_contract import project
from evictable.proofs.explore.engine import Expansion, Found, search
from evictable.proofs.explore.lazy import Action, Bounds, action_code, actions, apply, apply_impl

__all__ = ["Capacity", "FollowingScanner", "LazyCheck", "check_lazy"]

PoolFactory = Callable[[int], Any]
ScannerFactory = Callable[[Any, int, Callable[[], int]], Any]

DRAIN = "drain"


class Capacity(list[int]):
    """The CPU room a scanner's `capacity()` reports: `capacity[0]`, settable by the
    harness before each step (a picklable box)."""

    def __call__(self) -> int:
        return self[0]


class FollowingScanner(ModelLazyOffload):
    """The model scanner under the safety contract: it takes the implementation's
    selection when that is legal (`follow`), instead of choosing its own."""

    def follow(self, selected: Sequence[int], capacity: int) -> str | None:
        """Pin `selected` and put it in flight; why it is not a legal selection, if not
        (then nothing changes)."""
        queue = self.pool.free_queue
        if len(set(selected)) != len(selected):
            return f"selected the same block twice: {list(selected)}"
        if len(selected) > capacity:
            return f"selected {len(selected)} blocks with room for {capacity} on the CPU"
        for b in selected:
            bid = BlockId(b)
            if bid not in queue.order:
                return f"selected block {b}, which is not in the free queue"
            h = self.pool.block_hash.get(bid)
            if not needs_offload(h, self.offloaded):
                what = "has no hash" if h is None else f"has hash {h!r}, already offloaded"
                return f"selected block {b}, which {what}"
        ids = [BlockId(b) for b in selected]
        self.pool.touch(ids)
        for b in ids:
            self.in_flight[b] = self.pool.block_hash[b]
        return None


@dataclass
class World:
    """Both sides of one state."""

    model: ModelLazyOffload
    pool: Any
    scanner: Any
    capacity: Capacity


@dataclass(frozen=True)
class LazyCheck:
    """The outcome of `check_lazy`: the findings (one per class) and each round's figures."""

    contract: Contract
    bounds: Bounds
    findings: tuple[Finding, ...]
    rounds: tuple[str, ...]
    complete: bool
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.findings and self.complete


@dataclass
class _Subject:
    scanner_factory: ScannerFactory
    pool_factory: PoolFactory
    contract: Contract
    bounds: Bounds
    masked: frozenset[Kind] = frozenset()
    picklable: dict[str, bool] = field(default_factory=dict)

    # ------------------------------------------------------------ worlds

    def fresh(self) -> World:
        b = self.bounds
        cls = FollowingScanner if self.contract.safety else ModelLazyOffload
        model = cls(ModelBlockPool(b.num_blocks + 1), b.window, Validation.GENERATION)
        capacity = Capacity([0])
        pool = self.pool_factory(b.num_blocks + 1)
        return World(model, pool, self.scanner_factory(pool, b.window, capacity), capacity)

    def replay(self, path: Sequence[Action]) -> World:
        world = self.fresh()
        for a in path:
            self.edge(world, a)
        return world

    def clone(self, world: World, path: Sequence[Action]) -> Callable[[], World]:
        if self.picklable.get("world", True):
            try:
                blob = pickle.dumps(world, pickle.HIGHEST_PROTOCOL)
                self.picklable["world"] = True
                return lambda: pickle.loads(blob)
            except Exception:
                self.picklable["world"] = False
        return lambda: self.replay(path)

    # ------------------------------------------------------------ observing

    def views(self, world: World) -> tuple[Any, Any]:
        model, pool, scanner = world.model, world.pool, world.scanner
        if self.contract.black_box:
            hashes = self.bounds.hashes
            mp = model.pool
            m = (
                tuple(mp.free_queue.get_all_free_blocks()),
                tuple(mp.ref_cnt(BlockId(b)) for b in range(1, mp.num_blocks)),
                tuple(mp.get_cached_block(h) for h in hashes),
            )
            cached = [pool.get_cached_block(h) for h in hashes]
            i = (
                tuple(blk.block_id for blk in pool.free_block_queue.get_all_free_blocks()),
                tuple(pool.blocks[b].ref_cnt for b in range(1, mp.num_blocks)),
                tuple(None if c is None else c.block_id for c in cached),
            )
            return m, i
        if self.contract.safety:
            return (
                (project(model.pool.snapshot()), tuple(sorted(model.in_flight))),
                (
                    project(pool.snapshot()),
                    tuple(sorted(b for b, _ in scanner.snapshot().in_flight)),
                ),
            )
        return (model.pool.snapshot(), model.snapshot()), (pool.snapshot(), scanner.snapshot())

    def key(self, world: World) -> Hashable:
        m = world.model
        base = (
            project(m.pool.snapshot()),
            tuple(sorted(m.in_flight.items(), key=repr)),
            tuple(sorted(m.offloaded, key=repr)),
        )
        if self.contract.black_box:
            return base
        if self.contract.safety:
            return (base, _scanner_key(world.pool.snapshot(), world.scanner.snapshot()))
        from evictable.proofs.explore.lazy import key

        return key(m)

    # ------------------------------------------------------------ one call

    def edge(self, world: World, a: Action) -> tuple[Mismatch | None, str]:
        """Make `a` on both sides and judge it: (finding, the note for the trace);
        a call the model refuses under a contract without invalid calls is skipped."""
        m_pre, i_pre = self.views(world)
        if a.op == "step":
            world.capacity[0] = int(a.args[0])  # type: ignore[call-overload]
        if a.op == "step" and isinstance(world.model, FollowingScanner):
            ri = invoke(apply_impl, world.pool, world.scanner, a, world.capacity)
            if ri.raised:
                return Mismatch(Kind.REJECTED_GOOD_CALL, f"{a}: impl {describe(ri)}"), ""
            why = world.model.follow(ri.value, int(a.args[0]))  # type: ignore[call-overload]
            if why is not None:
                return Mismatch(Kind.RESULT, f"{a}: {why}"), f"-> selects {ri.value}"
            rm = Reply(False, ri.value)
        else:
            rm = invoke(apply, world.model, a)
            if rm.raised and not self.contract.inputs.invalid:
                return None, "skip"
            ri = invoke(apply_impl, world.pool, world.scanner, a, world.capacity)
        m_post, i_post = self.views(world)
        note = _note(a, rm, ri)
        found = judge(rm, ri, m_pre, i_pre, m_post, i_post, errors=self.contract.errors)
        if found is not None:
            return Mismatch(found.kind, f"{a}: {found.reason}"), note
        bad = check_pool_snapshot(world.model.pool.snapshot())
        if bad:
            return Mismatch(Kind.MODEL_BUG, f"{a}: model pool invariants {bad}"), note
        return None, note

    def drain(self, world: World) -> tuple[Mismatch | None, list[tuple[str, str]]]:
        """Scan completeness, observed (see the module docstring): the steps made and
        why they fail it (None: they do not)."""
        model = world.model
        queue = model.pool.free_queue
        pending = [
            b for b in queue.order if needs_offload(model.pool.block_hash.get(b), model.offloaded)
        ]
        if not pending:
            return None, []
        k = no_stall_bound(len(queue.order), model.window)
        room = model.pool.num_blocks
        lines: list[tuple[str, str]] = []
        selected: set[int] = set()
        for _ in range(k):
            step = Action("step", (room,))
            found, note = self.edge(world, step)
            lines.append((action_code(step), note))
            if found is not None:
                return found, lines
            selected |= {b for b in world.model.in_flight}
        missed = [int(b) for b in pending if b not in selected]
        if not missed:
            return None, lines
        hashes = {b: model.pool.block_hash.get(BlockId(b)) for b in missed}
        return (
            Mismatch(
                Kind.SCAN,
                f"scan completeness: block(s) {missed} (hash {list(hashes.values())}, not "
                f"offloaded) stayed in the free queue through {k} steps with room on the CPU "
                "and no pool change, and were never selected (the cursor skipped them or "
                "the walk stalled)",
            ),
            lines,
        )

    # ------------------------------------------------------------ the search

    def root(self) -> tuple[Hashable, tuple[tuple[Action, ...], Callable[[], World] | None]]:
        world = self.fresh()
        return self.key(world), ((), self.clone(world, ()))

    def alphabet(self, world: World) -> list[Action]:
        out = []
        for a in actions(world.model, self.bounds):
            if a.op == "reset" or (a.op == "queue_unlink" and not self.contract.exact):
                continue
            out.append(a)
        return out

    def expand(
        self, payload: tuple[tuple[Action, ...], Callable[[], World] | None]
    ) -> Expansion[Any, Action]:
        path, make = payload
        out: Expansion[Any, Action] = Expansion()
        world = make() if make is not None else self.replay(path)
        found, _ = self.drain(make() if make is not None else self.replay(path))
        if found is not None and found.kind not in self.masked:
            out.found = Found(found.reason, Action(DRAIN))
            return out
        for a in self.alphabet(world):
            w = make() if make is not None else self.replay(path)
            bad, note = self.edge(w, a)
            out.edges += 1
            if bad is not None:
                if bad.kind in self.masked:
                    continue
                out.found = Found(bad.reason, a)
                return out
            if note == "skip":
                continue
            out.successors.append((self.key(w), ((*path, a), self.clone(w, (*path, a))), a))
        return out

    # ------------------------------------------------------------ rendering

    def kind_of(self, path: Sequence[Action], last: Action | None) -> Kind:
        world = self.replay(path)
        if last is None:
            return Kind.STATE
        if last.op == DRAIN:
            found, _ = self.drain(world)
        else:
            found, _ = self.edge(world, last)
        return found.kind if found is not None else Kind.STATE

    def snippet(self, path: Sequence[Action], last: Action | None, reason: str) -> str:
        pool_imp, pool_name = factory_source(self.pool_factory)
        scan_imp, scan_name = factory_source(self.scanner_factory)
        b = self.bounds
        lines = [
            *dict.fromkeys([pool_imp, scan_imp]),
            "from evictable.proofs.explore.lazy_contract import Capacity",
            "capacity = Capacity([0])",
            f"pool = {pool_name}({b.num_blocks + 1})",
            f"scanner = {scan_name}(pool, {b.window}, capacity)",
        ]
        world = self.fresh()
        for a in path:
            _, note = self.edge(world, a)
            lines.append(f"{action_code(a)}  # {note}" if note else action_code(a))
        if last is not None and last.op == DRAIN:
            _, steps = self.drain(world)
            lines.append(f"# then {len(steps)} steps, no pool change, room for every block:")
            lines += [f"{code}  # {note}" for code, note in steps]
        elif last is not None:
            _, note = self.edge(world, last)
            lines.append(f"{action_code(last)}  # {note}")
        lines.append(f"# {reason}")
        return "\n".join(lines)


def _scanner_key(pool: Any, scan: Any) -> Hashable:
    """A scanner snapshot with its cursor's link generation replaced by whether it is
    still the cursor block's current link (generations only grow; that is all the
    future depends on)."""
    cursor = scan.cursor
    if cursor is not None:
        order, stamps = pool.free_queue.order, pool.free_queue.stamps
        current = cursor[0] in order and stamps[order.index(cursor[0])] == cursor[1]
        cursor = (cursor[0], current)
    return (cursor, scan.in_flight, scan.offloaded)


def _note(a: Action, rm: Reply, ri: Reply) -> str:
    if rm.raised or ri.raised or rm.value != ri.value:
        return f"model {describe(rm)}; impl {describe(ri)}"
    if ri.value is None:
        return ""
    return f"-> selects {ri.value}" if a.op == "step" else f"-> {ri.value}"


def check_lazy(
    scanner_factory: ScannerFactory,
    pool_factory: PoolFactory,
    contract: Contract,
    bounds: Bounds | None = None,
    rounds: int = 6,
) -> LazyCheck:
    """The breadth-first search of the module docstring, in rounds; see `LazyCheck`."""
    import time

    b = bounds if bounds is not None else Bounds()
    masked: set[Kind] = set()
    findings: list[Finding] = []
    figures: list[str] = []
    complete = True
    start = time.perf_counter()
    for _ in range(rounds):
        subject = _Subject(scanner_factory, pool_factory, contract, b, frozenset(masked))
        run = search(subject, max_states=b.max_states)
        figures.append(
            f"{run.states} states, {run.transitions} transitions, depth {run.depth}, "
            f"{run.seconds:.2f}s" + ("" if run.complete else " (INCOMPLETE)")
        )
        complete = complete and (run.complete or run.found is not None)
        found = run.found
        if found is None:
            break
        labels = run.path[:-1] if found.last is not None else run.path
        kind = subject.kind_of(labels, found.last)
        if kind in masked:
            break
        masked.add(kind)
        text = subject.snippet(labels, found.last, found.reason)
        calls = len(labels) + (found.last is not None)
        findings.append(Finding(kind, "lazy search", found.reason, text, text, calls))
    return LazyCheck(
        contract, b, tuple(findings), tuple(figures), complete, time.perf_counter() - start
    )

"""`lazy.*`: scan completeness and no stall of the lazy offload cursor, explored and
checked in Z3, with the ref-count-only validation vLLM uses as the control.
"""

from __future__ import annotations

from collections.abc import Callable

from evictable.impl.lazy_offload import LazyOffloadScanner
from evictable.model.lazy_offload import ModelLazyOffload, StartKind, Validation
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation, Outcome, Status, proved, refuted
from evictable.proofs.controls.scanners import SEEDED_SCANNERS
from evictable.proofs.explore.lazy import (
    Bounds,
    Check,
    invariants_check,
    no_stall_check,
)
from evictable.proofs.explore.lazy_cursor import BOUNDS, search_all
from evictable.proofs.explore.lazy_impl import lockstep_search
from evictable.proofs.obligations import z3_lazy

UNLINK_BOUNDS: dict[str, tuple[Bounds, ...]] = {
    "quick": BOUNDS["quick"],
    "default": (
        *BOUNDS["quick"],
        Bounds(num_blocks=3, window=1, hashes=("a",), max_ref=1, capacities=(0, 1)),
    ),
    "thorough": BOUNDS["default"],
}
"""Smaller bounds for the searches with a queue-level unlink (its states multiply)."""


def _unlinked_ref0(m: ModelLazyOffload) -> str | None:
    """The literal stall condition: the cursor block is unlinked with ref_cnt 0."""
    if m.start().kind is StartKind.NOWHERE:
        return "cursor block unlinked with ref_cnt 0: the walk yields nothing"
    return None


def _literal_stall(m: ModelLazyOffload) -> str | None:
    """A stall whose cause is a cursor block unlinked with ref_cnt 0."""
    if _unlinked_ref0(m) is None:
        return None
    return no_stall_check(m)


def _prove(
    bounds: tuple[Bounds, ...], validation: Validation, check: Check, unlink: bool = False
) -> Callable[[float], Outcome]:
    """The claim: no reachable state fails `check` (a truncated search proves nothing)."""

    def run(_backstop_s: float) -> Outcome:
        s = search_all(bounds, validation, check, unlink)
        if s.violation is not None:
            return refuted("\n".join(s.trace))
        if s.truncated:
            return Outcome(Status.UNKNOWN, f"state bound reached: {s.figures()}")
        return proved(s.figures())

    return run


def _refute(
    bounds: tuple[Bounds, ...], validation: Validation, check: Check, unlink: bool = False
) -> Callable[[float], Outcome]:
    """A negative control: the search must find a violation (reported as its trace)."""

    def run(_backstop_s: float) -> Outcome:
        s = search_all(bounds, validation, check, unlink)
        if s.violation is None:
            return proved()
        return refuted("\n".join([f"{validation.value} validation: {s.figures()}", *s.trace]))

    return run


def _lockstep(level: Level, cls: type[LazyOffloadScanner]) -> Callable[[float], Outcome]:
    """Every bound of the level, the implementation judged on every edge."""

    def run(_backstop_s: float) -> Outcome:
        states = transitions = 0
        for bounds in BOUNDS[level]:
            s = lockstep_search(bounds, cls)
            states, transitions = states + s.states, transitions + s.transitions
            if s.found is not None:
                trace = [f"{i:>3}. {a}" for i, a in enumerate(s.path, 1)]
                return refuted("\n".join([f"bounds: {bounds}", s.found.reason, *trace]))
            if not s.complete:
                return Outcome(Status.UNKNOWN, f"state bound reached: {s.states} states")
        return proved(f"{states} states, {transitions} transitions (every edge judged)")

    return run


def _every_scanner(level: Level) -> Callable[[float], Outcome]:
    """Refuted only when every seeded broken scanner diverges somewhere."""

    def run(backstop_s: float) -> Outcome:
        caught = []
        for name, cls in SEEDED_SCANNERS.items():
            out = _lockstep(level, cls)(backstop_s)
            if out.status is not Status.COUNTEREXAMPLE:
                return proved(f"{name} was not caught")
            caught.append(f"{name}: {out.counterexample.splitlines()[1]}")
        return refuted("\n".join(caught))

    return run


def _describe(bounds: tuple[Bounds, ...]) -> str:
    """The searched bounds, one `blocks/window/hashes/max_ref/capacities` item each."""
    return "; ".join(
        f"{b.num_blocks} blocks, window {b.window}, hashes {len(b.hashes)}, max_ref "
        f"{b.max_ref}, capacities {list(b.capacities)}"
        for b in bounds
    )


def obligations(level: Level) -> list[Obligation]:
    bounds, ubounds = BOUNDS[level], UNLINK_BOUNDS[level]
    gen, ref = Validation.GENERATION, Validation.REFCOUNT
    every = invariants_check(None, pool_too=True)
    complete_only = invariants_check(("scan_complete",), pool_too=False)
    return [
        Obligation(
            name="lazy.scan_complete",
            statement="generation-validated cursor: every reachable state satisfies scan "
            "completeness and every scanner and pool invariant",
            check=_prove(bounds, gen, every),
            negative=_refute(bounds, ref, complete_only),
            negative_statement="ref-count-only validation skips blocks (cursor block taken "
            "and freed again between steps)",
            tags=("lazy", "explore"),
            kind=Kind.EXPLORED,
            bounds=_describe(bounds),
        ),
        Obligation(
            name="lazy.impl_lockstep",
            statement="impl.LazyOffloadScanner over impl.BlockPool matches the model on every "
            "edge of the exhaustive search (results, errors, all-or-nothing, snapshots, "
            "invariants)",
            check=_lockstep(level, LazyOffloadScanner),
            negative=_every_scanner(level),
            negative_statement=f"each of {len(SEEDED_SCANNERS)} seeded broken scanners "
            "diverges from the model (among them vLLM's ref_cnt-only cursor rule)",
            tags=("lazy", "explore", "impl"),
            kind=Kind.EXPLORED,
            bounds=_describe(bounds),
        ),
        Obligation(
            name="lazy.no_stall",
            statement="generation-validated cursor: from every reachable state, with no pool "
            "mutation, ceil(len/window)+1 steps visit every block needing offload",
            check=_prove(bounds, gen, no_stall_check),
            negative=_refute(bounds, ref, no_stall_check),
            negative_statement="ref-count-only validation strands the scan behind a cursor "
            "that jumped to the back",
            tags=("lazy", "explore"),
            kind=Kind.EXPLORED,
            bounds=_describe(bounds),
        ),
        Obligation(
            name="lazy.no_stall.queue_unlink",
            statement="generation-validated cursor: no stall even when blocks are unlinked "
            "from the free queue outside the pool API",
            check=_prove(ubounds, gen, no_stall_check, unlink=True),
            negative=_refute(ubounds, ref, _literal_stall, unlink=True),
            negative_statement="ref-count-only validation stalls for good once the cursor "
            "block is unlinked with ref_cnt 0",
            tags=("lazy", "explore"),
            kind=Kind.EXPLORED,
            bounds=_describe(ubounds) + " (with queue-level unlinks)",
        ),
        Obligation(
            name="lazy.refcount.unlink_changes_ref",
            statement="through the pool API no reachable state has the cursor block unlinked "
            "with ref_cnt 0 (the literal stall needs a queue-level unlink)",
            check=_prove(ubounds, ref, _unlinked_ref0),
            negative=_refute(ubounds, ref, _unlinked_ref0, unlink=True),
            negative_statement="with a queue-level unlink the cursor block is unlinked with "
            "ref_cnt 0",
            tags=("lazy", "explore"),
            kind=Kind.EXPLORED,
            bounds=_describe(ubounds),
        ),
        *z3_lazy.obligations(level),
    ]

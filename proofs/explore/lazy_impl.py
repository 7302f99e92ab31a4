"""The lazy offload scanner's implementation, checked on every edge of the exhaustive search.

`LockstepSubject` is the lazy search (`explore.lazy`) with the implementation at its
side: every state carries the model (scanner and pool) and an implementation
(`impl.block_pool.BlockPool` under any scanner class) in the same state, and
every action enabled in the state -- the calls the pool or the scanner refuse
included -- is made on a copy of both and judged by the one comparator
(`base.compare.judge`): the same result, the same error (type and
attributes), nothing changed on an error, equal pool and scanner snapshots, and
the implementation's own `check_invariants()`. Copies are pickle round trips of
the state's implementation; a copy a refused call left unchanged serves the next
action. So every path into a state is
checked, not only the first one the breadth-first search found (a scanner whose
`abort` leaves hidden damage behind is caught on the abort edge itself, however
the state it leads to was first reached).
"""

from __future__ import annotations

import pickle
from collections.abc import Hashable
from typing import Any

from evictable.impl.block_pool import BlockPool
from evictable.impl.lazy_offload import LazyOffloadScanner
from evictable.model.lazy_offload import ModelLazyOffload, Validation
from evictable.proofs.base.compare import Reply, describe, invoke, judge
from evictable.proofs.explore.engine import Expansion, Found, Result, search
from evictable.proofs.explore.lazy import (
    Action,
    Bounds,
    Check,
    actions,
    apply,
    apply_impl,
    clone,
    initial,
    key,
)

__all__ = ["ImplSide", "LockstepSubject", "lockstep_search"]


class _Capacity:
    """The CPU capacity the scanner reads at every step (copied with the scanner)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def __call__(self) -> int:
        return self.value


class ImplSide:
    """An implementation pool and scanner, copied together (a pickle round trip)."""

    def __init__(self, bounds: Bounds, scanner_cls: type[LazyOffloadScanner]) -> None:
        self.pool = BlockPool(bounds.num_blocks + 1)
        self.capacity = _Capacity()
        self.scanner = scanner_cls(self.pool, bounds.window, self.capacity)

    def apply(self, a: Action) -> list[int] | None:
        if a.op == "step":
            self.capacity.value = int(a.args[0])  # type: ignore[call-overload]
        return apply_impl(self.pool, self.scanner, a)

    def observe(self) -> tuple[Any, Any]:
        return self.pool.snapshot(), self.scanner.snapshot()

    def check(self) -> Reply | None:
        """The first failing `check_invariants()` (scanner, then pool), or None."""
        for checker in (self.scanner.check_invariants, self.pool.check_invariants):
            got = invoke(checker)
            if got.raised:
                return got
        return None


Payload = tuple[ModelLazyOffload, ImplSide, tuple[Action, ...]]


class LockstepSubject:
    """Model and implementation scanners side by side, judged on every edge."""

    def __init__(
        self,
        bounds: Bounds,
        validation: Validation,
        scanner_cls: type[LazyOffloadScanner],
        check: Check | None = None,
    ) -> None:
        self.bounds, self.validation, self.scanner_cls = bounds, validation, scanner_cls
        self.check = check
        self.in_flight: Action | None = None

    def root(self) -> tuple[Hashable, Payload]:
        m = initial(self.bounds, self.validation)
        return key(m), (m, ImplSide(self.bounds, self.scanner_cls), ())

    def expand(self, payload: Payload) -> Expansion[Payload, Action]:
        self.in_flight = None  # left set when an edge hangs: the engine reports it
        out = self._expand(payload)
        self.in_flight = None
        return out

    def _expand(self, payload: Payload) -> Expansion[Payload, Action]:
        m, impl, path = payload
        out: Expansion[Payload, Action] = Expansion()
        reason = self.check(m) if self.check is not None else None
        if reason is not None:
            out.found = Found(reason)
            return out
        m_pre = (m.pool.snapshot(), m.snapshot())
        try:
            i_pre = impl.observe()
        except Exception as exc:
            out.found = Found(f"impl snapshot raised {type(exc).__name__}: {exc}")
            return out
        blob = pickle.dumps(impl, pickle.HIGHEST_PROTOCOL)
        spare: ImplSide | None = None  # a copy a refused call left as it was
        for a in actions(m, self.bounds):
            self.in_flight = a
            nm = clone(m)
            ni = spare if spare is not None else pickle.loads(blob)
            spare = None
            rm, ri = invoke(apply, nm, a), invoke(ni.apply, a)
            out.edges += 1
            try:
                i_post = ni.observe()
            except Exception as exc:
                out.found = Found(f"{a}: impl snapshot raised {type(exc).__name__}: {exc}", a)
                return out
            found = judge(rm, ri, m_pre, i_pre, (nm.pool.snapshot(), nm.snapshot()), i_post)
            if found is not None:
                out.found = Found(f"{a}: {found.reason}", a)
                return out
            bad = ni.check() if not rm.raised else None
            if bad is not None:
                out.found = Found(f"{a}: impl invariants broken: {describe(bad)}", a)
                return out
            if rm.raised:
                spare = ni  # judged unchanged: it serves the next action
            else:
                out.successors.append((key(nm), (nm, ni, (*path, a)), a))
        return out


def lockstep_search(
    bounds: Bounds,
    scanner_cls: type[LazyOffloadScanner] = LazyOffloadScanner,
    validation: Validation = Validation.GENERATION,
    deadline: float | None = None,
) -> Result[Action]:
    """Every state reachable within `bounds`, the implementation judged on every edge."""
    subject = LockstepSubject(bounds, validation, scanner_cls)
    return search(subject, max_states=bounds.max_states, deadline=deadline)

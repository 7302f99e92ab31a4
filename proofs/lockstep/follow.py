"""Following a soft divergence to the defect it leads to.

A counter that is off, or a block missing from (or left on) the evictable set, is
seldom the defect a user cares about: it is the first sign of one. A `prepare_load`
that leaves the loading block on its LRU shows first as `num_evictable` one too
high, and then -- if the run goes on -- as that block evicted while it loads. The
engines stop an example at its first divergence, so the finding would be filed as
*accounting*, and the same fault written to keep its counter from the ref counts
instead would be filed as *pinned block evicted*: its class would depend on how the
manager computes a counter. Following removes that dependence.

`follow(factory, policy, contract, finding)` takes a finding whose class is one of
`FOLLOWED` (accounting, an idle block not evictable, a different state) and whose
trace is a plain sequence of calls (`base.findings.Script`), and:

1. replays the trace under `contract.follow()`: the model's view is the truth, the
   implementation's choices are its own where the safety contract allows them, and
   the counters and the implementation's own invariants -- already found wrong --
   are not compared any more;
2. drives on from the state the trace reached with each of `probes(...)`, short
   call sequences that put the evictable set to work: a store that needs every idle
   block evicted, one that needs one block more than there is room for, the same
   after every load has ended or every store has been committed;
3. keeps the most severe finding any of them makes (the shortest among equals) if it
   is more severe than the finding followed, and reports it under its own class,
   with the first divergence as its `cause`; its snippet asserts the model's
   answer at both steps (`base.findings.checked_snippet`).

The probes are the same for every run (no randomness, no clock), so following
changes no verdict's dependence on load. `follow_all` follows every finding of a
check; a finding that leads nowhere more severe stays as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from evictable.model.lifecycle import CpuState
from evictable.model.types import Key, ManagerSnapshot
from evictable.proofs.base.compare import Kind
from evictable.proofs.base.contract import Contract
from evictable.proofs.base.faults import PLAN
from evictable.proofs.base.findings import (
    Cause,
    Finding,
    Script,
    checked_snippet,
    order,
    outranks,
)
from evictable.proofs.base.protocol import Factory
from evictable.proofs.lockstep.failures import Action, ConformanceFailure, Start, Step, script_of
from evictable.proofs.lockstep.inputs import KEYS, Call
from evictable.proofs.lockstep.manager import LockStep

__all__ = ["FOLLOWED", "follow", "follow_all", "probes"]

FOLLOWED: tuple[Kind, ...] = (Kind.ACCOUNTING, Kind.UNLISTED, Kind.STATE)
"""The classes a finding is followed from: what a manager's bookkeeping shows before
its behaviour does."""


def _call(method: str, args: Sequence[Any], kwargs: Sequence[tuple[str, Any]]) -> Call:
    if args and isinstance(args[0], list | tuple):
        return Call.keys(method, list(args[0]), **dict(kwargs))
    return Call.plain(method, *args)


def _actions(script: Script) -> list[Action]:
    return [
        Start(script.num_blocks, script.events, False),
        *(Step(_call(m, a, k)) for m, a, k in script.calls),
    ]


def _keys(script: Script) -> list[Key]:
    """The keys a script names, in order of first use."""
    out: dict[Key, None] = {}
    for _, args, _ in script.calls:
        first = args[0] if args else None
        for key in first if isinstance(first, list | tuple) else [first] if args else []:
            try:
                out.setdefault(key, None)
            except TypeError:
                continue
    return list(out)


def probes(snap: ManagerSnapshot, fresh: Sequence[Key]) -> list[list[Call]]:
    """The call sequences driven from the state `snap` (the model's), with keys from
    `fresh` for new blocks (see the module docstring)."""
    by_state: dict[CpuState, list[Key]] = {}
    refs: dict[Key, int] = {}
    for e in sorted(snap.blocks, key=lambda e: e.slot):
        by_state.setdefault(e.state, []).append(e.key)
        refs[e.key] = e.ref_cnt
    free = snap.num_blocks - len(snap.blocks)
    idle = len(by_state.get(CpuState.READY, []))
    loading = by_state.get(CpuState.LOADING, [])
    pending = by_state.get(CpuState.PENDING, [])

    def stores(room: int) -> list[list[Call]]:
        out = []
        for n in (room, room + 1):
            if 0 < n <= len(fresh):
                out.append([Call.keys("prepare_store", list(fresh[:n]))])
        return out

    out = stores(free + idle)
    if loading:
        ends = [
            Call.keys("complete_load", [k for k in loading if refs[k] > r])
            for r in range(max(refs[k] for k in loading))
        ]
        out += [ends + tail for tail in stores(free + idle + len(loading))]
    if pending:
        commit = [Call.keys("complete_store", pending, success=True)]
        out += [commit + tail for tail in stores(free + idle + len(pending))]
    return out


def _run(
    factory: Factory, policy: str, contract: Contract, actions: Sequence[Action], keys: list[Key]
) -> tuple[ConformanceFailure | None, LockStep]:
    lock = LockStep(factory, policy, None, PLAN, contract=contract)
    lock.keys = tuple(dict.fromkeys([*keys, *lock.keys]))
    try:
        for action in actions:
            lock.apply(action)
    except ConformanceFailure as failure:
        return failure, lock
    finally:
        PLAN.disarm()
    return None, lock


def follow(factory: Factory, policy: str, contract: Contract, finding: Finding) -> Finding | None:
    """The more severe finding `finding` leads to, or None (see the module docstring)."""
    script = finding.script
    if finding.kind not in FOLLOWED or script is None or not script.calls:
        return None
    following = contract.follow()
    keys = _keys(script)
    prefix = _actions(script)
    failure, lock = _run(factory, policy, following, prefix, keys)
    found: list[ConformanceFailure] = [failure] if failure is not None else []
    if failure is None and lock.m_snap is not None:
        used = set(keys)
        fresh = [k for k in contract.keys.pool(len(KEYS)) if k not in used]
        for tail in probes(lock.m_snap, fresh):
            got, _ = _run(factory, policy, following, [*prefix, *map(Step, tail)], keys)
            if got is not None:
                found.append(got)
    if not found:
        return None
    best = min(found, key=lambda f: (order(f.kind), f.calls))
    if not outranks(best.kind, finding.kind):
        return None
    n = len(script.calls)
    message = f"{best.reason} (first divergence, at call {n}: {finding.reason})"
    rows = [(line.code, line.note, line.raised) for line in best.lines]
    steps = [line.step() for line in best.lines]
    points = []
    if finding.steps and n < len(steps):
        first = finding.steps[-1]  # the first divergence, as the contract observed it
        steps[n] = first
        points.append((n, first, finding.kind, contract))
    return replace(
        finding,
        kind=best.kind,
        reason=best.reason,
        trace="\n".join(best.trace),
        snippet=checked_snippet(factory, following, rows, steps, best.kind, message, points),
        calls=best.calls,
        steps=tuple(steps),
        script=script_of(best.actions),
        cause=Cause(finding.kind, finding.reason, n),
    )


def follow_all(
    factory: Factory, policy: str, contract: Contract, findings: Sequence[Finding]
) -> tuple[list[Finding], list[tuple[Kind, Kind]]]:
    """Every finding followed (`follow`): the findings, each replaced by the more
    severe one it leads to where there is one, and (from, to) for each replaced."""
    out: list[Finding] = []
    moved: list[tuple[Kind, Kind]] = []
    for f in findings:
        got = follow(factory, policy, contract, f)
        if got is None:
            out.append(f)
        else:
            out.append(got)
            moved.append((f.kind, got.kind))
    return out, moved

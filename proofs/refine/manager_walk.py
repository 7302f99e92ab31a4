"""`refine.manager.<policy>`: the code's every explored call is a step of the proved relation.

One walk (`explore.coverage.edges`) over every reachable state of the model manager
within the bounds, the implementation stepped beside it; every call is judged three
ways, the first failure ends the walk with its shortest trace:

1. the **manager relation** `z3.manager_ops.relation` -- the one
   `manager.consecution.*` and `bmc.manager` prove their claims of -- admits what the
   model did and what the implementation did, and admits nothing else
   (`refine.manager.ManagerOracle`; docs/proofs.md, "Refinement"); for an LRU,
   composed with the LRU's hook relations (`z3.policy_lru`, proved by
   `policy.lru.*`) or ARC's (`z3.policy_arc`, `policy.arc.*`), so the victims and
   the policy's own state (the list's order; ARC's four lists in order, its idle
   view and its target) are the relation's too;
2. each key's step is a step of the table relation T (`bridges.judge_keys`: state,
   ref count, membership in the policy's evictable view), and a refusal names a
   pair T rejects;
3. the implementation's counters change as `counter_rules.counters_after` says
   and equal the counts (`bridges.judge_counters`).

A message names the side (model or implementation) and the field that left the
relation, so a drifted implementation, a drifted relation and a relation that admits
two outcomes each fail with the call that shows it.
"""

from __future__ import annotations

from dataclasses import dataclass

from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.protocol import Factory
from evictable.proofs.base.records import Outcome, Status, proved, refuted
from evictable.proofs.explore.coverage import Call, RecordingModel, edges
from evictable.proofs.refine.bridges import Oracle, judge_counters, judge_keys
from evictable.proofs.refine.manager import ManagerOracle, OracleCache
from evictable.proofs.z3.manager_ops import MANAGER, Variant
from evictable.proofs.z3.policy_arc import ARC_HOOKS, ArcHooks
from evictable.proofs.z3.policy_lru import LRU_HOOKS, LruHooks

__all__ = ["Refinement", "check_refinement"]


@dataclass
class Refinement:
    """The three judges of one walk, and how many calls each judged."""

    oracle: ManagerOracle
    table: Oracle
    counters: bool = True
    calls: int = 0

    def judge(self, call: Call) -> str | None:
        """None when the call (both sides) is a step of every relation, else why not."""
        self.calls += 1
        args, kwargs = call.op.build()
        for label, side in (("the model", call.model), ("the implementation", call.impl)):
            if side is None:
                continue
            why = self.oracle.judge(
                call.op.method, args, kwargs, side.reply, side.before, side.after
            )
            if why is not None:
                return f"{label}: {why}"
        why = judge_keys(self.table, call)
        if why is not None:
            return f"the model, key by key (table relation T): {why}"
        if self.counters and call.impl is not None:
            why = judge_counters(call)
            if why is not None:
                return f"the implementation's counters: {why}"
        return None

    def figures(self) -> str:
        o = self.oracle
        return (
            f"{o.calls} calls judged by the manager relation ({o.solved} stepping state, "
            f"{o.checks} solver checks, {o.shapes} shapes, functional for batches "
            f"<= {o.functional_batch})"
        )


def check_refinement(
    bounds: Bounds,
    *,
    factory: Factory = CPUOffloadingManager,
    model: type[RecordingModel] = RecordingModel,
    variant: Variant = MANAGER,
    cache: OracleCache | None = None,
    lru: LruHooks | None = LRU_HOOKS,
    arc: ArcHooks | None = ARC_HOOKS,
) -> Outcome:
    """Every call on every reachable state within `bounds`, model and implementation
    (`factory`), is a step of the manager relation (`variant` of it), of the table
    relation per key, and of the counter rule (see the module docstring). `cache`:
    shapes shared with other runs of the same relation (`OracleCache`); `lru`: the
    LRU's hook relations composed with the manager's on an LRU's calls, `arc` ARC's
    on an ARC's (None: the manager relation alone)."""
    oracle = ManagerOracle(model.machine, variant, cache, lru, arc)
    judges = Refinement(oracle, Oracle(model.machine))
    walk = edges(bounds, judges.judge, model, factory)
    figures = f"{walk.states} states, {walk.transitions} calls; {judges.figures()}"
    if walk.failure is not None:
        return refuted(walk.failure)
    if not walk.complete:
        return Outcome(Status.UNKNOWN, f"the walk did not finish ({figures})")
    return proved(figures)

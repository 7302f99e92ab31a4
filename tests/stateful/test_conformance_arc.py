"""The implementation with policy "arc" against the model ARC, in lock-step, under the
active Hypothesis profile, with bad input and faults injected into policy hooks.

`make_machine` adds the ARC rules of `evictable.proofs.lockstep.arc_rules` (ghost hits, evictions,
settling pending and loading keys); ARC's four lists and its target are part of the
compared snapshot.
"""

from __future__ import annotations

from hypothesis import settings

from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.lockstep.arc_rules import ArcRules
from evictable.proofs.lockstep.conformance import make_machine

ArcConformance = make_machine(CPUOffloadingManager, "arc", inject_faults=True, require_copies=True)

TestArcConformance = ArcConformance.TestCase
TestArcConformance.settings = settings(settings.default, stateful_step_count=40)


def test_arc_machine_has_the_arc_rules() -> None:
    assert issubclass(ArcConformance, ArcRules)
    for name in ("settle", "store_absent", "touch_lists", "pin_t2", "fallback_pressure"):
        assert callable(getattr(ArcConformance, name))

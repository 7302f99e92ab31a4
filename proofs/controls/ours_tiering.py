"""Seeded bugs in our tiering orchestrator (`evictable.impl.tiering`): each the real
class compiled again from its own source with one edit (`proofs.controls.mutant`), so
that the records holding ours to the model (`refine.tiering`) show they can fail.

* `OursForgetsHits` -- a promotion that must evict no longer spares the keys its lookup
  hold reported HIT (vLLM 0.33's choice): a prefix longer than the primary evicts its
  own hits and answers "try later" where the model answers the part that fits.
"""

from __future__ import annotations

from evictable.proofs.controls.mutant import Edit, mutant

__all__ = ["OURS_BREAKERS", "OursForgetsHits"]

_CoreForgetsHits = mutant(
    "evictable.impl.tiering.core",
    "TieringCore",
    Edit(
        "TieringCore.promote",
        "if self.hold and self.primary.num_free < 1:",
        "if self.hold and self.primary.num_free < 0:",
    ),
    name="_CoreForgetsHits",
    doc="`TieringCore` whose promotions never protect the hold's HITs.",
)

OursForgetsHits = mutant(
    "evictable.impl.tiering.manager",
    "TieringManager",
    name="OursForgetsHits",
    doc="Our orchestrator whose promotions evict keys its lookup hold reported HIT.",
    namespace={"TieringCore": _CoreForgetsHits},
)

OURS_BREAKERS: dict[str, type] = {"ours_forgets_hits": OursForgetsHits}
"""The seeded bugs by name."""

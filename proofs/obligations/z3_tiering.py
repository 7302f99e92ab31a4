"""`tiering.*`: the tiering key relations proved inductive in Z3 over unboundedly many
keys and parties (`proofs.z3.tiering_proofs`), built from `CHUNK_RULES` and the CPU
table; each with a broken rule (`proofs.controls.tiering_rules`) refuted on its own claim.

The rules and the CPU table are looked up when `obligations` is called (a test may
patch a broken one in); the controls break the rules of `model.tiering_chunk`.
"""

from __future__ import annotations

from functools import partial

from evictable.model import lifecycle, tiering_chunk
from evictable.model.lifecycle import CpuState
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation, targeted
from evictable.proofs.controls.tables import replace_state
from evictable.proofs.controls.tiering_rules import RULE_CONTROLS
from evictable.proofs.z3.encode import REFERENCE_MACHINES
from evictable.proofs.z3.tiering_proofs import (
    check_consecution,
    check_initiation,
    check_step_claim,
)
from evictable.proofs.z3.tiering_relations import INVARIANTS, STEP_CLAIMS

__all__ = ["ASSUMPTIONS", "BOUNDS", "obligations"]

BOUNDS = "any number of keys and parties (requests, staged promotions, jobs of any tier)"

ASSUMPTIONS: tuple[str, ...] = (
    "the orchestrator changes a primary chunk, its owners and pins, and a party's claims "
    "and pins only through the chunk events of CHUNK_RULES, the chunk's side and the "
    "party's side in the same event (the explorer checks the model against the key "
    "relations in its bounded worlds: explore.tiering.*)",
    "a chunk's ghost counts of pending owners and pins are the sums of the per-party "
    "entries: no two distinct parties' entries add up to more than the count",
    "a submitted promotion's job id is fresh (no claim or ownership of the key before)",
    "a reset is a call of its own: no lookup hold is open across it",
    "the spec profile's rules (vLLM 0.33's orchestrator departs from them: "
    "PROFILE_DIFFERENCES; two of its departures are controls here)",
)
"""What every `tiering.*` record rests on and does not prove (docs/proofs.md,
"Tiering key relations")."""

_STATEMENTS = {
    "chunks_consistent": "each chunk's state, ref count and evictable flag satisfy the CPU "
    "block invariants; owners only on a PENDING chunk, pins only on a LOADING one, whose "
    "ref count is its number of pins",
    "pins_have_owners": "every pin of a chunk is held by a live party (per party and key, "
    "the chunk's pins <= the party's), and a resident chunk's positive ref count is its "
    "number of pins",
    "owners_have_pins": "every pin a live party holds is on its chunk (per party and key, "
    "the party's pins <= the chunk's): with pins_have_owners, the ref count is the number "
    "of live pins holding the key",
    "one_pending_owner": "a PENDING chunk has exactly one pending owner",
    "pending_owners_live": "a PENDING chunk's owner is a live claim on it, and every live "
    "claim (GPU store, staged promotion, promotion job) owns a PENDING chunk",
    "no_stale_write": "a party that will write a chunk writes only the one its key owns: "
    "PENDING under that party, at the slot the party recorded",
    "hits_stay_resident": "a key the open lookup hold reported HIT stays readable (READY "
    "or LOADING) until the hold closes",
}

_STEP_STATEMENTS = {
    "only_idle_evicted": "every eviction takes a READY chunk: idle, unpinned, no pending owner",
    "reset_left_nothing": "after a reset no chunk is resident, none has an owner or a pin, "
    "and no party has a claim or a pin",
}


def obligations(level: Level) -> list[Obligation]:
    """`tiering.initiation`, `tiering.consecution.<relation>` and `tiering.<claim>`
    (unbounded: the same at every level)."""
    del level
    m = lifecycle.CPU_MACHINE
    rules = tiering_chunk.CHUNK_RULES
    ref = REFERENCE_MACHINES[m.name]
    out = [
        Obligation(
            "tiering.initiation",
            "a fresh cache satisfies every tiering key relation",
            partial(check_initiation, m),
            targeted(
                partial(check_initiation, replace_state(ref, CpuState.ABSENT, flag=True)),
                ["chunks_consistent"],
            ),
            "a cache whose absent chunks start in the evictable list is refuted on "
            "chunks_consistent",
            kind=Kind.UNBOUNDED,
            bounds=BOUNDS,
            tags=("z3", "tiering"),
        )
    ]
    for name in INVARIANTS:
        c = RULE_CONTROLS[name]
        out.append(
            Obligation(
                f"tiering.consecution.{name}",
                f"{_STATEMENTS[name]}: kept by every row of every chunk rule and by a "
                "lookup hold's HIT and close, from a state satisfying every key relation",
                partial(check_consecution, m, rules, name),
                targeted(partial(check_consecution, ref, c.rules(), name), [name]),
                f"{c.event.value}: {c.text}, is refuted on {name}",
                kind=Kind.UNBOUNDED,
                bounds=BOUNDS,
                assumptions=ASSUMPTIONS,
                tags=("z3", "tiering"),
            )
        )
    for name in STEP_CLAIMS:
        c = RULE_CONTROLS[name]
        out.append(
            Obligation(
                f"tiering.{name}",
                f"{_STEP_STATEMENTS[name]}, from a state satisfying every key relation",
                partial(check_step_claim, m, rules, name),
                targeted(partial(check_step_claim, ref, c.rules(), name), [name]),
                f"{c.event.value}: {c.text}, is refuted on {name}",
                kind=Kind.UNBOUNDED,
                bounds=BOUNDS,
                assumptions=ASSUMPTIONS,
                tags=("z3", "tiering"),
            )
        )
    return out

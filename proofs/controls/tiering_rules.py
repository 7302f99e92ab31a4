"""Deliberately broken chunk rules: one rule of `model.tiering_chunk.CHUNK_RULES`
changed each, the negative controls of the `tiering.*` Z3 records.

Each control makes one realistic mistake an orchestrator's author makes (several of
them what vLLM 0.33's orchestrator does, `model.tiering_tables.PROFILE_DIFFERENCES`), and
names the key relation it breaks: the record of that relation must refute it on that
relation's own claim (`proofs.base.records.targeted`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evictable.model.lifecycle import CpuEvent
from evictable.model.tiering_chunk import (
    CHUNK_RULES,
    ChunkEvent,
    ChunkGuard,
    ChunkRule,
    OnChunk,
    OnParty,
)

__all__ = ["RULE_CONTROLS", "RuleControl", "broken_rules"]


def broken_rules(
    event: ChunkEvent, rules: Sequence[ChunkRule] = CHUNK_RULES, **changes: Any
) -> tuple[ChunkRule, ...]:
    """`rules` with the rule of `event` changed by `changes` (`dataclasses.replace`)."""
    return tuple(dataclasses.replace(r, **changes) if r.event is event else r for r in rules)


@dataclass(frozen=True)
class RuleControl:
    """A broken rule: the claim it breaks, what it does, the event and the change."""

    breaks: str
    text: str
    event: ChunkEvent
    changes: Mapping[str, Any]

    def rules(self, rules: Sequence[ChunkRule] = CHUNK_RULES) -> tuple[ChunkRule, ...]:
        return broken_rules(self.event, rules, **self.changes)


RULE_CONTROLS: Mapping[str, RuleControl] = {
    c.breaks: c
    for c in (
        RuleControl(
            "chunks_consistent",
            "an unpin that drops the ref count but keeps the pin",
            ChunkEvent.UNPIN,
            {"on_chunk": OnChunk.KEEP},
        ),
        RuleControl(
            "pins_have_owners",
            "a pin that no party holds (a pin leak)",
            ChunkEvent.PIN,
            {"on_party": OnParty.KEEP},
        ),
        RuleControl(
            "owners_have_pins",
            "an unpin whose party goes on holding the pin (an owner lost)",
            ChunkEvent.UNPIN,
            {"on_party": OnParty.KEEP},
        ),
        RuleControl(
            "one_pending_owner",
            "a submitted promotion added as a second pending owner beside the staged one",
            ChunkEvent.SUBMIT_PROMOTION,
            {"on_chunk": OnChunk.SET_OWNER},
        ),
        RuleControl(
            "pending_owners_live",
            "a completion by anyone, not only the chunk's pending owner (vLLM 0.33's)",
            ChunkEvent.COMMIT,
            {"guard": ChunkGuard.ANYONE},
        ),
        RuleControl(
            "no_stale_write",
            "an abort whose party keeps its claim (a job that goes on writing the key)",
            ChunkEvent.ABORT,
            {"on_party": OnParty.KEEP},
        ),
        RuleControl(
            "hits_stay_resident",
            "an eviction that ignores the hold's HITs (vLLM 0.33's promotion)",
            ChunkEvent.EVICT,
            {"guard": ChunkGuard.ANYONE},
        ),
        RuleControl(
            "only_idle_evicted",
            "an eviction on the CPU table's reset rows (any resident chunk)",
            ChunkEvent.EVICT,
            {"cpu": CpuEvent.RESET},
        ),
        RuleControl(
            "reset_left_nothing",
            "a reset that keeps the parties' claims and pins (jobs, loads left)",
            ChunkEvent.RESET,
            {"on_party": OnParty.KEEP},
        ),
    )
}
"""The broken rule of each claim, by the claim it breaks."""

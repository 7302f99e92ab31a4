"""The factories of vLLM 0.33's tiering orchestrator: `TieringConfig -> VllmTiering`,
one per kind of secondary tier (what `evictable check --target tiering` and the
tiering explorer's lock-step take).

Each maps every `TierSpec` of the config to a tier it can build, and refuses the
others (`InvalidArgumentError`): `example_tiering` (vLLM's example tier),
`fs_tiering` (vLLM's fs tier for tiers with asynchronous lookups), `peer_tiering`
(vLLM's p2p `ServerRole` behind our `PeerServerTier` for a serving tier),
`p2p_tiering` (vLLM's real p2p tier, transports stubbed, for a serving tier),
`harness_tiering` (our harness tiers for every tier). Each carries the config it is
checked with by default (`evictable_tiering`). `partner(factory)` builds one in a
start state (`VllmTiering.start`).
"""

from __future__ import annotations

from collections.abc import Callable

from evictable.model.errors import InvalidArgumentError
from evictable.model.tiering_types import TieringConfig, TieringSnapshot, TierSpec
from evictable.proofs.adapters.vllm.tiering import VllmTiering

__all__ = [
    "STALE_NEVER",
    "example_tiering",
    "fs_tiering",
    "harness_tiering",
    "p2p_tiering",
    "partner",
    "peer_tiering",
    "tier_kinds",
]


def tier_kinds(
    config: TieringConfig, serving: str | None, asynch: str | None, name: str
) -> list[str]:
    """One tier kind per `TierSpec` of `config`: `serving` for a serving tier, `asynch`
    for one with asynchronous lookups, `example` for the others (`InvalidArgumentError`
    for a tier `name` does not build: None given, or a request-level tier)."""
    kinds = []
    for i, spec in enumerate(config.tiers):
        kind = serving if spec.serving else asynch if spec.async_lookup else "example"
        if kind is None or spec.request_level:
            raise InvalidArgumentError(f"{name}: tier {i} ({spec}) is not a tier it builds")
        kinds.append(kind)
    return kinds


def example_tiering(config: TieringConfig) -> VllmTiering:
    """vLLM's orchestrator with vLLM's example tier for every tier (no serving, no
    probes, no request-level tiers: refused)."""
    return VllmTiering(config, tier_kinds(config, None, None, "example_tiering"))


def fs_tiering(config: TieringConfig) -> VllmTiering:
    """vLLM's fs tier (on a temporary directory) for every tier with asynchronous
    lookups, the example tier for the others; no serving tier."""
    return VllmTiering(config, tier_kinds(config, None, "fs", "fs_tiering"))


def peer_tiering(config: TieringConfig) -> VllmTiering:
    """A serving tier is vLLM's p2p `ServerRole` behind our `PeerServerTier`; tiers
    with asynchronous lookups are fs tiers; the others example tiers."""
    return VllmTiering(config, tier_kinds(config, "peer", "fs", "peer_tiering"))


def p2p_tiering(config: TieringConfig) -> VllmTiering:
    """A serving tier is vLLM's real `P2PSecondaryTierManager` (stub transports); tiers
    with asynchronous lookups are fs tiers; the others example tiers."""
    return VllmTiering(config, tier_kinds(config, "p2p", "fs", "p2p_tiering"))


def harness_tiering(config: TieringConfig) -> VllmTiering:
    """Every tier a harness tier of ours (`harness_tier`): serving, asynchronous and
    request-level as each `TierSpec` says; every move of a tier is an event."""
    kinds = ["serving" if spec.serving else "harness" for spec in config.tiers]
    return VllmTiering(config, kinds)


STALE_NEVER = (
    "vLLM's connector drops the GPU completions of jobs prepared before a reset (job ids "
    "below its _stale_job_threshold), so the orchestrator never sees them"
)
"""Why the explorer's `stale` family is not a behaviour of vLLM's orchestrator."""

for _f, _shape in (
    (example_tiering, (TierSpec("example"),)),
    (fs_tiering, (TierSpec("fs", async_lookup=True),)),
    (peer_tiering, (TierSpec("peer", serving=True), TierSpec("example"))),
    (p2p_tiering, (TierSpec("p2p", serving=True), TierSpec("example"))),
    (harness_tiering, (TierSpec("harness"), TierSpec("serving", serving=True))),
):
    _f.evictable_tiering = TieringConfig(num_slots=2, tiers=_shape)  # type: ignore[attr-defined]
    _f.evictable_tiering_skip = {"stale": STALE_NEVER}  # type: ignore[attr-defined]
    _f.evictable_tiering_compare = (  # type: ignore[attr-defined]
        "state" if _f is harness_tiering else "answers"
    )


def partner(
    factory: Callable[[TieringConfig], VllmTiering],
) -> Callable[[TieringSnapshot], VllmTiering]:
    """`snapshot -> adapter`: `factory(snapshot.config)` brought to the start state
    `snapshot` (the explorer's lock-step partner)."""

    def build(snap: TieringSnapshot) -> VllmTiering:
        made = factory(snap.config)
        made.start(snap)
        return made

    return build

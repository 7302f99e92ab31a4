"""Tiering orchestrators for `evictable check --target tiering` without vLLM: the
model itself behind the factory signature the target takes (`(TieringConfig) ->
orchestrator` with `start(snapshot)`), one per profile."""

from __future__ import annotations

from typing import Any

from evictable.model.tiering import ModelTiering
from evictable.model.tiering_types import TieringConfig, TieringSnapshot


class ModelOrchestrator:
    """`ModelTiering` of one profile, started in any snapshot of that profile."""

    def __init__(self, config: TieringConfig, profile: str) -> None:
        self.profile = profile
        self.model = ModelTiering(config, profile)

    def start(self, snap: TieringSnapshot) -> None:
        self.model = ModelTiering.restore(snap, self.profile)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


def fixed(config: TieringConfig) -> ModelOrchestrator:
    """The model's own orchestrator (profile `spec`): no finding."""
    return ModelOrchestrator(config, "spec")


fixed.evictable_tiering_profile = "spec"  # type: ignore[attr-defined]


def vllm_semantics(config: TieringConfig) -> ModelOrchestrator:
    """The model with vLLM 0.33's semantics: its safety findings and its lasso."""
    return ModelOrchestrator(config, "vllm-0.33")

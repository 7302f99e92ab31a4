"""Our orchestrator over vLLM 0.33's own tiers, built as vLLM builds it from
`spec_name: EvictableTieringSpec` (`proofs.adapters.vllm.tiering_ours`), held to the
model by `evictable check --target tiering`: no finding with any tier vLLM ships
(example, fs, its p2p server role, its real p2p tier) nor with the fault-injecting
harness tiers vLLM loads by `module_path`; a seeded break of ours is found over the
same tiers (so these checks can fail)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("vllm")

from evictable.model.tiering_types import Profile, TieringSnapshot
from evictable.proofs.adapters.vllm import tiering_ours
from evictable.proofs.adapters.vllm.tiering_factories import tier_kinds
from evictable.proofs.adapters.vllm.tiering_ours import OursOverVllm
from evictable.proofs.base.compare import Kind
from evictable.proofs.base.tiering_protocol import TieringAdapter
from evictable.proofs.check.tiering import check_orchestrator
from evictable.proofs.controls.ours_tiering import OursForgetsHits
from evictable.proofs.explore.tiering_bounds import WORLDS

FACTORIES = {
    "ours_example_tiering": ["scan", "faults", "stale"],
    "ours_fs_tiering": ["scan", "faults", "stale", "async"],
    "ours_peer_tiering": ["scan", "peer", "faults", "stale", "async"],
    "ours_p2p_tiering": ["scan", "peer", "faults", "stale", "async"],
    "ours_harness_tiering": ["scan", "peer", "faults", "stale", "async"],
}
"""Each factory and the explorer's families (quick worlds) whose tiers it builds."""


def test_ours_over_vllm_satisfies_the_adapter_protocol() -> None:
    a = tiering_ours.ours_example_tiering(WORLDS["quick"]["scan"][0].config)
    try:
        assert isinstance(a, OursOverVllm) and isinstance(a, TieringAdapter)
        assert type(a.vllm).__name__ == "EvictableTieringManager"
    finally:
        a.shutdown()


@pytest.mark.parametrize("factory", sorted(FACTORIES))
def test_check_tiering_reports_nothing_on_ours_over_vllms_tiers(check: Any, factory: str) -> None:
    code, report, out = check(
        f"evictable.proofs.adapters.vllm.tiering_ours:{factory}",
        "--target",
        "tiering",
        "--seed",
        "1",
    )
    assert code == 0, out
    assert report["findings"] == [], out
    worlds = {w.split("[")[0] for w in report["tiering"]["worlds"]}
    assert worlds == set(FACTORIES[factory]), out
    assert report["tiering"]["lassos"] == [], out


def test_ours_over_harness_tiers_follows_the_model_state_for_state(check: Any) -> None:
    code, report, out = check(
        "evictable.proofs.adapters.vllm.tiering_ours:ours_harness_tiering",
        "--target",
        "tiering",
        "--seed",
        "2",
    )
    assert code == 0, out
    assert report["tiering"]["compare"] == "state"
    assert report["tiering"]["diverged"] == 0, out


def _forgetful(kinds_of: Any) -> Any:
    def build(snap: TieringSnapshot) -> OursOverVllm:
        made = OursOverVllm(snap.config, kinds_of(snap.config), cls=OursForgetsHits)
        made.start(snap)
        return made

    return build


@pytest.mark.parametrize("serving", [None, "p2p"])
def test_a_seeded_break_in_ours_is_found_over_vllms_tiers(serving: str | None) -> None:
    build = _forgetful(lambda config: tier_kinds(config, serving, "fs", "seeded"))
    run = check_orchestrator(
        build, "quick", Profile.SPEC, walks=10, seed=1, compare="answers", families=["scan"]
    )
    assert Kind.EVICTED_WHILE_HIT in {f.kind for f in run.findings}, run.findings

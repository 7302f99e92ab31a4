"""The tiering lock-step (`check.tiering`) on the model itself, without vLLM: the fixed
orchestrator gets no finding, vLLM 0.33's semantics get their safety findings and the
lasso replayed, and an orchestrator of the other profile diverges."""

from __future__ import annotations

from collections.abc import Callable

from evictable.model.tiering import ModelTiering
from evictable.model.tiering_types import TieringSnapshot
from evictable.proofs.base.compare import Kind
from evictable.proofs.check.tiering import check_orchestrator


def model(profile: str) -> Callable[[TieringSnapshot], ModelTiering]:
    return lambda snap: ModelTiering.restore(snap, profile)


def kinds(profile: str, under: str, families: tuple[str, ...]) -> list[Kind]:
    run = check_orchestrator(
        model(profile), profile=under, walks=4, depth=15, seed=5, families=families
    )
    return [f.kind for f in run.findings]


def test_the_fixed_orchestrator_gets_no_finding() -> None:
    assert kinds("spec", "spec", ("scan", "peer")) == []


def test_vllm_semantics_show_their_findings_and_the_lasso_on_the_orchestrator() -> None:
    found = kinds("vllm-0.33", "vllm-0.33", ("scan", "peer"))
    assert Kind.EVICTED_WHILE_HIT in found
    assert found.count(Kind.NEVER_ANSWERS) == 2  # one lasso per world, replayed
    assert Kind.DIVERGENCE not in found


def test_an_orchestrator_of_the_other_profile_diverges() -> None:
    assert kinds("spec", "vllm-0.33", ("scan",)) == [Kind.DIVERGENCE]


def test_a_family_the_orchestrator_never_meets_is_skipped_with_its_reason() -> None:
    run = check_orchestrator(
        model("spec"), profile="spec", walks=1, depth=5, seed=1, skip={"stale": "never"}
    )
    assert "stale: never" in run.skipped
    assert not any(w.startswith("stale") for w in run.worlds)

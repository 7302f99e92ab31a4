"""vLLM 0.33's tiered offloading (`vllm.v1.kv_offload.tiering`): each documented defect
reproduced by its standalone script on vLLM alone, the exact set of them; the tier
contract's verdicts on vLLM's own tiers; the tiering factories building vLLM's real
orchestrator and running a trace under the model's invariants."""

from __future__ import annotations

import contextlib
import io
import re
import runpy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")

from evictable.model.tiering_invariants import check_tiering
from evictable.model.tiering_types import (
    JobOutcome,
    JobPhase,
    ReqId,
    TierId,
    TieringConfig,
    TierSpec,
)
from evictable.proofs.adapters.vllm import (
    K,
    VllmTiering,
    example_tiering,
    fs_tiering,
    harness_tiering,
    p2p_tiering,
    peer_tiering,
)

from .conftest import classes
from .vllm_tiering_view import as_vllm_spec

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "interop" / "tiering").glob("[0-9][0-9]_*.py"))
DOCUMENTED = {
    "01_peer_serve_pins_evicted_hit.py",
    "02_scan_never_answers.py",
    "03_reset_with_parked_p2p_store.py",
    "04_staged_promotion_hidden.py",
    "05_cascade_submit_raises.py",
    "06_promotion_submit_raises.py",
    "07_unknown_job_result.py",
    "08_partial_unknown_keys.py",
}
"""Every defect docs/interop.md states for vLLM 0.33's tiering, by its script."""


def _run_script(path: Path) -> tuple[int, str]:
    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out):
        try:
            runpy.run_path(str(path), run_name="__main__")
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue()


def test_the_scripts_are_exactly_the_documented_defects() -> None:
    assert {p.name for p in SCRIPTS} == DOCUMENTED
    doc = (ROOT / "docs" / "interop.md").read_text(encoding="utf-8")
    assert set(re.findall(r"interop/tiering/(\d\d_\w+\.py)", doc)) == DOCUMENTED


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_each_script_reproduces_its_defect_on_vllm_alone(script: Path) -> None:
    text = script.read_text(encoding="utf-8")
    assert not re.search(r"^\s*(from|import) evictable", text, re.M)
    code, out = _run_script(script)
    assert code == 1, out
    assert "DEFECT" in out


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_no_script_finds_its_defect_on_our_orchestrator(script: Path) -> None:
    """Each script run unchanged with vLLM's `TieringOffloadingSpec` building ours
    (`EvictableTieringSpec`'s manager, seen through vLLM's names): every one applies
    (our orchestrator drives vLLM's p2p, example and out-of-tree tiers too) and none
    finds its defect."""
    with as_vllm_spec():
        code, out = _run_script(script)
    assert code == 0, out
    assert "DEFECT" not in out and "ok:" in out


# ----------------------------------------------------------------- the tier contract


@pytest.mark.parametrize(
    ("factory", "expected"),
    [
        ("example_tier", []),
        ("fs_tier", []),
        ("p2p_prefill_tier", ["tier_unreported"]),
    ],
)
def test_the_tier_contract_on_vllms_tiers(check: Any, factory: str, expected: list[str]) -> None:
    spec = f"evictable.proofs.adapters.vllm.tier_driver:{factory}"
    code, report, out = check(spec, "--target", "tier", "--seed", "1")
    assert classes(report) == expected, out
    assert code == (1 if expected else 0)
    assert report["target"] == "tier"


def test_a_vllm_tier_that_raises_its_failures_is_refused(check: Any) -> None:
    code, report, out = check(
        "tests.interop.vllm_broken_tiers:RaisesOnMissingLoad", "--target", "tier", "--seed", "1"
    )
    assert (code, classes(report)) == (1, ["tier_raised"]), out


# ----------------------------------------------------------------- the factories

SERVING = TieringConfig(2, (TierSpec("serving", serving=True), TierSpec("plain")))


def _finish_submitted(a: VllmTiering) -> None:
    for job in a.snapshot().jobs:
        if job.phase is JobPhase.SUBMITTED:
            a.job_finishes(job.job, JobOutcome.ok())


def _between_steps_ok(a: VllmTiering, after: str | None = None) -> None:
    verdict = check_tiering(a.snapshot(), after, between_steps=True)
    assert verdict.violated == (), verdict


@pytest.mark.parametrize(
    ("factory", "config"),
    [
        (example_tiering, TieringConfig(2, (TierSpec("example"),))),
        (fs_tiering, TieringConfig(2, (TierSpec("fs", async_lookup=True),))),
        (peer_tiering, SERVING),
        (p2p_tiering, SERVING),
        (harness_tiering, SERVING),
    ],
    ids=lambda f: getattr(f, "__name__", ""),
)
def test_a_factory_runs_vllms_orchestrator_under_the_invariants(
    factory: Callable[[TieringConfig], VllmTiering], config: TieringConfig
) -> None:
    a = factory(config)
    try:
        a.new_request(ReqId("r1"))
        assert a.store(ReqId("r1"), [K(1), K(2)]) is not None
        a.complete_store(ReqId("r1"), [K(1), K(2)])
        a.end_step()
        _finish_submitted(a)
        a.end_step()
        _between_steps_ok(a)
        a.finish(ReqId("r1"))
        a.end_step()
        a.new_request(ReqId("r2"))
        answers = [a.scan(ReqId("r2"), [K(1), K(2), K(3)]), None]
        a.end_step()
        answers[1] = a.scan(ReqId("r2"), [K(1), K(2), K(3)])
        assert 2 in answers  # the stored prefix answers (an fs probe may defer once)
        _between_steps_ok(a)
        a.complete_load(ReqId("r2"), [K(1), K(2)])
        a.end_step()
        if config.tiers[0].serving:
            a.peer_request(TierId(0), [K(2), K(1)])
            a.poll()
            assert any(j.kind.value == "peer_store" for j in a.snapshot().jobs)
            _finish_submitted(a)
            a.poll()
        _between_steps_ok(a)
        a.reset()
        _between_steps_ok(a, "reset")
        a.reset_flushed()
    finally:
        a.shutdown()


@pytest.mark.parametrize("factory", [p2p_tiering, peer_tiering, harness_tiering])
def test_a_peer_lookup_evicts_what_it_reported_hit_in_every_serving_factory(
    factory: Callable[[TieringConfig], VllmTiering],
) -> None:
    a = factory(TieringConfig(1, (TierSpec("serving", serving=True), TierSpec("plain"))))
    try:
        a.new_request(ReqId("w"))
        for k in (1, 2):
            a.store(ReqId("w"), [K(k)])
            a.complete_store(ReqId("w"), [K(k)])
            _finish_submitted(a)
            a.end_step()
            a.end_step()
        a.finish(ReqId("w"))
        a.end_step()
        a.peer_request(TierId(0), [K(2), K(1)])
        with pytest.raises(AssertionError, match="not found in cache"):
            a.poll()
        assert check_tiering(a.snapshot()).violated == ("hits_stay_resident",)
    finally:
        a.shutdown()


def test_a_prefix_longer_than_the_primary_never_answers_through_the_adapter() -> None:
    a = example_tiering(TieringConfig(2, (TierSpec("example"),)))
    try:
        a.new_request(ReqId("w"))
        for k in (1, 2, 3):
            a.store(ReqId("w"), [K(k)])
            a.complete_store(ReqId("w"), [K(k)])
            a.end_step()
        a.finish(ReqId("w"))
        a.end_step()
        a.end_step()
        a.new_request(ReqId("r"))
        for _ in range(6):
            assert a.scan(ReqId("r"), [K(1), K(2), K(3)]) is None
            assert "hits_stay_resident" in check_tiering(a.snapshot()).violated
            a.end_step()
    finally:
        a.shutdown()


@pytest.mark.parametrize("factory", [peer_tiering, harness_tiering])
def test_a_promotion_staged_by_a_peer_that_gave_up_is_hidden_work(
    factory: Callable[[TieringConfig], VllmTiering],
) -> None:
    a = factory(TieringConfig(4, (TierSpec("serving", serving=True), TierSpec("plain"))))
    try:
        a.new_request(ReqId("w"))
        a.store(ReqId("w"), [K(1)])
        a.complete_store(ReqId("w"), [K(1)])
        _finish_submitted(a)
        a.end_step()
        a.end_step()
        a.finish(ReqId("w"))
        a.end_step()
        a.reset()  # K1 is left in the tier only
        a.reset_flushed()
        a.peer_request(TierId(0), [K(1)])
        a.poll()  # K1's promotion is staged; the peer's lookup waits for it
        a.peer_gives_up(TierId(0))
        a.poll()
        snap = a.snapshot()
        assert snap.staged and not snap.pending_work
        assert check_tiering(snap, between_steps=True).violated == ("pending_work_visible",)
    finally:
        a.shutdown()


# ---------------------------------------------------------- the lock-step target

LOCKSTEP = {
    "harness_tiering": ["evicted_while_hit", "reset_left_work", "never_answers"],
    "peer_tiering": ["evicted_while_hit", "reset_left_work", "never_answers"],
    "p2p_tiering": ["evicted_while_hit", "reset_left_work", "never_answers"],
    "fs_tiering": ["evicted_while_hit", "never_answers"],
    "example_tiering": ["evicted_while_hit"],
}
"""`evictable check --target tiering --seed 1` per factory: the classes reached, most
severe first: one finding per class (the check pipeline's rank), a class whose trace
begins with a more severe finding's whole trace shown as its consequence; each
world's lasso is printed on its own `lasso:` line."""


def reached(report: dict[str, Any]) -> list[str]:
    """The report's classes with their consequences', most severe first, once each."""
    found = [
        c
        for f in report["findings"]
        for c in (f["class"], *(k["class"] for k in f["consequences"]))
        if c in {"evicted_while_hit", "reset_left_work", "never_answers", "divergence"}
    ]
    return sorted(set(found), key=found.index)


@pytest.mark.parametrize("factory", sorted(LOCKSTEP))
def test_the_lockstep_target_on_vllms_orchestrator(check: Any, factory: str) -> None:
    code, report, out = check(
        f"evictable.proofs.adapters.vllm:{factory}", "--target", "tiering", "--seed", "1"
    )
    assert code == 1, out
    assert sorted(reached(report)) == sorted(LOCKSTEP[factory]), out
    assert classes(report)[0] == "evicted_while_hit", out
    assert set(classes(report)) <= set(LOCKSTEP[factory]), out
    assert "divergence" not in classes(report)
    if "never_answers" in LOCKSTEP[factory]:
        assert "lasso: " in out
    assert any(w.startswith("stale") for w in report["tiering"]["skipped"])


def test_a_lockstep_finding_is_a_program_that_runs_on_vllm(check: Any, tmp_path: Path) -> None:
    _, report, _ = check(
        "evictable.proofs.adapters.vllm:harness_tiering", "--target", "tiering", "--seed", "1"
    )
    snippet = report["findings"][0]["snippet"]
    script = tmp_path / "finding.py"
    script.write_text(snippet, encoding="utf-8")
    namespace: dict[str, Any] = {}
    exec(compile(snippet, str(script), "exec"), namespace)
    m = namespace["m"]
    try:
        assert "hits_stay_resident" in check_tiering(m.snapshot()).violated
    finally:
        m.shutdown()

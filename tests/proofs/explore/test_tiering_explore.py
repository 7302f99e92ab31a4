"""The tiering subject: worlds, symmetry, runnable traces, the lock-step hook, liveness
under each profile."""

from __future__ import annotations

from dataclasses import replace

from evictable.model.tiering import ModelTiering
from evictable.model.tiering_types import Profile, TieringSnapshot, TierSpec
from evictable.proofs.explore.tiering import (
    TieringSubject,
    explore,
    livelock,
    root_world,
    trace_lines,
)
from evictable.proofs.explore.tiering_bounds import WORLDS
from evictable.proofs.explore.tiering_moves import moves
from evictable.proofs.explore.tiering_world import (
    Renaming,
    TieringBounds,
    canonical,
    rename,
)

SCAN = TieringBounds(keys=2, slots=1, tiers=(TierSpec(),), requests=(2,), copies=((0, 1),))


def run_snippet(lines: list[str]) -> dict[str, object]:
    scope: dict[str, object] = {}
    exec("\n".join(lines), scope)
    return scope


def test_the_spec_holds_in_the_smallest_scan_world() -> None:
    result = explore(SCAN)
    assert result.ok and result.states > 20


def test_vllm_is_refuted_with_a_runnable_trace() -> None:
    result = explore(SCAN, Profile.VLLM_033)
    assert result.found is not None and "evicted_while_hit" in result.found.reason
    scope = run_snippet(trace_lines(SCAN, Profile.VLLM_033, result.path))
    assert isinstance(scope["m"], ModelTiering)


def test_a_renamed_world_has_the_same_canonical_form() -> None:
    world = root_world(SCAN, Profile.SPEC, ModelTiering)
    for act in moves(world, SCAN):
        if act.op == "new_request":
            break
    from evictable.proofs.explore.tiering_moves import apply

    first = apply(ModelTiering, Profile.SPEC, world, act).world
    swapped = rename(first, Renaming({"k0": "k1", "k1": "k0"}))
    assert swapped != first
    assert canonical(swapped, SCAN)[0] == canonical(first, SCAN)[0]


def test_the_spec_has_no_lasso_and_vllm_has_its_livelock() -> None:
    assert livelock(SCAN).lasso is None
    found = livelock(SCAN, Profile.VLLM_033)
    assert found.lasso is not None and found.lasso.token == ("answer", 0)
    lines = trace_lines(SCAN, Profile.VLLM_033, found.lasso.stem, cycle=found.lasso.cycle)
    assert sum("try later" in line for line in lines) >= 3
    run_snippet(lines)


def test_the_peer_world_finds_vllms_unanswered_peer() -> None:
    world = WORLDS["quick"]["peer"][0]
    assert livelock(world).lasso is None
    found = livelock(world, Profile.VLLM_033)
    assert found.lasso is not None
    assert isinstance(found.lasso.token, tuple) and found.lasso.token[0] == "finalise"


class Twin:
    """A partner for the lock-step hook: the model itself, optionally broken."""

    def __init__(self, snap: TieringSnapshot, broken: bool = False) -> None:
        self.m = ModelTiering.restore(snap, Profile.SPEC)
        self.broken = broken

    def __getattr__(self, name: str) -> object:
        return getattr(self.m, name)

    def scan(self, req: str, keys: list[str]) -> int | None:
        got = self.m.scan(req, keys)  # type: ignore[arg-type]
        return 0 if self.broken and got else got


def test_the_lock_step_hook_agrees_with_the_model_itself() -> None:
    result = explore(SCAN, partner=lambda snap: Twin(snap))  # type: ignore[arg-type,return-value]
    assert result.ok


def test_the_lock_step_hook_catches_a_divergent_implementation() -> None:
    result = explore(SCAN, partner=lambda snap: Twin(snap, broken=True))  # type: ignore[arg-type,return-value]
    assert result.found is not None and "answered" in result.found.reason


def test_masked_findings_are_counted_and_followed() -> None:
    subject = TieringSubject(SCAN, Profile.VLLM_033, masked=frozenset({"evicted_while_hit"}))
    from evictable.proofs.explore.engine import search

    result = search(subject)
    assert result.notes["evicted_while_hit"] > 0 and result.states > 11


def test_every_level_names_every_family() -> None:
    for level, families in WORLDS.items():
        assert set(families) == {"scan", "peer", "faults", "stale", "async"}, level
        for worlds in families.values():
            assert worlds and all(replace(w).describe() for w in worlds)

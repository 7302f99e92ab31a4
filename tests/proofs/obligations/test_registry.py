"""The obligations layer: every group at every level, each claim named once, with its
kind, bounds and negative control."""

from __future__ import annotations

import importlib

import pytest

from evictable.proofs.base.levels import LEVELS, Level
from evictable.proofs.base.records import Kind
from evictable.proofs.obligations import z3_bmc
from evictable.proofs.obligations.refine_manager import WALKED_ELSEWHERE
from evictable.proofs.obligations.registry import GROUPS, collect


def test_every_group_is_a_module_of_the_obligations_layer() -> None:
    for name in GROUPS:
        assert name.startswith("evictable.proofs.obligations.")
        assert callable(importlib.import_module(name).obligations)


@pytest.mark.parametrize("level", LEVELS)
def test_every_obligation_has_a_unique_name_a_kind_and_a_control(level: Level) -> None:
    obs = collect(level)
    names = [ob.name for ob in obs]
    assert len(names) == len(set(names)), "an obligation name is used twice"
    for ob in obs:
        assert isinstance(ob.kind, Kind)
        assert ob.negative is not None, f"{ob.name} has no negative control"
        assert ob.negative_statement, f"{ob.name}'s control says nothing"
        if ob.kind is not Kind.UNBOUNDED:
            assert ob.bounds, f"{ob.name} ({ob.kind.value}) states no bounds"


def test_the_levels_name_the_same_obligations_but_what_quick_leaves_to_others() -> None:
    quick = {ob.name for ob in collect("quick")}
    default = {ob.name for ob in collect("default")}
    assert default == {ob.name for ob in collect("thorough")}
    # at quick, each record left out is contained by others at that level (stated
    # where it is declared): the searches from a fresh manager, and ARC's walk
    contained = {f"bmc.manager.{w.name}" for w in z3_bmc.WORLDS["default"]}
    contained |= {f"refine.manager.{p}" for p, level in WALKED_ELSEWHERE if level == "quick"}
    assert default - quick == contained
    assert quick <= default

"""The house rules hold on the code's own imports (docs/architecture.md, "Layers")."""

from __future__ import annotations

import pytest

from evictable.proofs import LAYERS
from tools.layers import Graph, build, check_circles, check_layers, package_edges, report


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build()


def test_no_import_runs_up_or_sideways_and_no_circle_or_private_crossing(graph: Graph) -> None:
    assert graph.violations == [], "\n".join(report(graph))


def test_every_module_is_placed_in_a_layer(graph: Graph) -> None:
    placed = {p for layer in LAYERS for p in layer}
    assert {m.package for m in graph.modules.values()} <= placed


def test_the_engines_import_only_the_base_below_them(graph: Graph) -> None:
    engines = {"proofs.z3", "proofs.explore", "proofs.lockstep"}
    for src, dst in package_edges(graph):
        if src in engines:
            assert dst in ("model", "impl", "proofs.base"), f"{src} imports {dst}"


def test_only_the_obligations_import_the_controls(graph: Graph) -> None:
    importers = {src for (src, dst) in package_edges(graph) if dst == "proofs.controls"}
    assert importers <= {"proofs.obligations"}, importers


def test_the_rules_catch_an_import_sideways_up_or_in_a_circle() -> None:
    g = Graph()
    g.edges["proofs.z3.lifecycle"] = {"proofs.explore.engine"}  # sideways
    g.edges["proofs.base.records"] = {"proofs.cli.main"}  # up
    g.edges["proofs.cli.main"] = {"proofs.cli.check"}
    g.edges["proofs.cli.check"] = {"proofs.cli.main"}  # a circle
    for name in ("proofs.z3.lifecycle", "proofs.base.records", "proofs.cli.main"):
        g.modules.setdefault(name, None)  # type: ignore[arg-type]
    g.modules.setdefault("proofs.cli.check", None)  # type: ignore[arg-type]
    check_layers(g)
    check_circles(g)
    kinds = {v.split(":")[0] for v in g.violations}
    assert kinds == {"sideways", "up", "circle"}, g.violations


def test_the_vllm_face_imports_its_modules_and_none_imports_it_back(graph: Graph) -> None:
    # the face's lazy names are imports inside `__getattr__`: edges the circle check sees
    face = {m for m in graph.modules if m.startswith("vllm.")}
    assert face <= graph.edges["vllm"] | {"vllm.tiers"}
    assert not any("vllm" in graph.edges.get(m, set()) for m in face)

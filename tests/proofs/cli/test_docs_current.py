"""The generated regions of docs/spec.md match the transition table."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from evictable.model.lifecycle import CPU_MACHINE, Transition
from evictable.proofs.cli import docgen


def test_spec_tables_and_diagrams_are_current() -> None:
    text = docgen.SPEC_PATH.read_text(encoding="utf-8")
    assert docgen.render(text) == text, "docs/spec.md is stale: run `make docs`"


def test_every_region_is_present_in_spec() -> None:
    text = docgen.SPEC_PATH.read_text(encoding="utf-8")
    for name in docgen.regions():
        assert f"<!-- BEGIN GENERATED: {name} -->" in text


def test_staleness_is_detected_after_a_table_edit() -> None:
    text = docgen.SPEC_PATH.read_text(encoding="utf-8")
    edited = dataclasses.replace(
        CPU_MACHINE,
        transitions=tuple(
            dataclasses.replace(t, target=t.source)
            if (t.event.value, t.source.name, t.target.name) == ("load_end", "LOADING", "READY")
            else t
            for t in CPU_MACHINE.transitions
        ),
    )
    bodies = docgen.regions()
    bodies["cpu-transitions"] = docgen.transitions_table(edited)
    assert docgen.render(text, bodies) != text


def test_hook_column_is_derived_from_the_flag_flip() -> None:
    table = docgen.transitions_table(CPU_MACHINE)
    line = next(row for row in table.splitlines() if "LOADING → READY" in row)
    assert "`mark_evictable`" in line
    assert isinstance(CPU_MACHINE.transitions[0], Transition)


def test_diagram_formats_name_every_transition() -> None:
    mer = docgen.diagram("mermaid", "cpu")
    dot = docgen.diagram("dot", "cpu")
    for t in CPU_MACHINE.transitions:
        assert f"{t.source.name} --> {t.target.name}" in mer
        assert f"{t.source.name} -> {t.target.name}" in dot


def test_unknown_region_is_an_error() -> None:
    bad = "<!-- BEGIN GENERATED: nope -->\nx\n<!-- END GENERATED: nope -->\n"
    try:
        docgen.render(bad)
    except KeyError as exc:
        assert "nope" in str(exc)
    else:
        raise AssertionError("an unknown region must be refused")


def test_proofs_obligation_list_is_current() -> None:
    for path, fill in docgen.DOCUMENTS.items():
        text = path.read_text(encoding="utf-8")
        assert docgen.render(text, fill()) == text, f"{path.name} is stale: run `make docs`"


def test_proofs_list_names_every_obligation_with_its_kind_and_bounds() -> None:
    from evictable.proofs.obligations.registry import collect

    table = docgen.obligations_table("default")
    for ob in collect("default"):
        line = next(row for row in table.splitlines() if row.startswith(f"| `{ob.name}` |"))
        assert f"| {ob.kind.value} |" in line


def test_a_new_obligation_makes_the_proofs_list_stale() -> None:
    text = docgen.PROOFS_PATH.read_text(encoding="utf-8")
    bodies = docgen.proofs_regions()
    bodies["obligations"] += "\n| `new.obligation` | tested | 1 example | — |"
    assert docgen.render(text, bodies) != text


def test_every_generated_region_is_present_in_its_document() -> None:
    for path, fill in docgen.DOCUMENTS.items():
        text = path.read_text(encoding="utf-8")
        for name in fill():
            assert f"<!-- BEGIN GENERATED: {name} -->" in text, f"{path.name} lacks {name}"


def test_the_module_map_names_every_module_once() -> None:
    import evictable

    top = Path(evictable.__file__).resolve().parent
    doc = docgen.ARCHITECTURE_PATH.read_text(encoding="utf-8")
    begin, end = "<!-- BEGIN GENERATED: module-map -->", "<!-- END GENERATED: module-map -->"
    text = doc[doc.index(begin) : doc.index(end)]
    links = ("model", "impl", "proofs")
    face = [p for p in top.rglob("*.py") if p.relative_to(top).parts[0] not in links]
    for path in [*face, *(f for package in links for f in (top / package).rglob("*.py"))]:
        parts = [p for p in path.relative_to(top).with_suffix("").parts if p != "__init__"]
        name = ".".join(["evictable", *parts])
        assert text.count(f"| `{name}` |") == 1, f"{name} is not in the module map once"


def test_a_new_module_makes_the_map_stale() -> None:
    text = docgen.ARCHITECTURE_PATH.read_text(encoding="utf-8")
    bodies = docgen.architecture_regions()
    bodies["module-map"] += "\n| `evictable.proofs.new` | a module nobody mapped |"
    assert docgen.render(text, bodies) != text

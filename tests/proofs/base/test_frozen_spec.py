"""The frozen copy of the CPU table (`proofs.base.frozen_spec`) is the table of
`model.lifecycle` at its version: a deliberate change of the table must update the
copy and raise the version; a mutant of the table is judged by the unchanged copy."""

from __future__ import annotations

import dataclasses

from evictable.model.lifecycle import CPU_MACHINE
from evictable.proofs.base.frozen_spec import CPU_SPEC, CPU_SPEC_VERSION
from evictable.proofs.z3.encode import REFERENCE_MACHINES


def test_the_frozen_copy_equals_the_table_of_the_model() -> None:
    for f in dataclasses.fields(CPU_SPEC):
        assert getattr(CPU_SPEC, f.name) == getattr(CPU_MACHINE, f.name), (
            f"model/lifecycle.py's {f.name} differs from the frozen copy "
            f"({CPU_SPEC_VERSION}): update proofs/base/frozen_spec.py and its version"
        )


def test_the_z3_reference_is_the_frozen_copy_not_the_module() -> None:
    assert REFERENCE_MACHINES["cpu"] is CPU_SPEC
    assert CPU_SPEC is not CPU_MACHINE

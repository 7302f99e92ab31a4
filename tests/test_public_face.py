"""The public face: `evictable.testing`, `evictable.errors`, and the light imports."""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import evictable.errors
import evictable.model.errors
import evictable.testing

ROOT = Path(__file__).resolve().parents[1]
FACES = {
    "evictable.testing": ROOT / "src" / "evictable" / "testing" / "__init__.py",
    "evictable.impl": ROOT / "impl" / "__init__.py",
    "evictable.model": ROOT / "model" / "__init__.py",
}
"""The packages whose names are imported on first use (PEP 562), and their files."""


def _type_checking_imports(path: Path) -> dict[str, str]:
    """name -> module, from the `if TYPE_CHECKING:` block of a package `__init__`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    block = next(
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    )
    return {
        alias.name: node.module or ""
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


@pytest.mark.parametrize("package", sorted(FACES))
def test_every_public_name_resolves_to_its_declared_home(package: str) -> None:
    module = importlib.import_module(package)
    declared = _type_checking_imports(FACES[package])
    assert declared == module._HOME  # type checkers see what runs
    flags = getattr(module, "_FLAGS", ())  # evictable.impl.COMPILED: computed, no home
    assert sorted(module.__all__) == sorted([*declared, *flags])
    for name in flags:
        assert isinstance(getattr(module, name), bool)
    for name, home in declared.items():
        value = getattr(module, name)
        assert value is getattr(importlib.import_module(home), name)


@pytest.mark.parametrize("package", sorted(FACES))
def test_rejects_an_unknown_public_name(package: str) -> None:
    missing = "nope"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        getattr(importlib.import_module(package), missing)


def test_errors_reexports_every_error_class() -> None:
    classes = {
        name
        for name in evictable.model.errors.__all__
        if isinstance(getattr(evictable.model.errors, name), type)
    }
    assert set(evictable.errors.__all__) == classes
    for name in classes:
        assert getattr(evictable.errors, name) is getattr(evictable.model.errors, name)


def test_check_manager_reports_findings_without_raising() -> None:
    from evictable.impl.manager import CPUOffloadingManager
    from evictable.proofs.controls.manager import non_atomic_prepare_load

    good = evictable.testing.check_manager(
        CPUOffloadingManager, examples=10, steps=10, seed=0, explore=False
    )
    assert good.ok and good.findings == ()
    bad = evictable.testing.check_manager(
        non_atomic_prepare_load, contract="safety", errors="any", examples=30, steps=20, seed=0
    )
    assert not bad.ok
    assert evictable.testing.Kind.LEAKED_PIN in {f.kind for f in bad.findings}


def test_rejects_an_unknown_contract_name() -> None:
    from evictable.impl.manager import CPUOffloadingManager

    with pytest.raises(evictable.testing.ContractError, match="unknown contract 'strict'"):
        evictable.testing.check_manager(CPUOffloadingManager, contract="strict")


@pytest.mark.parametrize(
    "module",
    [
        "evictable",
        "evictable.errors",
        "evictable.impl",
        "evictable.model",
        "evictable.testing",
        "evictable.testing.plugin",
    ],
)
def test_the_public_modules_load_neither_z3_nor_the_engines(module: str) -> None:
    probe = (
        f"import sys, {module}\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] == 'z3' "
        "or m.startswith('evictable.proofs'))\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_checkout_without_symlinks_fails_at_the_first_import(tmp_path: Path) -> None:
    package = tmp_path / "evictable"
    package.mkdir()
    shutil.copy(ROOT / "src" / "evictable" / "__init__.py", package / "__init__.py")
    for name in ("model", "impl", "proofs"):
        (package / name).write_text(f"../../{name}", encoding="utf-8")  # what git writes
    out = subprocess.run(
        [sys.executable, "-c", "import evictable"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert "is not a directory (a checkout made without symlinks)" in last
    assert "core.symlinks=true" in last

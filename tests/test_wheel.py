"""The built wheel: one top-level import name, a light implementation, runnable README.

Builds the wheel from this checkout, installs it into a fresh virtual environment
*without its dependencies* and checks, from that environment:

* the wheel's only top-level import name is `evictable` (no `model`, `impl`,
  `proofs` or `bench` that could shadow or be shadowed by other code);
* `import evictable.impl.manager` works and loads neither z3 nor hypothesis (they
  are not even installed there);
* the README's Python examples run against the installed package.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the python of a fresh venv with the wheel installed, no deps)."""
    out = tmp_path_factory.mktemp("wheel")
    # Build from a copy: setuptools writes build/ and *.egg-info into the source tree,
    # which must not race with other tests reading the checkout.
    source = out / "source"
    shutil.copytree(
        ROOT,
        source,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            ".venv*", ".git", "build", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
        ),
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("evictable-*.whl")
    env = out / "venv"
    venv.EnvBuilder(with_pip=True).create(env)
    python = env / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
    )
    return wheel, python


def test_the_only_top_level_name_is_evictable(installed: tuple[Path, Path]) -> None:
    wheel, _ = installed
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
        (top_level,) = [n for n in names if n.endswith("top_level.txt")]
        declared = zf.read(top_level).decode().split()
    assert top == {"evictable"}
    assert declared == ["evictable"]
    assert "evictable/model/lifecycle.py" in names and "evictable/proofs/cli/schema.json" in names
    assert not any(n.startswith(("bench/", "tests/")) for n in names)


def test_the_implementation_loads_neither_z3_nor_hypothesis(installed: tuple[Path, Path]) -> None:
    _, python = installed
    probe = (
        "import sys, evictable.impl.manager, evictable.impl.block_pool, "
        "evictable.impl.lazy_offload\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('z3', 'hypothesis'))\n"
        "print(heavy)\n"
        "print(evictable.impl.manager.__file__)"
    )
    out = subprocess.run([str(python), "-c", probe], check=True, capture_output=True, text=True)
    heavy, where = out.stdout.splitlines()
    assert heavy == "[]"
    assert "site-packages" in where and str(ROOT) not in where


def test_readme_examples_run_from_the_wheel(installed: tuple[Path, Path]) -> None:
    _, python = installed
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "the README has Python examples"
    for block in blocks:
        run = subprocess.run(
            [str(python), "-c", block], capture_output=True, text=True, cwd=python.parent
        )
        assert run.returncode == 0, f"README example failed:\n{block}\n{run.stderr}"

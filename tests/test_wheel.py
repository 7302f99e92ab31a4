"""The built wheel: one top-level import name, a light implementation, runnable README.

Builds the wheel from this checkout, installs it into a fresh virtual environment
*without its dependencies* and checks, from that environment:

* the wheel's only top-level import name is `evictable` (no `model`, `impl`,
  `proofs` or `bench` that could shadow or be shadowed by other code);
* `import evictable.impl.manager` works and loads neither z3 nor hypothesis (they
  are not even installed there);
* the README's Python examples run against the installed package;
* with the dependencies made visible (a `.pth` file naming this interpreter's
  site-packages, nothing installed), a user's test file that asks for the
  `evictable_check` fixture and imports `evictable.testing` passes with no `-p`
  flag (the `pytest11` entry point), and a test file that does not use it sees no
  engine loaded;
* a checkout whose `src/evictable` links are text files (a clone without symlinks)
  does not build: one line says why and how to fix it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
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
    source = _copy(out)
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


def _copy(out: Path) -> Path:
    source = out / "source"
    shutil.copytree(
        ROOT,
        source,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            ".venv*", ".git", "build", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
        ),
    )
    return source


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


USER_TESTS = """
import sys

from evictable.impl.manager import CPUOffloadingManager
from evictable.testing import check_manager


def test_my_manager_with_the_fixture(evictable_check):
    evictable_check(CPUOffloadingManager, "lru", contract="safety", examples=5, steps=5)


def test_my_manager_from_python():
    result = check_manager(CPUOffloadingManager, examples=5, steps=5, explore=False)
    assert result.ok, result.findings
    assert "site-packages" in sys.modules["evictable"].__file__
"""

PLAIN_TESTS = """
import sys


def test_nothing_of_evictable_is_loaded():
    loaded = [m for m in sys.modules if m.startswith("evictable.proofs") or m == "z3"]
    assert loaded == []
"""


def _pytest(python: Path, where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        cwd=where,
        env={"PATH": "/usr/bin:/bin", "HOME": str(where)},
        timeout=600,
    )


def test_the_plugin_and_the_public_face_work_from_the_wheel(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    _, python = installed
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    (purelib / "evictable_test_deps.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8"
    )
    (tmp_path / "test_user.py").write_text(textwrap.dedent(USER_TESTS), encoding="utf-8")
    (tmp_path / "test_plain.py").write_text(textwrap.dedent(PLAIN_TESTS), encoding="utf-8")
    plain = _pytest(python, tmp_path, "test_plain.py")
    assert "1 passed" in plain.stdout, plain.stdout + plain.stderr
    used = _pytest(python, tmp_path, "test_user.py")
    assert "2 passed" in used.stdout, used.stdout + used.stderr
    config = _pytest(python, tmp_path, "--trace-config", "--co", "test_plain.py")
    assert "evictable.testing.plugin" in config.stdout


def test_a_checkout_without_symlinks_does_not_build(tmp_path: Path) -> None:
    source = _copy(tmp_path)
    for name in ("model", "impl", "proofs"):
        link = source / "src" / "evictable" / name
        link.unlink()
        link.write_text(f"../../{name}", encoding="utf-8")  # what git writes without symlinks
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
    )
    assert run.returncode != 0
    out = run.stdout + run.stderr
    assert "evictable: src/evictable/model is not a link to ../../model" in out
    assert "core.symlinks=true" in out
    assert not list(tmp_path.glob("evictable-*.whl"))

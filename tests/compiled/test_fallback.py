"""A compiled build asked for where there is no C compiler installs pure Python, and
says so in one line (docs/performance.md, "The compiled build")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_build_without_a_compiler_falls_back_to_pure_python(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    env = {**os.environ, "EVICTABLE_COMPILE": "1", "CC": str(tmp_path / "no-such-cc")}
    where = ["--build-base", str(tmp_path / "tmp"), "--build-lib", str(lib)]
    build = subprocess.run(
        [sys.executable, "setup.py", "--quiet", "build", *where],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    said = [ln for ln in build.stderr.splitlines() if ln.startswith("evictable: ")]
    assert len(said) == 1 and "building pure Python" in said[0], build.stderr[-2000:]
    assert not list(lib.rglob("*.so"))
    probe = subprocess.run(
        [sys.executable, "-c", "import evictable.impl as i; print(i.COMPILED)"],
        env={**os.environ, "PYTHONPATH": str(lib)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip() == "False"

"""Refuse to build from a checkout whose package links are not directories.

The repository keeps `model/`, `impl/` and `proofs/` as top-level folders and links
them into `src/evictable/` with directory symlinks (docs/architecture.md,
"Packaging"). A clone made without symlinks (`git -c core.symlinks=false clone`,
the default of Git for Windows) turns each link into a small text file; setuptools
would then build a package without them and the install would "succeed". This
check stops the build first, in one line that says how to fix it. Everything else
is in pyproject.toml.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
broken = [
    name
    for name in ("model", "impl", "proofs")
    if not (HERE / "src" / "evictable" / name / "__init__.py").is_file()
]
if broken:
    raise SystemExit(
        f"evictable: src/evictable/{broken[0]} is not a link to ../../{broken[0]} "
        "(this checkout was made without symlinks); clone again with "
        "`git -c core.symlinks=true clone ...` (on Windows: enable Developer Mode or "
        "run as administrator) and install from that checkout"
    )

setup()

"""Refuse to build from a checkout whose package links are not directories; compile
`impl/` with mypyc when asked (`EVICTABLE_COMPILE=1`).

The repository keeps `model/`, `impl/` and `proofs/` as top-level folders and links
them into `src/evictable/` with directory symlinks (docs/architecture.md,
"Packaging"). A clone made without symlinks (`git -c core.symlinks=false clone`,
the default of Git for Windows) turns each link into a small text file; setuptools
would then build a package without them and the install would "succeed". This
check stops the build first, in one line that says how to fix it.

The compiled build (docs/performance.md, "The compiled build"): with
`EVICTABLE_COMPILE=1` in the environment, the modules of `evictable.impl` (never
`model/` or `proofs/`) are compiled with mypyc into C extensions next to their
sources, which stay in the wheel as the fallback. Without a C compiler (or without
mypyc) the build says so in one line and goes on pure Python: a missing compiler
never fails an install. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

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

# The modules compiled by mypyc: all of impl/ but the package __init__ files (they
# only re-export lazily), `_compat` and the policy registry (not on any hot path).
# The list is the one place that says what is compiled.
COMPILED_MODULES = [
    "block",
    "slots",
    "free_queue",
    "block_pool",
    "lazy_offload",
    "batches",
    "manager",
    "manager_checks",
    "refusals",
    "policies/base",
    "policies/lru",
    "policies/rank_index",
    "policies/arc_index",
    "policies/arc_ghosts",
    "policies/arc",
]


def _fallback(why: object) -> None:
    print(f"evictable: building pure Python (no compiled impl/: {why})", file=sys.stderr)


class OptionalBuildExt(build_ext):
    """build_ext that falls back to pure Python when the C build fails."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, no headers, a failed link: go pure
            for output in self.get_outputs():
                Path(output).unlink(missing_ok=True)
            self.extensions = []
            self.distribution.ext_modules = []
            _fallback(f"{type(exc).__name__}: {exc}".splitlines()[0])


_COMPILE = os.environ.get("EVICTABLE_COMPILE", "") in ("1", "true", "yes")


def _compiled_extensions() -> list[object]:
    if not _COMPILE:
        return []
    try:
        from mypyc.build import mypycify
    except ImportError as exc:
        _fallback(f"mypyc is not installed ({exc})")
        return []
    paths = [f"src/evictable/impl/{name}.py" for name in COMPILED_MODULES]
    try:
        return list(mypycify(paths, opt_level="3", target_dir="build/mypyc"))
    except (Exception, SystemExit) as exc:  # mypy errors end in SystemExit
        _fallback(f"mypyc failed ({exc})")
        return []


def _needs_mypy() -> bool:
    """Under build isolation mypy is not there yet: ask the build frontend for it."""
    if not _COMPILE:
        return False
    try:
        import mypyc  # noqa: F401
    except ImportError:
        return True
    return False


setup(
    ext_modules=_compiled_extensions(),  # type: ignore[arg-type]
    cmdclass={"build_ext": OptionalBuildExt},
    # Under build isolation, mypyc comes with mypy (asked for only when compiling).
    setup_requires=["mypy>=1.10"] if _needs_mypy() else [],
)

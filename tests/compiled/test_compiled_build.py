"""The engines against the compiled build of `impl/` (docs/performance.md, "The compiled
build"): the same tests, the same verdicts.

`make compiled` builds the whole package into `build/compiled`, `impl/` compiled by
mypyc. Each leg below runs a chosen set of this suite's engine tests in a second
pytest process with that directory first on the path (`PYTHONPATH`), and with
`EVICTABLE_EXPECT_BUILD=compiled`, which makes the inner run refuse to start unless
`evictable.impl.COMPILED` is true there (its header names the build). The legs are
separate tests so that `-n 2` runs two of them at once.

Without a compiled build every leg is skipped, with the reason; with
`EVICTABLE_REQUIRE_COMPILED=1` (CI, where gcc exists) a missing build fails instead.
A build older than the sources fails: it would test yesterday's code.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "compiled"
STAMP = BUILD / ".built"

LEGS: dict[str, tuple[str, ...]] = {
    # the conformance machines (model vs impl lock-step under Hypothesis), with faults
    # injected and copies (deepcopy, pickle) checked at every step
    "conformance": (
        "tests/stateful",
        "tests/proofs/lockstep/test_conformance_engine.py",
    ),
    # the explorer's impl lock-step, breadth-first, and the GPU-side contracts
    "explorer": (
        "tests/proofs/explore/test_explore.py",
        "tests/proofs/explore/test_explore_gpu.py",
        "tests/proofs/lockstep/test_gpu_contracts.py",
    ),
    # fault injection in every policy hook (all-or-nothing), copy/pickle round trips
    "faults_and_copies": (
        "tests/impl/test_impl_manager.py",
        "tests/impl/test_lru_policy.py",
        "tests/impl/test_arc_policy.py",
        "tests/impl/test_free_queue.py",
        "tests/impl/test_block_pool.py",
        "tests/impl/test_lazy_offload.py",
    ),
    # the seeded-bug hunt (every control caught, the unbroken implementation passes),
    # the probes and the own-table managers (interpreted subclasses of compiled classes),
    # then the mutants' structure, after the hunt (`issubclass(mutant, ARCCachePolicy)`
    # read ABC caches that every compiled class shared until `own_abc_caches`)
    "seeded_bugs": (
        "tests/proofs/controls/test_seeded_bugs.py",
        "tests/proofs/lockstep/test_probes.py",
        "tests/proofs/controls/test_mutant.py",
    ),
}


def _built() -> bool:
    return STAMP.is_file() and any(BUILD.glob("evictable/impl/*.so"))


def _newest_source() -> float:
    return max(
        p.stat().st_mtime
        for top in ("impl", "model", "proofs", "src")
        for p in (ROOT / top).rglob("*.py")
    )


@pytest.mark.parametrize("leg", sorted(LEGS))
def test_the_engines_pass_on_the_compiled_build(leg: str) -> None:
    if not _built():
        if os.environ.get("EVICTABLE_REQUIRE_COMPILED") == "1":
            pytest.fail("EVICTABLE_REQUIRE_COMPILED=1 but there is no compiled build")
        pytest.skip("compiled build not built: run `make compiled`")
    if STAMP.stat().st_mtime < _newest_source():
        pytest.fail("the compiled build is older than the sources: run `make compiled`")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(BUILD), os.environ.get("PYTHONPATH", "")]),
        "EVICTABLE_EXPECT_BUILD": "compiled",
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *LEGS[leg]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    header = next((ln for ln in run.stdout.splitlines() if "evictable.impl build" in ln), "")
    if run.returncode != 0 or "compiled (mypyc)" not in header:
        tail = "\n".join(run.stdout.splitlines()[-60:])
        pytest.fail(
            f"compiled leg {leg!r} (exit {run.returncode}):\n{header}\n{tail}\n{run.stderr[-2000:]}"
        )

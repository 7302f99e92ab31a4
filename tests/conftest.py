"""Hypothesis profiles: `ci` (derandomized, bounded; chosen when CI=true), `dev`, `thorough`.

Pick one with HYPOTHESIS_PROFILE=dev|ci|thorough; the default is `ci` under CI and
`dev` otherwise. Every profile runs on the engines' reproducible backend
(`evictable.proofs.lockstep.settings`): a test's examples do not depend on which
modules other tests imported before it.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from evictable.proofs.lockstep.settings import BACKEND

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=60,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    backend=BACKEND,
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    backend=BACKEND,
)
settings.register_profile(
    "thorough",
    deadline=None,
    max_examples=2000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    backend=BACKEND,
)

_default = "ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "dev"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", _default))


def pytest_report_header(config: object) -> str:
    """Which build of `evictable.impl` this run imports (docs/performance.md)."""
    import evictable.impl

    build = "compiled (mypyc)" if evictable.impl.COMPILED else "pure Python"
    return f"evictable.impl build: {build}, from {os.path.dirname(evictable.impl.__file__ or '')}"


def pytest_configure(config: object) -> None:
    """A run asked for the compiled build (EVICTABLE_EXPECT_BUILD=compiled, set by
    tests/compiled) refuses to start on the pure one: it would pass for the wrong reason."""
    import evictable.impl

    expected = os.environ.get("EVICTABLE_EXPECT_BUILD", "")
    if expected == "compiled" and not evictable.impl.COMPILED:
        raise RuntimeError("EVICTABLE_EXPECT_BUILD=compiled, but evictable.impl is pure Python")

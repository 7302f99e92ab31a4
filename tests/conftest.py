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

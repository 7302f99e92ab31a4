"""The Hypothesis settings of an engine run, and a provider that keeps seeds reproducible.

Both engines (`lockstep.conformance` for the CPU manager, `lockstep.gpu_machines`
for the free queue and block pool) run a `RuleBasedStateMachine` with
`run_state_machine_as_test` and report a divergence themselves, so Hypothesis is
kept quiet: no deadline, no example database, no health checks, no blob printing,
one bug per run.

**Reproducible seeds.** Hypothesis's own provider now and then draws a literal
constant instead of a random value, from a pool that includes every constant in the
source of every *local* module imported so far. The same seed then gives another
run depending on what the process imported before (a test run after another
test's imports, `evictable check` after `verify`). `ReproducibleProvider` is that
provider with Hypothesis's built-in constants only; the engines run on it (backend
`BACKEND`), and the test suite's Hypothesis profiles do too, so a seed means the
same run in any process. (It relies on Hypothesis internals; where they are
missing, the default backend is used and this guarantee is lost.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, settings

__all__ = ["BACKEND", "engine_settings"]

BACKEND = "hypothesis"
"""The Hypothesis backend of every engine run (`evictable-reproducible` when available)."""

try:
    from hypothesis.internal.conjecture.choice import choice_constraints_key, choice_permitted
    from hypothesis.internal.conjecture.providers import (
        AVAILABLE_PROVIDERS,
        GLOBAL_CONSTANTS,
        HypothesisProvider,
    )
except ImportError:  # pragma: no cover - a Hypothesis without these internals
    pass
else:
    _POOLS: dict[Any, tuple[Any, ...]] = {}

    class ReproducibleProvider(HypothesisProvider):
        """Hypothesis's provider, drawing constants from its built-in pool only (never
        from the constants of whatever local modules happen to be imported)."""

        def _maybe_draw_constant(
            self, choice_type: Any, constraints: Any, *, p: float = 0.05
        ) -> Any:
            rnd = self._random
            if rnd is None or rnd.random() > p:
                return None
            key = (choice_type, choice_constraints_key(choice_type, constraints))
            pool = _POOLS.get(key)
            if pool is None:
                pool = _POOLS[key] = tuple(
                    c
                    for c in GLOBAL_CONSTANTS.set_for_type(choice_type)
                    if choice_permitted(c, constraints)
                )
            return rnd.choice(pool) if pool else None

    AVAILABLE_PROVIDERS["evictable-reproducible"] = ReproducibleProvider
    BACKEND = "evictable-reproducible"


def engine_settings(
    examples: int, steps: int, *, derandomize: bool, phases: Sequence[Phase]
) -> settings:
    """Quiet settings for `examples` runs of at most `steps` steps each."""
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        derandomize=derandomize,
        print_blob=False,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
        phases=tuple(phases),
        backend=BACKEND,
    )

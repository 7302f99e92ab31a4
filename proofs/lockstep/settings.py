"""The Hypothesis settings of a conformance engine run outside pytest.

Both engines (`lockstep.conformance` for the CPU manager, `lockstep.gpu_machines` for
the free queue and block pool) run a `RuleBasedStateMachine` with
`run_state_machine_as_test` and report a divergence themselves, so Hypothesis is
kept quiet: no deadline, no example database, no health checks, no blob printing,
one bug per run.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import HealthCheck, Phase, Verbosity, settings

__all__ = ["engine_settings"]


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
    )

"""The conformance engine inside your own pytest run: what the `evictable_check`
fixture does.

The fixture and the `--evictable-seed` option are registered by the pytest plugin
`evictable.testing.plugin` (a `pytest11` entry point: installed with evictable, no
`-p` flag or `pytest_plugins` line needed); it imports this module only when a test
asks for the fixture, so a project that does not use it pays nothing. A test:

    def test_my_manager_is_safe(evictable_check):
        evictable_check(my_factory, policy="lru", contract="safety", errors="any")

* **Sizes follow the Hypothesis profile in force** (`settings.load_profile(...)`,
  `--hypothesis-profile`): `max_examples` examples of `stateful_step_count` steps.
* **Seeds**: `--evictable-seed N` (or Hypothesis's own `--hypothesis-seed N`)
  fixes the run; a derandomized profile uses seed 0; otherwise a fresh seed is
  drawn. The failure message prints the seed and the command line that reproduces
  the run.
* `explore=True` also runs the explorer (exhaustive for small bounds, slower).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import settings

from evictable.proofs.base.contract import Contract, ContractError, resolve
from evictable.proofs.base.findings import findings_block
from evictable.proofs.base.profiles import profile
from evictable.proofs.base.protocol import Factory
from evictable.proofs.check.manager import run_check

__all__ = ["checker", "seed_for"]


def _profile() -> settings:
    """The Hypothesis settings in force (the loaded profile)."""
    current = settings.default
    return current if current is not None else settings()


def seed_for(config: pytest.Config) -> int:
    """The run's seed: --evictable-seed, else --hypothesis-seed, else 0 for a
    derandomized profile, else a fresh one."""
    for option in ("evictable_seed", "hypothesis_seed"):
        try:
            value = config.getoption(option)
        except ValueError:
            continue
        if value is not None:
            return int(value)
    if _profile().derandomize:
        return 0
    return secrets.randbelow(2**32)


def checker(request: pytest.FixtureRequest) -> Callable[..., None]:
    """The `evictable_check` callable of one test: `evictable_check(factory,
    policy="lru", *, contract=None, errors=None, black_box=None, valid_only=None,
    explore=False, examples=None, steps=None, **choices)` runs the engines and fails
    the test with every finding and the seed."""
    seed = seed_for(request.config)

    def run(
        factory: Factory,
        policy: str | None = None,
        *,
        contract: Contract | str | None = None,
        errors: str | None = None,
        black_box: bool | None = None,
        valid_only: bool | None = None,
        explore: bool = False,
        examples: int | None = None,
        steps: int | None = None,
        **choices: Any,
    ) -> None:
        try:
            chosen = (
                contract
                if isinstance(contract, Contract)
                else resolve(
                    factory,
                    mode=contract,
                    errors=errors,
                    black_box=black_box,
                    valid_only=valid_only,
                    **choices,
                )
            )
        except ContractError as exc:
            raise pytest.UsageError(f"evictable_check: {exc}") from None
        name = str(policy or getattr(factory, "evictable_policy", "lru"))
        current = _profile()
        n = examples if examples is not None else current.max_examples
        k = steps if steps is not None else current.stateful_step_count
        result = run_check(
            factory,
            name,
            chosen,
            n,
            k,
            seed,
            profile(name).check if explore else None,
            workers=1,
        )
        record = result.conformance
        if record.status == "error":
            pytest.fail(f"evictable_check could not run: {record.reason}", pytrace=False)
        if result.findings:
            where = request.node.nodeid
            pytest.fail(
                f"{findings_block(result.findings)}\n\n{chosen.describe()}; "
                f"{record.examples_run} examples, {record.steps_run} steps; seed {seed}\n"
                f"reproduce with: pytest {where!r} --evictable-seed {seed}",
                pytrace=False,
            )

    return run

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

from evictable.proofs.base.contract import Contract, ContractError
from evictable.proofs.base.findings import findings_block
from evictable.proofs.base.protocol import Factory
from evictable.proofs.check.pipeline import Request, Subject, check
from evictable.proofs.check.setup import SetupError

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


def _name(factory: object) -> str:
    return str(getattr(factory, "__qualname__", None) or type(factory).__name__)


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
        current = _profile()
        ask = Request(
            _name(factory),
            "manager",
            choices={
                "mode": contract if isinstance(contract, str) else None,
                "errors": errors,
                "black_box": black_box,
                "valid_only": valid_only,
                **choices,
            },
            policy=policy,
            examples=examples if examples is not None else current.max_examples,
            steps=steps if steps is not None else current.stateful_step_count,
            seed=seed,
            workers=1,
            explore=explore,
            contract=contract if isinstance(contract, Contract) else None,
        )
        try:
            checked = check(ask, Subject(ask.spec, factory))
        except SetupError as exc:
            if isinstance(exc.__cause__, ContractError):  # a bad choice of the test's
                raise pytest.UsageError(f"evictable_check: {exc}") from None
            pytest.fail(f"evictable_check could not run: {exc}", pytrace=False)
        if checked.run.error is not None:
            pytest.fail(f"evictable_check could not run: {checked.run.error}", pytrace=False)
        if checked.findings:
            record = checked.run.detail.conformance
            where = request.node.nodeid
            pytest.fail(
                f"{findings_block(checked.findings)}\n\n{checked.contract.describe()}; "
                f"{record.examples_run} examples, {record.steps_run} steps; seed {seed}\n"
                f"reproduce with: pytest {where!r} --evictable-seed {seed}",
                pytrace=False,
            )

    return run

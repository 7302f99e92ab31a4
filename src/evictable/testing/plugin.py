"""The pytest plugin of evictable: the `evictable_check` fixture and `--evictable-seed`.

Registered through the `pytest11` entry point `evictable`, so it is active in every
pytest run of an environment where evictable is installed. It costs nothing and
changes nothing unless a test asks for `evictable_check`: importing it loads neither
z3 nor the engines, it adds no autouse fixture and no hook beyond the one option;
the engines are imported when the fixture is first used (docs/conformance.md,
"Checking a manager you did not write").
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

__all__ = ["evictable_check", "pytest_addoption"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evictable")
    group.addoption(
        "--evictable-seed",
        type=int,
        default=None,
        help="seed of every evictable_check run (printed on failure)",
    )


@pytest.fixture
def evictable_check(request: pytest.FixtureRequest) -> Callable[..., None]:
    """`evictable_check(factory, policy="lru", *, contract=None, errors=None,
    black_box=None, valid_only=None, explore=False, examples=None, steps=None,
    **choices)`: run the conformance engine (and, with `explore=True`, the explorer)
    against `factory`; fail the test with every finding, the seed and the command
    that reproduces the run."""
    from evictable.proofs.check.plugin import checker

    return checker(request)

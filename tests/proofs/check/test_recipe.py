"""The property-test recipe of docs/conformance.md ("In your own test suite") finds
the planted bug of the docs' own example (`examples/third_party_lru.py`) at
Hypothesis's default example count, finds a `complete_load` that forgets to put the
block back on the evictable list, and passes the same manager with its bug fixed;
`check_calls` refuses a manager without `snapshot()` with the options that work."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, settings

from evictable.proofs.base.contract import ContractError
from evictable.proofs.lockstep.inputs import Call
from evictable.testing import check_calls
from examples.third_party_lru import make_manager
from tests.proofs.check import hostile

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs" / "conformance.md"


def recipe() -> str:
    """The recipe's code, as the docs show it."""
    text = DOCS.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    (code,) = [b for b in blocks if "def test_agrees_with_the_model" in b]
    return str(code)


def run_recipe(factory: Callable[..., Any]) -> None:
    """The docs' test, with `factory` for the docs' `make_manager`, at Hypothesis's
    default example count (derandomized, so that the test is the same every run;
    without shrinking: finding is what is measured)."""
    space: dict[str, Any] = {}
    exec(compile(recipe(), str(DOCS), "exec"), space)
    space["make_manager"] = factory
    test = space["test_agrees_with_the_model"]
    default = settings.get_profile("default").max_examples
    assert default == 100
    config = settings(
        max_examples=default,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.explicit, Phase.generate),
    )
    config(test)()


def test_the_recipe_uses_the_docs_example() -> None:
    code = recipe()
    assert "from examples.third_party_lru import make_manager" in code
    assert 'black_box=True, errors="any"' in code


def test_the_recipe_finds_the_docs_planted_bug() -> None:
    with pytest.raises(AssertionError, match=r"evicted b'k\d' while it is LOADING"):
        run_recipe(make_manager)


def test_the_recipe_finds_a_load_end_that_forgets_the_evictable_list() -> None:
    with pytest.raises(AssertionError, match="counters"):
        run_recipe(hostile.forgets_relist)


def test_the_recipe_passes_the_example_with_its_bug_fixed() -> None:
    run_recipe(hostile.correct)


def test_check_calls_says_what_a_manager_without_snapshot_needs() -> None:
    calls = [Call.keys("prepare_store", [b"k0"])]
    with pytest.raises(ContractError, match=r'black_box=True, errors="any"'):
        check_calls(make_manager, calls, contract="safety")
    assert check_calls(make_manager, calls, contract="safety", black_box=True) is None

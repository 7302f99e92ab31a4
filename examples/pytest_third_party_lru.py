"""The pytest plugin on a manager you did not write (docs/conformance.md).

`pytest examples/pytest_third_party_lru.py` fails, on purpose: the manager of
`examples/third_party_lru.py` evicts a block while it is being loaded. (The file is
not named `test_*.py`, so that the project's own test run does not collect it.)
"""

from collections.abc import Callable

from examples.third_party_lru import make_manager


def test_third_party_lru_is_safe(evictable_check: Callable[..., None]) -> None:
    evictable_check(
        make_manager,
        contract="safety",  # any legal victims and slots
        errors="any",  # any exception type where the model refuses a call
        black_box=True,  # no snapshot(): observe it through its API only
        valid_only=True,  # valid calls only
        examples=100,  # small sizes, so that the docs' transcript is cheap
        steps=20,
    )

"""Hypothesis strategies for manager calls, exported for your own property tests.

The conformance engine draws its calls inside a state machine; these strategies
draw the same kinds of input as plain values, so a test suite can build its own
properties around them and replay them against the model with `check_calls`:

    from hypothesis import given
    from evictable.testing import call_sequences, check_calls

    @given(call_sequences())
    def test_my_manager_agrees_with_the_model(calls):
        failure = check_calls(my_factory, calls, num_blocks=3, contract="safety")
        assert failure is None, failure.text()

* `keys(space)` -- a key of the pool (`contract.KeySpace`: the engines' keys, or
  the caller's own format, e.g. vLLM's `VLLM_KEYS`);
* `key_batches(space)` -- a batch of distinct keys (duplicates with
  `duplicates=True`);
* `calls(space)` -- one manager call (`inputs.Call`) of any method;
* `call_sequences(space)` -- a list of calls;
* `check_calls(factory, calls, ...)` -- make them on the model and on
  `factory(num_blocks, policy, enable_events)` under a contract; the first failure
  (a `manager.ConformanceFailure`, with its class and trace) or None.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from evictable.model.types import Key
from evictable.proofs.base.contract import DEFAULT, Contract, KeySpace, resolve
from evictable.proofs.base.faults import PLAN
from evictable.proofs.base.protocol import Factory
from evictable.proofs.lockstep.inputs import KEYS, Call
from evictable.proofs.lockstep.manager import ConformanceFailure, LockStep, Start, Step

__all__ = ["call_sequences", "calls", "check_calls", "key_batches", "keys"]

_METHODS = ("prepare_store", "complete_store", "prepare_load", "complete_load", "touch")


def keys(space: KeySpace = DEFAULT.keys, n: int = len(KEYS)) -> st.SearchStrategy[Key]:
    """A key of the space's pool of `n` keys (few keys: hits and evictions are common)."""
    return st.sampled_from(space.pool(n))


def key_batches(
    space: KeySpace = DEFAULT.keys, max_size: int = 4, duplicates: bool = False
) -> st.SearchStrategy[list[Key]]:
    """A batch of keys (distinct unless `duplicates`)."""
    return st.lists(keys(space), max_size=max_size, unique=not duplicates)


@st.composite
def _call(draw: Any, space: KeySpace, max_size: int, duplicates: bool) -> Call:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return Call.plain("lookup", draw(keys(space)))
    if kind == 1:
        return Call.plain(draw(st.sampled_from(("reset_cache", "take_events"))))
    method = draw(st.sampled_from(_METHODS))
    batch = draw(key_batches(space, max_size, duplicates))
    if method == "complete_store":
        return Call.keys(method, batch, success=draw(st.booleans()))
    return Call.keys(method, batch)


def calls(
    space: KeySpace = DEFAULT.keys, max_size: int = 4, duplicates: bool = False
) -> st.SearchStrategy[Call]:
    """One manager call: a key-batch method, `lookup`, `reset_cache` or `take_events`."""
    return _call(space, max_size, duplicates)


def call_sequences(
    space: KeySpace = DEFAULT.keys,
    max_calls: int = 30,
    max_size: int = 4,
    duplicates: bool = False,
) -> st.SearchStrategy[list[Call]]:
    """A sequence of up to `max_calls` calls."""
    return st.lists(calls(space, max_size, duplicates), max_size=max_calls)


def check_calls(
    factory: Factory,
    sequence: Sequence[Call],
    num_blocks: int = 3,
    policy: str = "lru",
    enable_events: bool = False,
    contract: Contract | str | None = None,
    **choices: Any,
) -> ConformanceFailure | None:
    """Make `sequence` on the model and on the factory's manager, compared under a
    contract (None: the factory's declared one; a mode name such as "safety"; plus
    any `contract.resolve` choices); the first failure, or None."""
    if isinstance(contract, Contract):
        chosen = contract
    else:
        chosen = resolve(factory, mode=contract, **choices)
    lock = LockStep(factory, policy, None, PLAN, contract=chosen)
    try:
        lock.apply(Start(num_blocks, enable_events, False))
        for call in sequence:
            lock.apply(Step(call))
    except ConformanceFailure as failure:
        return failure
    return None

"""Hypothesis strategies for manager calls, exported for your own property tests.

The conformance engine draws its calls inside a state machine; these strategies
draw the same kinds of input as plain values, so a test suite can build its own
properties around them and replay them against the model with `check_calls`:

    from hypothesis import given
    from evictable.testing import call_sequences, check_calls

    @given(call_sequences())
    def test_my_manager_agrees_with_the_model(calls):
        failure = check_calls(my_factory, calls, contract="safety")
        assert failure is None, failure.text()

* `keys(space)` -- a key of the pool (`contract.KeySpace`: the engines' keys, or
  the caller's own format, e.g. vLLM's `VLLM_KEYS`);
* `key_batches(space)` -- a batch of distinct keys (duplicates with
  `duplicates=True`);
* `calls(space)` -- one manager call (`inputs.Call`) of any method, drawn blind;
* `call_sequences(space, num_blocks=3)` -- a list of calls that goes somewhere: it
  is drawn against the model of a manager of `num_blocks` blocks, so that most calls
  act on keys in the state that makes them interesting -- stores of absent keys,
  commits of pending ones, loads of resident ones, ends of loads in flight -- with
  some blind calls mixed in. Over 1,000 sequences of the default settings
  (`tests/proofs/lockstep/test_strategies.py` measures it), 78% make a load, 59%
  end one, 65% make a store that evicts and 55% make a store that needs room while
  a block is pinned (the state where an unsafe manager evicts it); their median
  length is 15.5 calls;
* `check_calls(factory, calls, ...)` -- make them on the model and on
  `factory(num_blocks, policy, enable_events)` under a contract; the first failure
  (a `manager.ConformanceFailure`, with its class and trace) or None. A manager
  without `snapshot()` is refused at once, with the options that check it through
  its API (`black_box=True`, and `errors="any"` for one that raises its own
  exceptions).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from evictable.model.lifecycle import CpuState
from evictable.model.manager import ModelManager
from evictable.model.types import Key
from evictable.proofs.base.compare import Errors, invoke
from evictable.proofs.base.contract import DEFAULT, Contract, ContractError, KeySpace, resolve
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
def _call(draw: Any, space: KeySpace, max_size: int, duplicates: bool, n: int = len(KEYS)) -> Call:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return Call.plain("lookup", draw(keys(space, n)))
    if kind == 1:
        return Call.plain(draw(st.sampled_from(("reset_cache", "take_events"))))
    method = draw(st.sampled_from(_METHODS))
    batch = draw(st.lists(keys(space, n), max_size=max_size, unique=not duplicates))
    if method == "complete_store":
        return Call.keys(method, batch, success=draw(st.booleans()))
    return Call.keys(method, batch)


def calls(
    space: KeySpace = DEFAULT.keys, max_size: int = 4, duplicates: bool = False
) -> st.SearchStrategy[Call]:
    """One manager call: a key-batch method, `lookup`, `reset_cache` or `take_events`
    (drawn blind: its keys are not chosen for the state they are in)."""
    return _call(space, max_size, duplicates)


_MOVES = (
    "store and commit",
    "load and end",
    "load, then store",
    "end loads",
    "load",
    "store",
    "commit",
    "store among residents",
    "touch",
    "lookup",
    "take events",
    "blind",
)
"""The moves of `call_sequences` (a move that cannot be made in the state -- a load
with nothing resident -- is a store and commit instead)."""


_CHOICE = st.integers(0, 2**24 - 1)
"""One draw per move: every choice of the move is taken from it in turn (`_Picks`).
One fixed strategy, few draws: a strategy made afresh for every draw, or many small
draws, make Hypothesis slow to generate and to shrink a sequence."""


class _Picks:
    """The choices of one move, taken from one drawn integer (the simplest, 0, makes
    every choice its first option)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def pick(self, options: int) -> int:
        self.value, got = divmod(self.value, max(1, options))
        return got

    def batch(self, preferred: Sequence[Key], largest: int) -> list[Key]:
        """Distinct keys of `preferred`, at least one and at most `largest`: a run of
        them from a chosen place, forwards or backwards."""
        n = len(preferred)
        size = 1 + self.pick(min(largest, n))
        start, step = self.pick(n), 1 - 2 * self.pick(2)
        return [preferred[(start + step * i) % n] for i in range(size)]


def _moves(
    draw: Any, model: ModelManager, pool: Sequence[Key], max_size: int, turn: int
) -> list[Call]:
    """One move: one or two calls, mostly on keys in the state that makes them
    interesting (the model's). The `turn`-th move counts from a different first move,
    so that even the simplest draws (all zero) go through every kind of move."""
    states: dict[CpuState, list[Key]] = {}
    for e in sorted(model.snapshot().blocks, key=lambda e: e.slot):
        states.setdefault(e.state, []).append(e.key)
    resident = [k for ks in states.values() for k in ks]
    absent = [k for k in pool if k not in resident]
    pending = states.get(CpuState.PENDING, [])
    idle = states.get(CpuState.READY, []) + states.get(CpuState.LOADING, [])
    loading = states.get(CpuState.LOADING, [])
    room = min(max_size, model.num_blocks + 1)  # now and then one more than fits
    p = _Picks(draw(_CHOICE))
    move = _MOVES[(p.pick(len(_MOVES)) + turn) % len(_MOVES)]
    if move == "load" and idle:
        return [Call.keys("prepare_load", p.batch(idle, max_size))]
    if move == "end loads" and loading:
        return [Call.keys("complete_load", p.batch(loading, max_size))]
    if move == "store" and absent:
        return [Call.keys("prepare_store", p.batch(absent, room))]
    if move == "commit" and pending:
        success = p.pick(4) != 3
        return [Call.keys("complete_store", p.batch(pending, max_size), success=success)]
    if move == "load and end" and idle:
        batch = p.batch(idle, max_size)
        return [Call.keys("prepare_load", batch), Call.keys("complete_load", batch)]
    if move == "load, then store" and idle and absent:  # a store while a block is pinned
        return [
            Call.keys("prepare_load", p.batch(idle, max_size)),
            Call.keys("prepare_store", p.batch(absent, room)),
        ]
    if move == "store among residents" and absent and resident:
        batch = p.batch(absent, room)
        batch.insert(p.pick(len(batch) + 1), resident[p.pick(len(resident))])
        return [Call.keys("prepare_store", batch)]
    if move == "touch":
        return [Call.keys("touch", p.batch(pool, max_size))]
    if move == "lookup":
        return [Call.plain("lookup", pool[p.pick(len(pool))])]
    if move == "take events":
        return [Call.plain("take_events")]
    if move == "blind":
        space = KeySpace(lambda i: pool[i % len(pool)])
        return [draw(_call(space, max_size, False, len(pool)))]
    batch = p.batch(absent or list(pool), min(room, max(1, model.num_blocks)))
    return [Call.keys("prepare_store", batch), Call.keys("complete_store", batch)]


@st.composite
def _sequence(
    draw: Any, space: KeySpace, num_blocks: int, n_keys: int, max_calls: int, max_size: int
) -> list[Call]:
    pool = space.pool(n_keys)
    model = ModelManager(num_blocks, "lru", False)
    out: list[Call] = []
    length = draw(st.integers(min(6, max_calls), max_calls))  # shrinks towards short
    turn = 0
    while len(out) < length:
        turn += 1
        for call in _moves(draw, model, pool, max_size, turn - 1)[: length - len(out)]:
            args, kwargs = call.build()
            invoke(getattr(model, call.method), *args, **kwargs)
            out.append(call)
    return out


def call_sequences(
    space: KeySpace = DEFAULT.keys,
    max_calls: int = 30,
    max_size: int = 4,
    duplicates: bool = False,
    num_blocks: int = 3,
    n_keys: int | None = None,
) -> st.SearchStrategy[list[Call]]:
    """A sequence of up to `max_calls` calls, drawn against the model of a manager of
    `num_blocks` blocks (the `num_blocks` of `check_calls`) over `n_keys` keys
    (default: twice as many as blocks); see the module docstring. `duplicates`: also
    blind calls with a repeated key."""
    if duplicates:
        blind = st.lists(calls(space, max_size, True), max_size=max_calls)
        drawn = _sequence(space, num_blocks, n_keys or 2 * max(num_blocks, 1), max_calls, max_size)
        return st.one_of(drawn, blind)
    return _sequence(space, num_blocks, n_keys or 2 * max(num_blocks, 1), max_calls, max_size)


_PROBED: dict[int, str] = {}
"""Factories already found to have a `snapshot()` (by id): probed once."""


def _needs(factory: Factory, contract: Contract, made: Any) -> str:
    """Why `check_calls` cannot compare snapshots of what `factory` makes ("" if it can)."""
    if contract.black_box or callable(getattr(made, "snapshot", None)):
        return ""
    name = getattr(factory, "__qualname__", None) or type(made).__name__
    errors = ', errors="any"' if contract.errors is not Errors.ANY else ""
    return (
        f"check_calls: {type(made).__module__}.{type(made).__qualname__} (made by {name}) has "
        f"no snapshot(), which the {contract.mode.value} contract compares: check it through "
        f'its API alone with check_calls(factory, calls, contract="safety", black_box=True'
        f'{errors}) -- errors="any" when it raises exceptions of its own '
        '(docs/conformance.md, "In your own test suite")'
    )


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
    any `contract.resolve` choices: `black_box=True`, `errors="any"`, ...); the first
    failure, or None. Raises `ContractError` (a `ValueError`) for a manager the
    contract cannot observe -- no `snapshot()` without `black_box=True` -- saying
    which options would work."""
    if isinstance(contract, Contract):
        chosen = contract
    else:
        chosen = resolve(factory, mode=contract, **choices)
    key = id(factory)
    if not chosen.black_box and key not in _PROBED:
        why = _needs(factory, chosen, factory(num_blocks, policy, enable_events))
        if why:
            raise ContractError(why)
        _PROBED[key] = ""
    lock = LockStep(factory, policy, None, PLAN, contract=chosen)
    try:
        lock.apply(Start(num_blocks, enable_events, False))
        for call in sequence:
            lock.apply(Step(call))
    except ConformanceFailure as failure:
        return failure
    return None

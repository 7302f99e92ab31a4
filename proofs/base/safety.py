"""The safety contract's model: the reference manager, nondeterministic where policies differ.

Under the safety contract (docs/conformance.md, "Contracts") an implementation may
legitimately choose differently from this project's design wherever a policy is
free to:

* **which victims**: any blocks that are resident, idle (READY), not among the
  call's keys and of the right number (`need` = keys to store - free slots);
  `prepare_store` succeeds exactly when enough such blocks exist;
* **which slots**: any free slots (slots stay a partition: none used twice, none
  lost); fresh-first / LIFO reuse is not required;
* **recency**: the order in which idle blocks would be evicted is not compared.

`FollowingModel` is `model.manager.ModelManager` with those choices left open: its
policy (`ChoicePolicy`) knows only which keys are idle, and before each call it is
told what the implementation answered (`follow`): the victims and the slots the
implementation chose. When they are legal, the model makes exactly those choices;
when they are not, it falls back to a choice of its own (the lowest free slot, the
oldest idle key), so its answer differs from the implementation's and the
comparison reports why. Every per-key transition, validation and rejection is still
the model's own (the lifecycle table): only the choices are followed.

**Duplicate batches.** The model rejects a batch with a repeated key. Under the
safety contract an implementation may instead refuse it without changing anything
(any exception the error contract accepts, or `None` from `prepare_store`), *or*
process it as its occurrences in order (`sequential`): a store call acts on each key
once (a repeat finds it already resident or already committed), a load call pins
or releases once per occurrence -- all-or-nothing, as every call.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence, Set
from typing import Any

from evictable.model.errors import DuplicateKeysError
from evictable.model.manager import ModelManager
from evictable.model.policy import RefOf
from evictable.model.types import Key, ManagerSnapshot, OpaquePolicySnapshot, SlotId
from evictable.model.vllm033 import Request, Vllm033Manager
from evictable.proofs.base.compare import Errors, Reply, invoke, same_error

__all__ = [
    "ChoicePolicy",
    "ChoicePolicy033",
    "FollowingModel",
    "FollowingVllm033",
    "answer",
    "refusal",
    "sequential",
]

Built = tuple[tuple[Any, ...], dict[str, Any]]


class ChoicePolicy:
    """A `model.policy.ModelPolicy` without recency: the idle keys, and the victims to
    take when the implementation's choice (`hint`) is legal."""

    name = "choice"

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.idle: dict[Key, None] = {}  # insertion order: the fallback's choice
        self.hint: list[Key] | None = None

    def insert(self, key: Key) -> None:
        """A key became resident (PENDING): not idle yet."""

    def remove(self, key: Key) -> None:
        """A PENDING key left: it was never idle."""

    def mark_evictable(self, key: Key) -> None:
        self.idle[key] = None

    def mark_non_evictable(self, key: Key) -> None:
        self.idle.pop(key, None)

    def touch(self, keys: Sequence[Key], ref_of: RefOf) -> None:
        """Recency is not modelled under the safety contract."""

    def evict(self, n: int, protected: Set[Key], ref_of: RefOf) -> list[Key] | None:
        """`n` idle unprotected keys -- the hinted ones when they are exactly such keys
        -- removed; None when fewer than `n` exist (then nothing changes)."""
        eligible = [k for k in self.idle if k not in protected]
        if len(eligible) < n:
            return None
        hint = self.hint
        legal = (
            hint is not None
            and len(hint) == n
            and len(set(hint)) == n
            and all(k in self.idle and k not in protected for k in hint)
        )
        victims = list(hint) if legal and hint is not None else eligible[:n]
        for key in victims:
            del self.idle[key]
        return victims

    def clear(self) -> None:
        self.idle.clear()

    def snapshot(self) -> OpaquePolicySnapshot:
        return OpaquePolicySnapshot(self.name, ())


class FollowingModel(ModelManager):
    """The reference manager whose free choices follow the implementation's."""

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False) -> None:
        super().__init__(num_blocks, policy, enable_events)  # validates like the model
        self.policy_name = policy
        self.choices = ChoicePolicy(self.num_blocks)
        self.policy = self.choices
        self.slot_hint: list[object] = []

    def follow(self, method: str, reply: Reply) -> None:
        """Remember the implementation's choices in its answer to `method` (if any)."""
        self.choices.hint = None
        self.slot_hint = []
        if method != "prepare_store" or reply.raised or reply.value is None:
            return
        victims = getattr(reply.value, "evicted_keys", None)
        slots = getattr(reply.value, "slot_ids", None)
        try:
            self.choices.hint = list(victims) if victims is not None else None
            self.slot_hint = list(slots) if slots is not None else []
        except TypeError:  # a malformed answer: the comparison reports it
            self.choices.hint, self.slot_hint = None, []

    # -------------------------------------------------------------- slots

    def owned_slots(self) -> set[int]:
        return {int(r.slot) for r in self.blocks.values()}

    def free_slot_count(self) -> int:
        return self.num_blocks - len(self.blocks)

    def take_slot(self) -> SlotId:
        """The implementation's next slot when it is free, else the lowest free one."""
        owned = self.owned_slots()
        if self.slot_hint:
            s = self.slot_hint.pop(0)
            legal = isinstance(s, int) and not isinstance(s, bool) and 0 <= s < self.num_blocks
            if legal and int(s) not in owned:  # type: ignore[call-overload]
                return SlotId(int(s))  # type: ignore[call-overload]
            self.slot_hint = []  # one illegal choice: follow none of the rest
        return SlotId(min(set(range(self.num_blocks)) - owned))

    def snapshot(self) -> ManagerSnapshot:
        """The model's state; free slots are listed in ascending order (their order is
        the implementation's business under the safety contract)."""
        snap = super().snapshot()
        free = tuple(sorted(set(range(self.num_blocks)) - self.owned_slots()))
        return ManagerSnapshot(
            num_blocks=snap.num_blocks,
            blocks=snap.blocks,
            free_stack=free,
            high_water=self.num_blocks,
            num_evictable=snap.num_evictable,
            num_pending=snap.num_pending,
            pending_events=snap.pending_events,
            policy=snap.policy,
        )


class ChoicePolicy033(ChoicePolicy):
    """`ChoicePolicy` with the request hooks of the `vllm-0.33` profile (no recency)."""

    def insert(self, key: Key, req: Request | None = None) -> None:
        """A key became resident (PENDING): not idle yet."""

    def touch(self, keys: Sequence[Key], ref_of: RefOf, req: Request | None = None) -> None:
        """Recency is not modelled under the safety contract."""

    def on_store_miss(self, keys: Sequence[Key], ref_of: RefOf, req: Request) -> None:
        """Recency is not modelled under the safety contract."""

    def on_request_access(self, keys: Sequence[Key], req: Request) -> None:
        """Recency is not modelled under the safety contract."""

    def on_request_finished(self, *args: object) -> None:
        """Recency is not modelled under the safety contract."""


class FollowingVllm033(FollowingModel, Vllm033Manager):
    """The `vllm-0.33` profile's manager whose free choices follow the implementation's."""

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False) -> None:
        super().__init__(num_blocks, policy, enable_events)
        self.choices = ChoicePolicy033(self.num_blocks)
        self.policy = self.choices


def refusal(method: str, reply: Reply) -> bool:
    """Whether the implementation refused the call: it raised, or (`prepare_store`)
    returned None."""
    return reply.raised or (method == "prepare_store" and reply.value is None)


def _first_occurrences(keys: Sequence[Key]) -> list[Key]:
    out: list[Key] = []
    for key in keys:
        if key not in out:
            out.append(key)
    return out


def sequential(
    model: FollowingModel, method: str, keys: Sequence[Key], kwargs: dict[str, Any]
) -> Reply:
    """A duplicate batch processed as its occurrences in order, all-or-nothing
    (see the module docstring)."""
    if method in ("prepare_store", "complete_store"):
        return invoke(getattr(model, method), _first_occurrences(keys), **kwargs)
    saved = copy.deepcopy(model.__dict__)
    slots: list[int] = []
    for key in keys:
        got = invoke(getattr(model, method), [key], **kwargs)
        if got.raised:
            model.__dict__.clear()
            model.__dict__.update(saved)
            return got
        if isinstance(got.value, list):
            slots.extend(got.value)
    return Reply(False, slots if method == "prepare_load" else None)


def _duplicate_batch(args: tuple[Any, ...]) -> list[Key] | None:
    if not args or not isinstance(args[0], list | tuple):
        return None
    try:
        keys = list(args[0])
        return keys if len(set(keys)) != len(keys) else None
    except TypeError:
        return None


def answer(
    model: ModelManager,
    method: str,
    build: Callable[[], Built],
    impl_reply: Reply,
    safety: bool,
    errors: Errors = Errors.TYPED,
) -> Reply:
    """The model's reply to the call `method(*args, **kwargs)` (`build()` makes fresh
    arguments), given the implementation's reply to the same call.

    Exact: the model's own answer. Safety: the model first follows the
    implementation's choices; a duplicate batch that the implementation refused is
    refused (`None` for a refused `prepare_store`; an error the processing in order
    raises counts as well as the duplicate's), one it accepted is processed
    sequentially.
    """
    args, kwargs = build()
    fn: Callable[..., Any] = getattr(model, method)
    if not safety or not isinstance(model, FollowingModel):
        return invoke(fn, *args, **kwargs)
    model.follow(method, impl_reply)
    got = invoke(fn, *args, **kwargs)
    if not (got.raised and isinstance(got.value, DuplicateKeysError)):
        return got
    keys = _duplicate_batch(args)
    if keys is None or method not in (
        "prepare_store",
        "complete_store",
        "prepare_load",
        "complete_load",
    ):
        return got
    if not refusal(method, impl_reply):
        model.follow(method, impl_reply)
        return sequential(model, method, keys, kwargs)
    if not impl_reply.raised:
        return Reply(False, None)
    # Refused with an error: the duplicate's, or the one processing in order meets
    # (tried on a copy: the model does not move either way).
    probe = copy.deepcopy(model)
    alt = sequential(probe, method, keys, kwargs) if method.endswith("_load") else got
    if alt.raised and same_error(alt.value, impl_reply.value, errors):
        return alt
    return got

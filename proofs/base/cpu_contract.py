"""The CPU manager under a contract: building the model, observing both sides, judging.

The conformance engine (`lockstep.manager.LockStep`) and the explorer
(`explore.manager_subject`) make every manager call through this module, so both
hold an implementation to the same `base.contract.Contract`:

* `make_model` -- the reference: `ModelManager` (exact) or
  `base.safety.FollowingModel` (safety);
* `pair` -- one call on both sides: the implementation first, then the model, which
  under the safety contract follows the implementation's legal choices;
* `observe` -- what is compared of a side: its snapshot (exact), the snapshot's
  policy-free part (`SafetyView`: blocks with state, ref count and slot; counters;
  pending events), or, black box, what the API shows (`BlackBoxView`: `lookup` of
  every key of the engine's pool, and the counters where exposed);
* `judge_call` / `judge_state` -- the one comparator (`compare.judge`) under the
  contract's error rule, and the finding's class (`classify`): a generic mismatch
  is narrowed to what went wrong, e.g. an error that left a block pinned is a
  *leaked pin*, a store that handed out more slots than keys an *orphaned slot*.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evictable.model.errors import BlockNotReadyError, LifecycleError
from evictable.model.invariants import check_snapshot
from evictable.model.lifecycle import CpuState
from evictable.model.lmcache05 import Lmcache05Manager
from evictable.model.manager import ModelManager
from evictable.model.sglang05 import Sglang05Manager
from evictable.model.types import (
    BlockEntry,
    Key,
    ManagerSnapshot,
    OffloadingEvent,
    evictable_view,
)
from evictable.model.vllm033 import Vllm033Manager
from evictable.proofs.base.compare import (
    Kind,
    Mismatch,
    Reply,
    canonical,
    describe,
    diff,
    invoke,
    judge,
)
from evictable.proofs.base.contract import Contract
from evictable.proofs.base.safety import FollowingModel, FollowingVllm033, answer

__all__ = [
    "SAFETY_INVARIANTS",
    "BlackBoxView",
    "ObservationError",
    "SafetyView",
    "Side",
    "judge_call",
    "judge_state",
    "make_model",
    "model_reply",
    "observe",
    "pair",
    "refused_by_table",
    "seed_events",
]

Built = tuple[tuple[Any, ...], dict[str, Any]]

SAFETY_INVARIANTS: tuple[str, ...] = ("blocks_hold", "counters_match", "slot_partition", "capacity")
"""The snapshot invariants any policy's manager must keep (the others are about this
project's LRU list and ARC lists, checked under the exact contract only)."""

_SLOT_INVARIANTS = ("slot_partition", "capacity")

UNREPORTED: tuple[str, ...] = ("complete_store",)
"""Methods whose result an implementation may leave unreported (None) under the safety
contract."""


class ObservationError(Exception):
    """Observing the implementation failed (its `snapshot()` or `lookup` crashed)."""


@dataclass(frozen=True)
class SafetyView:
    """What the safety contract compares of a manager's state."""

    blocks: frozenset[BlockEntry]
    num_evictable: int
    num_pending: int
    pending_events: tuple[OffloadingEvent, ...]


@dataclass(frozen=True)
class BlackBoxView:
    """What the API shows: each pool key's lookup, and the counters when exposed."""

    lookups: tuple[tuple[Key, str], ...]
    counters: tuple[int, int] | None


@dataclass(frozen=True)
class Side:
    """One side's state: the full snapshot (None for a black box) and the compared view."""

    full: ManagerSnapshot | None
    view: object


def make_model(contract: Contract, num_blocks: int, policy: str, events: bool) -> ModelManager:
    """The reference manager for `contract` and its profile (raises like the model's
    constructor): the seed's `ModelManager` or the `vllm-0.33` profile's
    `Vllm033Manager`, following the implementation's choices under the safety contract,
    or the `sglang-0.5` profile's `Sglang05Manager` or the `lmcache-0.5` profile's
    `Lmcache05Manager` (exact contract only: they follow no implementation's choices)."""
    cls: type[ModelManager]
    if contract.profile == "sglang-0.5":
        cls = Sglang05Manager  # exact contract only: it follows no implementation's choices
    elif contract.profile == "lmcache-0.5":
        cls = Lmcache05Manager  # exact only (`base.contract.resolve` refuses safety)
    elif contract.profile == "vllm-0.33":
        cls = FollowingVllm033 if contract.safety else Vllm033Manager
    else:
        cls = FollowingModel if contract.safety else ModelManager
    return cls(num_blocks, policy, events)


def seed_events(contract: Contract, events: object) -> object:
    """Under the seed profile an implementation's metadata-only events (vLLM 0.33's
    notices that failed stores released their keys) are not compared: the seed has
    none. Other values pass unchanged."""
    if contract.profile != "seed" or not isinstance(events, list | tuple):
        return events
    kept = [e for e in events if not getattr(e, "metadata_only", False)]
    return kept if isinstance(events, list) else tuple(kept)


def pair(
    contract: Contract, model: ModelManager, impl: Any, method: str, build: Callable[[], Built]
) -> tuple[Reply, Reply]:
    """Make the call on the implementation, then on the model: (model's, impl's) reply.

    Under the safety contract a result the implementation does not report is not
    compared: `complete_store` answering None (vLLM's returns nothing) where the
    model names the keys it acted on counts as the model's None."""
    args, kwargs = build()
    try:
        fn = getattr(impl, method) if method else impl
    except Exception as exc:  # a missing method is compared like any other outcome
        ri = Reply(True, exc)
    else:
        ri = invoke(fn, *args, **kwargs)
        if method == "take_events" and not ri.raised:
            ri = Reply(False, seed_events(contract, ri.value))
    return model_reply(contract, model, method, build, ri), ri


def refused_by_table(model: ModelManager, method: str, build: Callable[[], Built]) -> bool:
    """Whether the model's lifecycle table refuses the call in the model's state (a load
    of an absent key, say): the calls a contract without `invalid` calls never makes.
    Tried on a copy: the model itself does not move."""
    args, kwargs = build()
    try:  # a pickle round trip copies a plain model several times faster than deepcopy
        trial = pickle.loads(pickle.dumps(model, pickle.HIGHEST_PROTOCOL))
    except Exception:
        trial = copy.deepcopy(model)
    got = invoke(getattr(trial, method), *args, **kwargs)
    return got.raised and isinstance(got.value, LifecycleError) and got.value.event is not None


def model_reply(
    contract: Contract, model: ModelManager, method: str, build: Callable[[], Built], ri: Reply
) -> Reply:
    """The model's reply to a call the implementation answered `ri` (see `pair`)."""
    rm = answer(model, method, build, ri, contract.safety, contract.errors)
    unreported = contract.safety and method in UNREPORTED and not ri.raised and ri.value is None
    if unreported and not rm.raised:
        return Reply(False, None)
    return rm


def _lookup_text(target: Any, key: Key) -> str:
    got = invoke(target.lookup, key)
    if got.raised:
        return f"raises {type(got.value).__name__}"
    return str(getattr(got.value, "name", got.value))


def counters(target: Any) -> tuple[int, int] | None:
    """(num_evictable, num_pending), or None when `target` does not expose them."""
    try:
        evictable = target.num_evictable
    except AttributeError:
        return None
    return (evictable, target.num_pending)


def _view_kind(m_view: object, i_view: object) -> Kind:
    """The class of a state difference: a black box's lookups or its counters; a
    snapshot's counters alone (accounting), or more (state)."""
    if isinstance(m_view, BlackBoxView) and isinstance(i_view, BlackBoxView):
        if m_view.lookups != i_view.lookups:
            return Kind.WRONG_LOOKUP
        m, i = m_view.counters, i_view.counters
        if m is not None and i is not None and i[0] < m[0] and i[1] == m[1]:
            return Kind.UNLISTED  # fewer idle blocks than the model, no call raised
        return Kind.ACCOUNTING
    if isinstance(m_view, SafetyView | ManagerSnapshot) and type(m_view) is type(i_view):
        counted = ("num_evictable", "num_pending")
        differ = [
            f.name
            for f in dataclasses.fields(m_view)
            if getattr(m_view, f.name) != getattr(i_view, f.name)
        ]
        if isinstance(i_view, ManagerSnapshot) and _unlisted(i_view):
            if set(differ) <= {*counted, "policy"}:
                return Kind.UNLISTED
        elif differ and all(name in counted for name in differ):
            fewer = i_view.num_evictable < m_view.num_evictable
            same = i_view.num_pending == m_view.num_pending
            return Kind.UNLISTED if fewer and same else Kind.ACCOUNTING
    return Kind.STATE


def _unlisted(snap: ManagerSnapshot) -> bool:
    """Whether an idle (READY) block of `snap` is missing from its policy's evictable
    set (unknown for an opaque policy: False)."""
    listed = evictable_view(snap.policy)
    if listed is None:
        return False
    return any(e.state is CpuState.READY and e.key not in listed for e in snap.blocks)


def observe(contract: Contract, target: Any, keys: Sequence[Key], counted: bool) -> Side:
    """One side's state under `contract` (`counted`: include the counters in a black-box
    view). Raises `ObservationError` when the implementation cannot be observed."""
    if contract.black_box:
        try:
            looks = tuple((k, _lookup_text(target, k)) for k in keys)
            count = counters(target) if counted and not contract.following else None
        except Exception as exc:
            raise ObservationError(f"observing raised {type(exc).__name__}: {exc}") from exc
        return Side(None, BlackBoxView(looks, count))
    try:
        snap: object = target.snapshot()
    except Exception as exc:
        raise ObservationError(f"impl.snapshot() raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(snap, ManagerSnapshot):
        raise ObservationError(f"impl.snapshot() returned a {type(snap).__name__}")
    if contract.profile == "seed" and any(e.metadata_only for e in snap.pending_events):
        snap = dataclasses.replace(
            snap, pending_events=tuple(e for e in snap.pending_events if not e.metadata_only)
        )
    events = _events(snap.pending_events)
    if contract.following:
        return Side(snap, SafetyView(snap.blocks, 0, 0, events))
    if contract.safety:
        return Side(snap, SafetyView(snap.blocks, snap.num_evictable, snap.num_pending, events))
    if events is snap.pending_events:
        return Side(snap, snap)
    return Side(snap, dataclasses.replace(snap, pending_events=events))


def _events(events: tuple[OffloadingEvent, ...]) -> tuple[OffloadingEvent, ...]:
    """Pending events as compared (`compare.canonical`): the same tuple when every
    event's keys are a tuple already."""
    if all(type(e) is OffloadingEvent and type(e.keys) is tuple for e in events):
        return events
    try:
        return tuple(canonical(e) for e in events)
    except TypeError:
        return events


# ------------------------------------------------------------------ classification


def _refs(side: Side) -> dict[Key, int]:
    if side.full is None:
        return {}
    return {e.key: e.ref_cnt for e in side.full.blocks}


def _changes(before: Side, after: Side) -> str:
    """What changed per key, e.g. `K(0) READY ref 0 -> LOADING ref 1` (snapshots only)."""
    if before.full is None or after.full is None:
        return ""
    a = {e.key: e for e in before.full.blocks}
    b = {e.key: e for e in after.full.blocks}
    out = []
    for key in sorted(set(a) | set(b), key=repr):
        x, y = a.get(key), b.get(key)
        if x == y:
            continue
        was = f"{x.state.name} ref {x.ref_cnt}" if x is not None else "ABSENT"
        now = f"{y.state.name} ref {y.ref_cnt}" if y is not None else "ABSENT"
        out.append(f"{key!r} {was} -> {now}")
    return ", ".join(out)


def _pinned_more(before: Side, after: Side) -> list[Key]:
    """Keys whose ref count went up (a pin taken), or a drop of the idle count."""
    a, b = _refs(before), _refs(after)
    up = [k for k, r in b.items() if k in a and a[k] >= 0 and r > a[k]]
    if up or before.full is not None:
        return up
    cb = getattr(before.view, "counters", None)
    ca = getattr(after.view, "counters", None)
    if cb is not None and ca is not None and ca[0] < cb[0]:
        return ["(num_evictable dropped)"]
    return []


def _store_kind(
    model_before: ManagerSnapshot, args: tuple[Any, ...], rm: Reply, ri: Reply
) -> Mismatch | None:
    """What a wrong `prepare_store` answer broke (None: no finer class applies)."""
    out = ri.value
    batch = set(args[0]) if args and isinstance(args[0], list | tuple | set | frozenset) else set()
    states = {e.key: e for e in model_before.blocks}
    if out is None:
        occurrences = list(args[0]) if args and isinstance(args[0], list | tuple) else []
        if rm.value is not None and len(occurrences) > len(batch):
            return Mismatch(
                Kind.SLOT,
                f"impl returned None for {len(occurrences)} occurrence(s) of {len(batch)} "
                f"distinct key(s) that fit once: a repeated key counted as needing its own "
                f"slot (the defect that orphans a slot when there is room)",
            )
        if rm.value is not None:
            idle = sum(
                1 for e in model_before.blocks if e.state is CpuState.READY and e.key not in batch
            )
            return Mismatch(
                Kind.STORE_VERDICT,
                f"impl returned None, but room can be made: {len(model_before.blocks)} of "
                f"{model_before.num_blocks} slots in use, {idle} idle unprotected block(s)",
            )
        return None
    victims = list(getattr(out, "evicted_keys", []) or [])
    model_victims = set(getattr(rm.value, "evicted_keys", []) or []) if not rm.raised else set()
    for v in victims:
        e = states.get(v)
        if e is not None and e.state is not CpuState.READY:
            return Mismatch(
                Kind.EVICTED_PINNED, f"evicted {v!r} while it is {e.state.name} (ref {e.ref_cnt})"
            )
        if v in batch and v not in model_victims:  # (a profile may evict the call's keys)
            return Mismatch(Kind.EVICTED_PINNED, f"evicted {v!r}, one of the call's own keys")
    slots = list(getattr(out, "slot_ids", []) or [])
    stored = list(getattr(out, "keys_to_store", []) or [])
    owned = {e.slot: e.key for e in model_before.blocks if e.key not in victims}
    for s in slots:
        if s in owned:
            return Mismatch(Kind.SLOT, f"handed out slot {s}, which {owned[s]!r} still holds")
        if not (isinstance(s, int) and 0 <= s < model_before.num_blocks):
            return Mismatch(
                Kind.SLOT, f"handed out slot {s!r}, outside 0..{model_before.num_blocks - 1}"
            )
    if len(set(slots)) != len(slots):
        return Mismatch(Kind.SLOT, f"handed out the same slot twice: {slots}")
    if len(slots) > len(set(stored)):
        return Mismatch(
            Kind.SLOT,
            f"handed out {len(slots)} slots {slots} for {len(set(stored))} distinct key(s) "
            f"{stored!r}: {len(slots) - len(set(stored))} slot(s) orphaned (owned by no key)",
        )
    if rm.value is None:
        return Mismatch(Kind.STORE_VERDICT, "impl stored, but the model finds no room to make")
    return None


def _repeated(args: tuple[Any, ...]) -> list[Any]:
    """The keys named more than once in a call's batch (first argument), in order."""
    if not args or not isinstance(args[0], list | tuple):
        return []
    seen: set[Any] = set()
    out: list[Any] = []
    for key in args[0]:
        try:
            if key in seen and key not in out:
                out.append(key)
            seen.add(key)
        except TypeError:
            return []
    return out


def classify(
    found: Mismatch,
    method: str,
    args: tuple[Any, ...],
    rm: Reply,
    ri: Reply,
    before: Side,
    after: Side,
    model_after: Side,
    model_before: ManagerSnapshot,
) -> Mismatch:
    """`found`, narrowed to its finding class where one applies (`before`/`after`: the
    implementation's side around the call)."""
    if found.kind is Kind.ATOMICITY:
        changed = _changes(before, after)
        detail = (
            f"impl changed state on an error: {method} {describe(ri)}, but {changed}"
            if changed
            else found.reason
        )
        pins = _pinned_more(before, after)
        if pins:
            return Mismatch(Kind.LEAKED_PIN, f"{detail}; nothing will release {pins}")
        return Mismatch(Kind.ATOMICITY, detail)
    if method == "prepare_store" and found.kind in (Kind.RESULT, Kind.STATE) and not ri.raised:
        finer = _store_kind(model_before, args, rm, ri)
        if finer is not None:
            return Mismatch(finer.kind, f"{finer.reason}; {found.reason}")
    if (
        method == "prepare_load"
        and found.kind is Kind.ACCEPTED_BAD_CALL
        and isinstance(rm.value, BlockNotReadyError)
    ):
        return Mismatch(
            Kind.UNWRITTEN_LOAD,
            f"loaded {list(rm.value.keys)!r} while its store is still in flight (PENDING): "
            f"the data is not written yet; {found.reason}",
        )
    if method == "prepare_store" and found.kind is Kind.ACCEPTED_BAD_CALL and not ri.raised:
        finer = _store_kind(model_before, args, rm, ri)  # a repeated key given two slots
        if finer is not None and finer.kind is Kind.SLOT:
            return Mismatch(Kind.SLOT, f"{finer.reason}; {found.reason}")
    repeated = _repeated(args)
    if method == "prepare_store" and repeated and not rm.raised and found.kind is not Kind.SLOT:
        # the model stores a repeated key once; whatever else differs comes of handling
        # it per occurrence (vLLM 0.33: a slot each, a ghost hit each)
        return Mismatch(
            Kind.SLOT, f"repeated key(s) {repeated!r} handled once per occurrence: {found.reason}"
        )
    if method == "lookup" and found.kind is Kind.RESULT:
        return Mismatch(Kind.WRONG_LOOKUP, found.reason)
    if found.kind is Kind.STATE:
        return Mismatch(_view_kind(model_after.view, after.view), found.reason)
    return found


def judge_call(
    contract: Contract,
    method: str,
    args: tuple[Any, ...],
    rm: Reply,
    ri: Reply,
    m_before: Side,
    i_before: Side,
    m_after: Side,
    i_after: Side,
    model_before: ManagerSnapshot,
) -> list[Mismatch]:
    """The findings one call makes (see the module docstring): none, one, or -- when
    the error is not the model's and the call also changed state -- both the error
    type and the atomicity finding."""
    found = judge(
        rm, ri, m_before.view, i_before.view, m_after.view, i_after.view, errors=contract.errors
    )
    if found is None:
        return []
    out = [classify(found, method, args, rm, ri, i_before, i_after, m_after, model_before)]
    if found.kind is Kind.ERROR and i_before.view != i_after.view:
        changed = Mismatch(
            Kind.ATOMICITY,
            f"impl changed state on an error (before != after): "
            f"{diff(i_before.view, i_after.view)}",
        )
        out.append(
            classify(changed, method, args, rm, ri, i_before, i_after, m_after, model_before)
        )
    return out


def judge_state(
    contract: Contract, model: ModelManager, impl: Any, m: Side, i: Side, deep: bool = True
) -> Mismatch | None:
    """The finding the state after a call makes: views differ, a snapshot breaks an
    invariant, the implementation's `check_invariants()` fails, or its counters
    disagree with the model's (`deep=False`: views and counters only)."""
    if m.view != i.view:
        return Mismatch(
            _view_kind(m.view, i.view), f"states differ (model != impl): {diff(m.view, i.view)}"
        )
    if contract.following:
        return None  # counters and invariants were found wrong already: what follows?
    if deep:
        found = _invariants(contract, impl, m, i)
        if found is not None:
            return found
    try:
        got_i = counters(impl)
    except Exception as exc:
        return Mismatch(Kind.ACCOUNTING, f"impl counters raised {type(exc).__name__}: {exc}")
    if got_i is None:
        if contract.black_box:
            return None
        return Mismatch(Kind.ACCOUNTING, "impl exposes no counters (num_evictable, num_pending)")
    full = m.full
    want = (
        (full.num_evictable, full.num_pending)
        if full is not None
        else (model.num_evictable, model.num_pending)
    )
    if want != got_i:
        return Mismatch(
            Kind.ACCOUNTING,
            f"counters (num_evictable, num_pending): model {want} != impl {got_i}",
        )
    return None


def _invariants(contract: Contract, impl: Any, m: Side, i: Side) -> Mismatch | None:
    """The snapshot invariants of both sides (the safety subset under the safety
    contract) and the implementation's own `check_invariants()`."""
    if m.full is not None:
        bad = check_snapshot(m.full)
        if contract.safety:
            bad = [b for b in bad if b in SAFETY_INVARIANTS]
        if bad:
            return Mismatch(Kind.MODEL_BUG, f"model snapshot violates {bad}")
    if i.full is None:
        return None
    bad = check_snapshot(i.full)
    if contract.safety:
        bad = [b for b in bad if b in SAFETY_INVARIANTS]
    if bad:
        kind = Kind.INVARIANT
        if any(b in _SLOT_INVARIANTS for b in bad):
            kind = Kind.SLOT
        elif bad == ["counters_match"]:
            kind = Kind.ACCOUNTING
        return Mismatch(kind, f"impl snapshot violates invariants {bad}")
    checker = getattr(impl, "check_invariants", None)
    if callable(checker):
        got = invoke(checker)
        if got.raised:
            exc = got.value
            return Mismatch(
                Kind.INVARIANT, f"impl.check_invariants() failed: {type(exc).__name__}: {exc}"
            )
    return None

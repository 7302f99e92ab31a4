"""What a finding's snippet asserts: the model's answer at a step, as Python anyone can run.

A finding's snippet makes its trace's calls on the subject. At the step that
diverges (and, for a finding followed to its consequence, at the consequence too)
it does not only call: it asserts what the model says there, so that running the
snippet against the faulty manager raises `AssertionError` with the finding's
message, and against a correct one runs to its end. `assertion(step, kind,
contract)` gives the lines that replace the step's plain call:

* a call that did not return (`spinning`, `blocked`): made in a daemon thread that
  must end within the per-step bound of wall time;
* a call that must leave the state as it was (atomicity, a leaked pin): the state
  observed before and after it, as the contract observes it;
* the model refuses the call: the call must raise (the error the error contract
  accepts: this project's typed error, its builtin base, or any exception); the
  model accepts it: it must not raise;
* results differ: the result, projected as the comparator compares it (lists for
  any collection, events as (keys, removed)); under the safety contract only what
  the contract holds fixed (whether a store happened, its keys, how many victims,
  and never a victim the model refused to take);
* the state after the call differs: each differing part of the observed state
  (counters, lookups of a black box, the snapshot's blocks, events, free stack and
  policy lists) equals the model's.

Every assertion's message is the finding's (`FINDING`, a constant the snippet
defines first). The step's values come as `base.trace` encodes them; `py(value)`
writes an encoded value back as a Python literal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

from evictable.model import errors as error_types
from evictable.proofs.base.compare import Errors, Kind, builtin_bases
from evictable.proofs.base.contract import Contract, KeySpace
from evictable.proofs.base.flight import BLOCK_S
from evictable.proofs.base.trace import TraceStep, encode_value

__all__ = ["MESSAGE", "assertion", "imports_for", "py"]

MESSAGE = "FINDING"
"""The name of the snippet's constant that holds the finding's message."""


_NAMES: ContextVar[Mapping[str, str] | None] = ContextVar("evictable_key_names", default=None)
"""The keys of the key space in force, by their encoding: `py` writes a key the way
the space prints it (`K(0)`, whose import the snippet's preamble makes), not as the
bytes it encodes to."""

_POOL = 32
"""How many keys of a key space are named (the engines use at most 26)."""


@lru_cache(maxsize=16)
def _names(space: KeySpace) -> Mapping[str, str]:
    try:
        keys = space.pool(_POOL)
    except Exception:  # a space that cannot make that many: its keys print as encoded
        return {}
    return {json.dumps(encode_value(k), sort_keys=True): repr(k) for k in keys}


def py(value: Any) -> str:
    """An encoded value (`base.trace`) as a Python literal: keys as the key space
    prints them (`b'k0'`, `'a'`, `K(0)`), lists, tuples, None."""
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dict):
        named = (_NAMES.get() or {}).get(json.dumps(value, sort_keys=True))
        if named is not None:
            return named
        if set(value) == {"hex"}:
            return repr(bytes.fromhex(str(value["hex"])))
        if set(value) == {"repr"}:
            return str(value["repr"])
        return "{" + ", ".join(f"{k!r}: {py(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(py(v) for v in value) + "]"
    return repr(value)


def _tuple(items: Sequence[str]) -> str:
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _set(items: Sequence[str]) -> str:
    return "{" + ", ".join(items) + "}" if items else "set()"


def _answer(step: TraceStep, side: str) -> dict[str, Any] | None:
    return step.model if side == "model" else step.outcome


def _error_class(error: Mapping[str, Any], errors: Errors) -> str:
    """The exception the snippet accepts for the model's error under the contract."""
    name = str(error.get("type", "Exception"))
    cls = getattr(error_types, name, None)
    if errors is Errors.ANY or not isinstance(cls, type):
        return "Exception"
    if errors is Errors.BUILTIN:
        bases = [b.__name__ for b in builtin_bases(cls)]
        return bases[0] if len(bases) == 1 else _tuple(bases) if bases else "Exception"
    return name


def imports_for(lines: Sequence[str]) -> list[str]:
    """The imports the assertion lines need."""
    text = "\n".join(lines)
    out = []
    if "threading." in text:
        out.append("import threading")
    if "LookupResult" in text:
        out.append("from evictable.model.types import LookupResult")
    caught = re.findall(r"^\s*except \(?([\w, ]+?)\)?(?: as exc)?:", text, re.MULTILINE)
    named = {n.strip() for group in caught for n in group.split(",")}
    typed = sorted(n for n in named if isinstance(getattr(error_types, n, None), type))
    if typed:
        out.append(f"from evictable.errors import {', '.join(typed)}")
    return out


# ------------------------------------------------------------------ the forms


def _hang(call: str) -> list[str]:
    bound = f"{BLOCK_S:g}"
    return [
        f"worker = threading.Thread(target=lambda: {call}, daemon=True)",
        "worker.start()",
        f"worker.join({bound})  # a call of a manager returns at once; {bound}s is generous",
        f"assert not worker.is_alive(), {MESSAGE}",
    ]


def _observe(contract: Contract, view: Mapping[str, Any] | None) -> str:
    """An expression for the state the contract compares (before == after)."""
    if contract.black_box:
        keys = [py(e["key"]) for e in (view or {}).get("lookups", [])]
        counted = (view or {}).get("counters") is not None
        looks = f"[m.lookup(k) for k in [{', '.join(keys)}]]"
        return f"({looks}, m.num_evictable, m.num_pending)" if counted else looks
    if contract.safety:
        return (
            "({(e.key, e.state.name, e.ref_cnt, e.slot) for e in m.snapshot().blocks}, "
            "m.num_evictable, m.num_pending)"
        )
    return "m.snapshot()"


def _unchanged(call: str, contract: Contract, view: Mapping[str, Any] | None) -> list[str]:
    seen = _observe(contract, view)
    made = [
        "try:",
        f"    {call}",
        "except Exception:",
        "    pass  # it raises: then nothing may change",
    ]
    if call.startswith("with "):  # a policy fault injected around the call
        head, _, inner = call.partition(": ")
        made = [f"{head}:", *(f"    {line}" for line in made[:1])]
        made += [f"        {inner}", "    except Exception:", "        pass  # nothing may change"]
    return [f"before = {seen}", *made, f"assert {seen} == before, {MESSAGE}"]


def _must_raise(call: str, error: Mapping[str, Any], errors: Errors) -> list[str]:
    return [
        "try:",
        f"    {call}",
        f"except {_error_class(error, errors)}:",
        "    pass  # the model refuses this call",
        "else:",
        f"    raise AssertionError({MESSAGE})",
    ]


def _same_error(call: str, error: Mapping[str, Any], errors: Errors) -> list[str]:
    return [
        "try:",
        f"    {call}",
        f"except {_error_class(error, errors)}:",
        "    pass  # the model's error",
        "except (Exception, SystemExit) as exc:",
        f"    raise AssertionError({MESSAGE}) from exc",
        "else:",
        f"    raise AssertionError({MESSAGE})",
    ]


def _must_return(call: str) -> list[str]:
    return [
        "try:",
        f"    out = {call}",
        "except (Exception, SystemExit) as exc:",
        f"    raise AssertionError({MESSAGE}) from exc",
    ]


def _store(model: Any, impl: Any, safety: bool) -> list[str]:
    if model is None or impl is None or not safety:
        if model is None:
            return [f"assert out is None, {MESSAGE}"]
        got = "(list(out.keys_to_store), list(out.slot_ids), list(out.evicted_keys))"
        want = _tuple(
            [py(model["keys_to_store"]), py(model["slot_ids"]), py(model["evicted_keys"])]
        )
        if safety:
            return [f"assert out is not None, {MESSAGE}"]
        return [f"assert out is not None and {got} == {want}, {MESSAGE}"]
    refused = [v for v in impl.get("evicted_keys", []) if v not in model.get("evicted_keys", [])]
    out = [
        f"assert list(out.keys_to_store) == {py(model['keys_to_store'])}, {MESSAGE}",
        f"assert len(out.evicted_keys) == {len(model['evicted_keys'])}, {MESSAGE}",
    ]
    if refused:
        out.append(
            f"assert not {_set([py(v) for v in refused])} & set(out.evicted_keys), {MESSAGE}"
        )
    return out


def _result(op: str, model: Any, impl: Any, contract: Contract) -> list[str]:
    """Assertions on `out`, the call's result, against the model's `model`."""
    if op == "prepare_store":
        return _store(model, impl, contract.safety)
    if op == "lookup":
        return [f"assert out == LookupResult({model!r}), {MESSAGE}"]
    if op == "take_events" and isinstance(model, list):
        want = "[" + ", ".join(_tuple([py(e["keys"]), py(e["removed"])]) for e in model) + "]"
        return [f"assert [(list(e.keys), e.removed) for e in out] == {want}, {MESSAGE}"]
    if isinstance(model, list):
        return [f"assert list(out) == {py(model)}, {MESSAGE}"]
    return [f"assert out == {py(model)}, {MESSAGE}"]


def _blocks(value: Any) -> str:
    rows = [
        _tuple([py(b["key"]), py(b["state"]), py(b["ref_cnt"]), py(b["slot"])]) for b in value or []
    ]
    return _set(rows)


def _policy(field: str, want: Any, is_arc: bool) -> str:
    if field == "evictable" and is_arc and want is not None:
        return f"set(snap.policy.evictable) == {_set([py(k) for k in want])}"
    if isinstance(want, list):
        return f"list(snap.policy.{field}) == {py(want)}"
    return f"snap.policy.{field} == {py(want)}"


def _state(expected: Mapping[str, Any], observed: Mapping[str, Any]) -> list[str]:
    """Assertions that each differing part of the observed state is the model's."""
    out: list[str] = []
    snapshot = "blocks" in expected and "lookups" not in expected
    for name, want in expected.items():
        got = observed.get(name)
        if got == want:
            continue
        if name == "lookups":
            old = {py(e["key"]): e["lookup"] for e in got or []}
            for e in want:
                key = py(e["key"])
                if old.get(key) != e["lookup"]:
                    out.append(f"assert m.lookup({key}) == LookupResult.{e['lookup']}, {MESSAGE}")
        elif name == "counters" and want is not None:
            counts = _tuple([py(v) for v in want])
            out.append(f"assert (m.num_evictable, m.num_pending) == {counts}, {MESSAGE}")
        elif name == "blocks":
            out.append(
                "assert {(e.key, e.state.name, e.ref_cnt, e.slot) for e in snap.blocks} == "
                f"{_blocks(want)}, {MESSAGE}"
            )
        elif name == "pending_events":
            events = "[" + ", ".join(_tuple([py(e["keys"]), py(e["removed"])]) for e in want) + "]"
            out.append(
                f"assert [(list(e.keys), e.removed) for e in snap.pending_events] == {events}, "
                f"{MESSAGE}"
            )
        elif name == "policy" and isinstance(want, dict) and isinstance(got, dict):
            is_arc = "t1" in want
            for field, sub in want.items():
                if got.get(field) != sub:
                    out.append(f"assert {_policy(field, sub, is_arc)}, {MESSAGE}")
        elif name in ("num_evictable", "num_pending"):
            out.append(f"assert m.{name} == {py(want)}, {MESSAGE}")
        elif isinstance(want, list):
            out.append(f"assert list(snap.{name}) == {py(want)}, {MESSAGE}")
        else:
            out.append(f"assert snap.{name} == {py(want)}, {MESSAGE}")
    if snapshot and any(line.count("snap.") for line in out):
        out.insert(0, "snap = m.snapshot()")
    return out


def assertion(step: TraceStep, kind: Kind, contract: Contract) -> list[str] | None:
    """The lines that make `step` (the call of a finding of class `kind`) and assert
    the model's answer there (see the module docstring); None when the step is not
    a plain call the snippet can check (a copy, a construction that succeeded)."""
    token = _NAMES.set(_names(contract.keys))
    try:
        return _assertion(step, kind, contract)
    finally:
        _NAMES.reset(token)


def _assertion(step: TraceStep, kind: Kind, contract: Contract) -> list[str] | None:
    call = step.call
    fault = call.startswith("with ")
    if kind in (Kind.HANG, Kind.BLOCKED):
        return None if fault else _hang(call)
    if kind in (Kind.ATOMICITY, Kind.LEAKED_PIN):
        return _unchanged(call, contract, step.before)
    if fault or step.op == "copy":
        return None
    model, impl = step.model or {}, step.outcome or {}
    if "error" in model and "error" not in impl:
        return _must_raise(call, model["error"], contract.errors)
    if "error" in model:
        return _same_error(call, model["error"], contract.errors)
    if "error" in impl:
        return _must_return(call)
    lines = [f"out = {call}"]
    if "result" in model and model.get("result") != impl.get("result"):
        lines += _result(step.op, model.get("result"), impl.get("result"), contract)
    elif step.expected is not None and step.after is not None:
        lines += _state(step.expected, step.after)
    return lines if len(lines) > 1 else None

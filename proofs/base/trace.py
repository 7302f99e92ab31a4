"""Structured traces: a finding's calls as data a program can read, not only as code.

A `TraceStep` is one call of a trace: its Python text (`m.prepare_store(['a'])`),
the operation and its arguments, what the implementation answered (a result, or an
error with its class and fields), what the model answered, and the
implementation's observed state before and after the call. Everything is JSON-ready
(`TraceStep.as_dict`), in the encoding of the replay format (docs/conformance.md,
"Replaying a recorded trace"): a key is a string, an integer or `{"hex": ...}` for
bytes; a key that has none of these encodings is `{"repr": ...}` (shown, never
replayed).

`encode_key`, `decode_key`, `encode_result`, `encode_error` and `encode_state` are
the one encoding the JSON reports, the HTML and JUnit reports and `evictable replay`
share. `state_diff(before, after)` says what a call changed, field by field.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evictable.model.errors import LifecycleError
from evictable.model.types import Key, LookupResult, OffloadingEvent, PrepareStoreOutput

__all__ = [
    "KeyDecodeError",
    "TraceStep",
    "decode_key",
    "encode_args",
    "encode_error",
    "encode_key",
    "encode_result",
    "encode_state",
    "encode_value",
    "outcome_of",
    "show",
    "state_diff",
]


class KeyDecodeError(ValueError):
    """A JSON value that is not a key of the replay format."""


def encode_key(key: Key) -> Any:
    """A key as JSON: str and int as they are, bytes as `{"hex": ...}`. Raises
    `TypeError` for any other key (`encode_value` falls back to its repr)."""
    if isinstance(key, bytes):
        return {"hex": key.hex()}
    if isinstance(key, str) or (isinstance(key, int) and not isinstance(key, bool)):
        return key
    raise TypeError(f"key {key!r} has no JSON encoding (use str, int or bytes)")


def decode_key(value: Any) -> Key:
    """A JSON key: a string, an integer, or `{"hex": "..."}` (bytes). Raises
    `KeyDecodeError` with the reason."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, dict) and set(value) == {"hex"} and isinstance(value["hex"], str):
        try:
            return bytes.fromhex(value["hex"])
        except ValueError:
            raise KeyDecodeError(f"bad hex key {value['hex']!r}") from None
    if isinstance(value, dict) and set(value) == {"repr"}:
        raise KeyDecodeError(
            f"the key {value['repr']} was recorded as its repr only (not a str, int or "
            "bytes key): it cannot be replayed"
        )
    raise KeyDecodeError(f"a key must be a string, an integer or {{'hex': ...}}, got {value!r}")


def _key(key: Any) -> Any:
    try:
        return encode_key(key)
    except TypeError:
        return {"repr": repr(key)}


def encode_value(value: Any) -> Any:
    """Any value of a call or a state as JSON: keys by `encode_key` (else their repr),
    this project's result types by their fields, collections as lists."""
    if value is None or isinstance(value, bool | float):
        return value
    if isinstance(value, int | str | bytes):
        return _key(value)
    if isinstance(value, LookupResult):
        return value.value
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, PrepareStoreOutput):
        return encode_result("prepare_store", value)
    if isinstance(value, OffloadingEvent):
        return {"keys": [_key(k) for k in _iter(value.keys)], "removed": bool(value.removed)}
    if isinstance(value, list | tuple):
        return [encode_value(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((encode_value(v) for v in value), key=repr)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return {"repr": repr(value)}


def _iter(keys: Any) -> list[Any]:
    try:
        return list(keys)
    except TypeError:
        return [keys]


def encode_result(op: str, value: Any) -> Any:
    """A manager's return value of `op` as the replay format's JSON."""
    if op == "prepare_store" and value is not None and hasattr(value, "evicted_keys"):
        return {
            "keys_to_store": [_key(k) for k in _iter(value.keys_to_store)],
            "slot_ids": [encode_value(s) for s in _iter(value.slot_ids)],
            "evicted_keys": [_key(k) for k in _iter(value.evicted_keys)],
        }
    if op == "take_events" and isinstance(value, list | tuple):
        return [encode_value(ev) for ev in value]
    return encode_value(value)


def encode_error(exc: BaseException) -> dict[str, Any]:
    """An exception as JSON: `type` (the class name), and for this project's errors
    `keys` and every other identifying field (`fields`); else `message`."""
    out: dict[str, Any] = {"type": type(exc).__name__}
    if isinstance(exc, LifecycleError):
        out["keys"] = [_key(k) for k in exc.keys]
        fields = {
            name: encode_value(value)
            for name, value in sorted(vars(exc).items())
            if name not in ("message", "keys") and value not in (None, ())
        }
        if fields:
            out["fields"] = fields
    else:
        out["message"] = str(exc)
    return out


def encode_args(method: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A call's arguments by the replay format's names (`key`, `keys`, `success`)."""
    out: dict[str, Any] = {}
    if method == "lookup" and args:
        out["key"] = _key(args[0]) if _hashable(args[0]) else encode_value(args[0])
    elif args:
        first = args[0]
        collection = isinstance(first, list | tuple | set | frozenset)
        out["keys"] = (
            [_key(k) for k in _iter(first)]
            if collection and all(_hashable(k) for k in _iter(first))
            else {"repr": repr(first)}
        )
        if method == "complete_store" and len(args) > 1:
            out["success"] = encode_value(args[1])
    for name, value in kwargs.items():
        out[name] = encode_value(value)
    return out


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def encode_state(view: object) -> dict[str, Any] | None:
    """An observed state (a snapshot, the safety contract's view, what a black box
    shows, a GPU snapshot) as a JSON object of fields; None for no state."""
    if view is None:
        return None
    if dataclasses.is_dataclass(view) and not isinstance(view, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(view):
            value = getattr(view, f.name)
            if f.name == "blocks" and isinstance(value, frozenset | set):
                out[f.name] = [
                    encode_value(b)
                    for b in sorted(value, key=lambda b: (getattr(b, "slot", 0), repr(b)))
                ]
            elif f.name == "lookups" and isinstance(value, tuple):
                out[f.name] = [{"key": _key(k), "lookup": str(r)} for k, r in value]
            else:
                out[f.name] = encode_value(value)
        return out
    return {"value": encode_value(view)}


def state_diff(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[str]:
    """What changed between two encoded states, one line per field (`field: a -> b`);
    for the per-key lists (blocks, lookups), one entry per key that came, went or
    changed (`b'k0' MISS -> HIT_PENDING`)."""
    if before is None or after is None or before == after:
        return []
    out: list[str] = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a == b:
            continue
        if isinstance(a, list) and isinstance(b, list) and _per_key(a) and _per_key(b):
            out.append(f"{name}: {'; '.join(_key_changes(a, b))}")
        else:
            out.append(f"{name}: {show(a)} -> {show(b)}")
    return out


def _per_key(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, dict) and "key" in x for x in value)


def _rest(entry: Mapping[str, Any]) -> str:
    if set(entry) == {"key", "lookup"}:
        return str(entry["lookup"])
    parts = [str(entry["state"])] if "state" in entry else []
    parts += [f"{k} {show(v)}" for k, v in entry.items() if k not in ("key", "state")]
    return " ".join(parts)


def _key_changes(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[str]:
    old = {show(x["key"]): _rest(x) for x in a}
    new = {show(x["key"]): _rest(x) for x in b}
    out = []
    for key in [*old, *(k for k in new if k not in old)]:
        if key not in new:
            out.append(f"{key} {old[key]} -> gone")
        elif key not in old:
            out.append(f"{key} new, {new[key]}")
        elif old[key] != new[key]:
            out.append(f"{key} {old[key]} -> {new[key]}")
    return out


def show(value: Any) -> str:
    """An encoded value as it reads in Python: `{"hex": "6b30"}` as `b'k0'`, a key
    known only by its repr as that repr, lists and objects by their parts."""
    if isinstance(value, dict):
        if set(value) == {"hex"}:
            try:
                return repr(bytes.fromhex(str(value["hex"])))
            except ValueError:
                return f"0x{value['hex']}"
        if set(value) == {"repr"}:
            return str(value["repr"])
        return "{" + ", ".join(f"{k}={show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value) + "]"
    if isinstance(value, str):
        return repr(value)
    return "null" if value is None else str(value)


@dataclass(frozen=True)
class TraceStep:
    """One call of a trace, as data (see the module docstring).

    `op` is the method name, or `construct` (the factory call that builds the
    manager), `fault` (a call made with a policy hook failing: `fault` says which),
    `copy` (the run went on with a copy of the implementation). `outcome` and
    `model` are `{"result": ...}` or `{"error": {...}}`; `before` / `after` the
    implementation's observed state (None when not observed), `expected` the
    model's.
    """

    call: str
    op: str
    args: dict[str, Any] | None = None
    outcome: dict[str, Any] | None = None
    model: dict[str, Any] | None = None
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    note: str = ""
    raised: bool = False
    fault: dict[str, Any] | None = field(default=None)
    expected: dict[str, Any] | None = None
    """The model's state after the call, observed as the implementation's is (what
    `after` should have been; None when the model was not stepped)."""

    def as_dict(self) -> dict[str, Any]:
        """The step as report fields (`#/$defs/step` of the report schema)."""
        out: dict[str, Any] = {"call": self.call, "op": self.op}
        if self.args is not None:
            out["args"] = self.args
        if self.outcome is not None:
            out.update(self.outcome)
        if self.model is not None:
            out["model"] = self.model
        if self.fault is not None:
            out["fault"] = self.fault
        out["state_before"] = self.before
        out["state_after"] = self.after
        out["changes"] = state_diff(self.before, self.after)
        if self.expected is not None:
            out["state_expected"] = self.expected
            out["differs"] = state_diff(self.expected, self.after)
        if self.note:
            out["note"] = self.note
        return out


def outcome_of(op: str, raised: bool, value: Any) -> dict[str, Any]:
    """`{"result": ...}` or `{"error": {...}}` for one side's answer to `op`."""
    if raised:
        return {"error": encode_error(value)}
    return {"result": encode_result(op, value)}

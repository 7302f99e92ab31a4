"""Trace replay: check a recorded sequence of manager calls against the model.

`evictable replay TRACE.jsonl` reads a trace in the JSON Lines format below, makes
every call on a fresh `model.manager.ModelManager`, and reports the first call
whose recorded outcome differs from the model's, with its line number.

Format (UTF-8, one JSON object per line; blank lines are skipped):

* Optional header, first non-blank line:
  `{"num_blocks": 4, "policy": "lru", "enable_events": false}`
  (`policy` defaults to "lru", `enable_events` to false). Without a header the
  constructor arguments come from the command line (`--num-blocks` ...).
* One call per line: `{"op": OP, "args": {...}, "result": R}` or
  `{"op": OP, "args": {...}, "error": {"type": NAME, "keys": [K, ...]}}`;
  exactly one of `result` / `error`. `args` may be omitted for calls without one.

| op | args | result |
|---|---|---|
| `lookup` | `{"key": K}` | `"miss"`, `"hit_pending"` or `"hit"` |
| `prepare_store` | `{"keys": [K...]}` | `null` or `{"keys_to_store": [K...],` |
| | | `"slot_ids": [int...], "evicted_keys": [K...]}` |
| `complete_store` | `{"keys": [K...], "success": bool}` (success optional, true) | `[K...]` |
| `prepare_load` | `{"keys": [K...]}` | `[int...]` |
| `complete_load`, `touch` | `{"keys": [K...]}` | `null` |
| `reset_cache` | none | `null` |
| `take_events` | none | `[{"keys": [K...], "removed": bool}, ...]` |
| `num_evictable`, `num_pending` | none | int |

A key `K` is a JSON string, an integer, or `{"hex": "..."}` for bytes (vLLM's
block hashes). An error's `type` is the class name (e.g. `BlockNotFoundError`);
its `keys`, when given, must equal the model error's `keys`.

A line that is not valid JSON, not an object, names an unknown op or field, an
error type that is none of this project's errors, or has a value of the wrong shape
raises `TraceFormatError` (a `ValueError`) naming the line number; nothing is
replayed then.

**Structured traces.** `replay_text` also takes the trace of a JSON report
(`evictable check --json`): a whole report (its `finding`-th finding, the most
severe first), one finding, a `{"steps": [...]}` object or a bare list of steps
(`#/$defs/step`: `op`, `args`, `result` or `error`; the `construct` step gives the
header). A step made with an injected policy fault cannot be replayed on the model
(a format error); a `copy` step changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evictable.model import errors as error_module
from evictable.model.errors import LifecycleError
from evictable.model.manager import ModelManager
from evictable.model.types import Key, LookupResult, OffloadingEvent, PrepareStoreOutput
from evictable.proofs.base.trace import KeyDecodeError, encode_key, encode_result
from evictable.proofs.base.trace import decode_key as decode_json_key

__all__ = [
    "ERROR_TYPES",
    "Call",
    "Divergence",
    "Header",
    "ReplayReport",
    "TraceFormatError",
    "decode_key",
    "encode_key",
    "encode_result",
    "parse_structured",
    "parse_text",
    "parse_trace",
    "replay_file",
    "replay_lines",
    "replay_text",
    "trace_line",
]

ERROR_TYPES: frozenset[str] = frozenset(
    name
    for name in error_module.__all__
    if isinstance(getattr(error_module, name), type)
    and issubclass(getattr(error_module, name), LifecycleError)
)
"""The error types a trace may record: this project's errors, by class name."""


class TraceFormatError(ValueError):
    """A trace line (or, in a structured trace, a step) is malformed; `line` is its
    1-based number (`unit`: "line" or "step")."""

    def __init__(self, line: int, message: str, unit: str = "line") -> None:
        self.line = line
        self.reason = message
        self.unit = unit
        super().__init__(f"{unit} {line}: {message}")


@dataclass(frozen=True)
class Header:
    num_blocks: int
    policy: str = "lru"
    enable_events: bool = False


@dataclass(frozen=True)
class Call:
    """One parsed call: `expect` is the decoded result, or an `(type, keys)` error."""

    line: int
    op: str
    args: dict[str, Any]
    raised: bool
    expect: Any
    unit: str = "line"
    """`line` of JSON lines, or `step` of a structured trace."""

    def text(self) -> str:
        if "key" in self.args:
            return f"{self.op}({self.args['key']!r})"
        if "keys" not in self.args:
            return f"{self.op}()"
        extra = "" if self.args.get("success", True) else ", success=False"
        return f"{self.op}({list(self.args['keys'])!r}{extra})"


@dataclass(frozen=True)
class Divergence:
    line: int
    call: str
    recorded: str
    model: str


@dataclass(frozen=True)
class ReplayReport:
    header: Header
    calls: int
    divergence: Divergence | None
    unit: str = "line"
    """Where a divergence is: a `line` of JSON lines, or a `step` of a structured trace."""

    @property
    def ok(self) -> bool:
        return self.divergence is None

    def text(self) -> str:
        h = self.header
        head = (
            f"replayed {self.calls} calls on ModelManager({h.num_blocks}, "
            f"{h.policy!r}, {h.enable_events})"
        )
        d = self.divergence
        if d is None:
            return f"{head}: every recorded outcome matches the model"
        return (
            f"{head}: first divergence at {self.unit} {d.line}: {d.call}\n"
            f"  recorded: {d.recorded}\n  model:    {d.model}"
        )


# ------------------------------------------------------------------ keys and values


def decode_key(value: Any, line: int) -> Key:
    """A JSON key: a string, an integer, or `{"hex": "..."}` (bytes)."""
    try:
        return decode_json_key(value)
    except KeyDecodeError as exc:
        raise TraceFormatError(line, str(exc)) from None


def _keys(value: Any, line: int, what: str) -> list[Key]:
    if not isinstance(value, list):
        raise TraceFormatError(line, f"{what} must be a list of keys, got {json.dumps(value)}")
    return [decode_key(v, line) for v in value]


def _ints(value: Any, line: int, what: str) -> list[int]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise TraceFormatError(line, f"{what} must be a list of integers, got {json.dumps(value)}")
    return list(value)


def _null(value: Any, line: int, op: str) -> None:
    if value is not None:
        raise TraceFormatError(line, f"{op} returns null, got {json.dumps(value)}")


def _result(op: str, value: Any, line: int) -> Any:
    """The recorded result decoded into the Python value the manager returns."""
    if op == "lookup":
        try:
            return LookupResult(value)
        except ValueError:
            raise TraceFormatError(
                line, f"lookup result must be one of {[r.value for r in LookupResult]}"
            ) from None
    if op == "prepare_store":
        if value is None:
            return None
        fields = {"keys_to_store", "slot_ids", "evicted_keys"}
        if not isinstance(value, dict) or set(value) != fields:
            raise TraceFormatError(
                line,
                f"prepare_store result must be null or an object with exactly {sorted(fields)}",
            )
        return PrepareStoreOutput(
            _keys(value["keys_to_store"], line, "keys_to_store"),
            _ints(value["slot_ids"], line, "slot_ids"),
            _keys(value["evicted_keys"], line, "evicted_keys"),
        )
    if op == "complete_store":
        if value is None:  # not reported (vLLM's returns nothing): not compared
            return None
        return _keys(value, line, "complete_store result")
    if op == "prepare_load":
        return _ints(value, line, "prepare_load result")
    if op == "take_events":
        if not isinstance(value, list):
            raise TraceFormatError(line, "take_events result must be a list of events")
        events = []
        for ev in value:
            if (
                not isinstance(ev, dict)
                or set(ev) != {"keys", "removed"}
                or not isinstance(ev["removed"], bool)
            ):
                raise TraceFormatError(line, 'an event must be {"keys": [...], "removed": bool}')
            events.append(
                OffloadingEvent(tuple(_keys(ev["keys"], line, "event keys")), ev["removed"])
            )
        return events
    if op in ("num_evictable", "num_pending"):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TraceFormatError(line, f"{op} must be an integer")
        return value
    _null(value, line, op)
    return None


_ARGS: dict[str, frozenset[str]] = {
    "lookup": frozenset({"key"}),
    "prepare_store": frozenset({"keys"}),
    "complete_store": frozenset({"keys", "success"}),
    "prepare_load": frozenset({"keys"}),
    "complete_load": frozenset({"keys"}),
    "touch": frozenset({"keys"}),
    "reset_cache": frozenset(),
    "take_events": frozenset(),
    "num_evictable": frozenset(),
    "num_pending": frozenset(),
}
_REQUIRED: dict[str, frozenset[str]] = {op: names - {"success"} for op, names in _ARGS.items()}


def _args(op: str, raw: Any, line: int) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise TraceFormatError(line, f"args must be an object, got {json.dumps(raw)}")
    extra, missing = set(raw) - _ARGS[op], _REQUIRED[op] - set(raw)
    if extra or missing:
        raise TraceFormatError(
            line,
            f"{op} takes args {sorted(_ARGS[op])}; "
            f"unknown {sorted(extra)}, missing {sorted(missing)}",
        )
    out: dict[str, Any] = {}
    if "key" in raw:
        out["key"] = decode_key(raw["key"], line)
    if "keys" in raw:
        out["keys"] = _keys(raw["keys"], line, "keys")
    if "success" in raw:
        if not isinstance(raw["success"], bool):
            raise TraceFormatError(line, "success must be true or false")
        out["success"] = raw["success"]
    return out


def _error(raw: Any, line: int) -> tuple[str, tuple[Key, ...] | None]:
    if (
        not isinstance(raw, dict)
        or "type" not in raw
        or not set(raw) <= {"type", "keys", "fields", "message"}
        or not isinstance(raw["type"], str)
        or not raw["type"].isidentifier()
    ):
        raise TraceFormatError(
            line, 'error must be {"type": "ErrorName", "keys": [...]} (keys optional)'
        )
    if raw["type"] not in ERROR_TYPES:
        raise TraceFormatError(
            line,
            f"unknown error type {raw['type']!r}: a trace records this project's errors "
            f"({', '.join(sorted(ERROR_TYPES))})",
        )
    keys = tuple(_keys(raw["keys"], line, "error keys")) if "keys" in raw else None
    return raw["type"], keys


def _header(obj: dict[str, Any], line: int) -> Header:
    allowed = {"num_blocks", "policy", "enable_events"}
    if set(obj) - allowed:
        raise TraceFormatError(line, f"unknown header fields {sorted(set(obj) - allowed)}")
    nb, pol, ev = obj.get("num_blocks"), obj.get("policy", "lru"), obj.get("enable_events", False)
    if not isinstance(nb, int) or isinstance(nb, bool) or nb < 0:
        raise TraceFormatError(line, "header num_blocks must be a non-negative integer")
    if not isinstance(pol, str) or not isinstance(ev, bool):
        raise TraceFormatError(line, "header policy must be a string, enable_events a boolean")
    return Header(nb, pol, ev)


def parse_trace(lines: Iterable[str]) -> tuple[Header | None, list[Call]]:
    """Parse a whole trace (raising `TraceFormatError` on the first malformed line)."""
    header: Header | None = None
    calls: list[Call] = []
    seen_any = False
    for no, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text.strip())
        except json.JSONDecodeError as exc:
            raise TraceFormatError(no, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise TraceFormatError(no, f"expected a JSON object, got {type(obj).__name__}")
        if "op" not in obj:
            if seen_any or "num_blocks" not in obj:
                raise TraceFormatError(
                    no, 'missing "op" (only the first line may be a header with "num_blocks")'
                )
            header = _header(obj, no)
            seen_any = True
            continue
        seen_any = True
        op = obj["op"]
        if not isinstance(op, str) or op not in _ARGS:
            raise TraceFormatError(no, f"unknown op {json.dumps(op)}; known: {sorted(_ARGS)}")
        unknown = set(obj) - {"op", "args", "result", "error"}
        if unknown:
            raise TraceFormatError(no, f"unknown fields {sorted(unknown)}")
        if ("result" in obj) == ("error" in obj):
            raise TraceFormatError(no, 'exactly one of "result" and "error" is required')
        args = _args(op, obj.get("args", {}), no)
        if "error" in obj:
            calls.append(Call(no, op, args, True, _error(obj["error"], no)))
        else:
            calls.append(Call(no, op, args, False, _result(op, obj["result"], no)))
    return header, calls


def _call_of(step: Any, n: int) -> Call | None:
    """One structured step as a call (None: a step that changes nothing)."""
    if not isinstance(step, dict) or not isinstance(step.get("op"), str):
        raise TraceFormatError(n, 'a step must be an object with an "op"', "step")
    op = step["op"]
    if op == "copy":
        return None
    if step.get("fault") is not None:
        raise TraceFormatError(
            n, f"{op} was made with an injected policy fault, which the model cannot replay", "step"
        )
    if op not in _ARGS:
        raise TraceFormatError(n, f"unknown op {op!r}; known: {sorted(_ARGS)}", "step")
    if ("result" in step) == ("error" in step):
        raise TraceFormatError(n, 'exactly one of "result" and "error" is required', "step")
    try:
        args = _args(op, step.get("args", {}), n)
        if "error" in step:
            return Call(n, op, args, True, _error(step["error"], n), "step")
        return Call(n, op, args, False, _result(op, step["result"], n), "step")
    except TraceFormatError as exc:
        raise TraceFormatError(n, exc.reason, "step") from None


def _steps_of(doc: Any, finding: int) -> list[Any]:
    """The steps of a structured trace document (see the module docstring)."""
    if isinstance(doc, list):
        return doc
    if not isinstance(doc, dict):
        raise TraceFormatError(1, "a structured trace is a JSON object or a list of steps")
    if "findings" in doc:
        found = doc["findings"]
        if not isinstance(found, list) or not found:
            raise TraceFormatError(1, "the report has no finding, so no trace to replay")
        if not 1 <= finding <= len(found):
            raise TraceFormatError(
                1, f"the report has {len(found)} finding(s); there is no finding {finding}"
            )
        doc = found[finding - 1]
    steps = doc.get("steps", doc.get("trace"))
    if not isinstance(steps, list):
        raise TraceFormatError(1, 'a structured trace needs "steps" (or "trace"): a list of steps')
    return steps


def parse_structured(doc: Any, finding: int = 1) -> tuple[Header | None, list[Call]]:
    """A structured trace (see the module docstring): its header (from the `construct`
    step) and its calls. Raises `TraceFormatError` naming the step."""
    header: Header | None = None
    calls: list[Call] = []
    for n, step in enumerate(_steps_of(doc, finding)):
        if isinstance(step, dict) and step.get("op") == "construct":
            raw = step.get("args")
            if not isinstance(raw, dict):
                raise TraceFormatError(n, "the construct step has no args", "step")
            try:
                header = _header(raw, n)
            except TraceFormatError as exc:
                raise TraceFormatError(n, exc.reason, "step") from None
            continue
        call = _call_of(step, n)
        if call is not None:
            calls.append(call)
    return header, calls


# ------------------------------------------------------------------ recording


def trace_line(
    op: str,
    args: dict[str, Any] | None = None,
    *,
    result: Any = None,
    error: BaseException | None = None,
) -> str:
    """One JSONL line recording a call and its outcome (a result, or `error`).

    `args` holds Python values (`keys` as a list of keys, `key`, `success`).
    """
    raw: dict[str, Any] = {}
    for name, value in (args or {}).items():
        if name == "keys":
            raw[name] = [encode_key(k) for k in value]
        elif name == "key":
            raw[name] = encode_key(value)
        else:
            raw[name] = value
    line: dict[str, Any] = {"op": op, "args": raw}
    if error is not None:
        err: dict[str, Any] = {"type": type(error).__name__}
        if isinstance(error, LifecycleError):
            err["keys"] = [encode_key(k) for k in error.keys]
        line["error"] = err
    else:
        line["result"] = encode_result(op, result)
    return json.dumps(line)


# ------------------------------------------------------------------ replay


def _make_call(model: ModelManager, call: Call) -> tuple[bool, Any]:
    a = call.args
    try:
        if call.op == "lookup":
            return False, model.lookup(a["key"])
        if call.op in ("num_evictable", "num_pending"):
            return False, getattr(model, call.op)
        if call.op in ("reset_cache", "take_events"):
            return False, getattr(model, call.op)()
        if call.op == "complete_store":
            return False, model.complete_store(a["keys"], success=a.get("success", True))
        return False, getattr(model, call.op)(a["keys"])
    except LifecycleError as exc:
        return True, exc


def _show_error(name: str, keys: tuple[Key, ...] | None) -> str:
    return f"raises {name}" + (f"(keys={keys!r})" if keys is not None else "")


def replay_lines(lines: Iterable[str], header: Header | None = None) -> ReplayReport:
    """Replay a trace given as JSON lines; `header` overrides the trace's own header."""
    found, calls = parse_trace(lines)
    return _replay(found, calls, header, "line")


def replay_text(text: str, header: Header | None = None, finding: int = 1) -> ReplayReport:
    """Replay a trace given as text: JSON lines, or one JSON document holding a
    structured trace (a report, a finding, steps; see the module docstring)."""
    found, calls = parse_text(text, finding)
    unit = "step" if calls and calls[0].unit == "step" else "line"
    return _replay(found, calls, header, unit)


def parse_text(text: str, finding: int = 1) -> tuple[Header | None, list[Call]]:
    """A trace given as text, JSON lines or a structured trace: its header and calls
    (`Call.unit` says which)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        doc = None
    structured = isinstance(doc, list) or (
        isinstance(doc, dict) and ({"findings", "steps", "trace"} & set(doc)) and "op" not in doc
    )
    if structured:
        return parse_structured(doc, finding)
    return parse_trace(text.splitlines())


def _replay(
    found: Header | None, calls: list[Call], header: Header | None, unit: str
) -> ReplayReport:
    head = header or found
    if head is None:
        raise TraceFormatError(
            1,
            "no header line and no constructor arguments given "
            '(add {"num_blocks": N} as the first line)',
        )
    try:
        model = ModelManager(head.num_blocks, head.policy, head.enable_events)
    except LifecycleError as exc:
        raise TraceFormatError(1, f"the model rejects the header: {exc}") from None
    for n, call in enumerate(calls, start=1):
        raised, value = _make_call(model, call)
        if call.raised:
            name, keys = call.expect
            recorded = _show_error(name, keys)
            same = (
                raised
                and type(value).__name__ == name
                and (keys is None or tuple(value.keys) == keys)
            )
        elif call.op == "complete_store" and call.expect is None:
            recorded = "-> None (not reported)"
            same = not raised
        else:
            recorded = f"-> {call.expect!r}"
            same = not raised and value == call.expect
        if not same:
            shown = (
                _show_error(type(value).__name__, tuple(value.keys)) if raised else f"-> {value!r}"
            )
            return ReplayReport(head, n, Divergence(call.line, call.text(), recorded, shown), unit)
    return ReplayReport(head, len(calls), None, unit)


def replay_file(path: str | Path, header: Header | None = None, finding: int = 1) -> ReplayReport:
    """Replay the trace in `path`: JSON lines or a structured trace (see the module
    docstring)."""
    with open(path, encoding="utf-8") as fh:
        return replay_text(fh.read(), header, finding)

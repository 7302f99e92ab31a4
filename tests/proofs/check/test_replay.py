"""Trace replay: recorded calls checked against the model, and malformed traces."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evictable.impl.manager import CPUOffloadingManager
from evictable.model.errors import LifecycleError
from evictable.proofs.check.replay import (
    Header,
    TraceFormatError,
    decode_key,
    encode_key,
    parse_trace,
    replay_file,
    replay_lines,
    trace_line,
)

HEADER = json.dumps({"num_blocks": 2, "policy": "lru", "enable_events": True})


def _record(calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Make `calls` on the implementation and record them as trace lines."""
    impl = CPUOffloadingManager(2, "lru", True)
    lines = [HEADER]
    for op, args in calls:
        fn: Callable[..., Any] = getattr(impl, op)
        try:
            if op in ("num_evictable", "num_pending"):
                result = fn
            elif "key" in args:
                result = fn(args["key"])
            elif "keys" in args:
                result = fn(list(args["keys"]), **{k: v for k, v in args.items() if k != "keys"})
            else:
                result = fn()
        except LifecycleError as exc:
            lines.append(trace_line(op, args, error=exc))
        else:
            lines.append(trace_line(op, args, result=result))
    return lines


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("prepare_store", {"keys": ["a", b"\x00\xff"]}),
    ("lookup", {"key": "a"}),
    ("complete_store", {"keys": ["a", b"\x00\xff"]}),
    ("prepare_load", {"keys": ["a", "missing"]}),
    ("prepare_load", {"keys": ["a"]}),
    ("num_evictable", {}),
    ("prepare_store", {"keys": ["c", "d"]}),
    ("complete_load", {"keys": ["a"]}),
    ("touch", {"keys": ["a", "a", "zz"]}),
    ("complete_store", {"keys": ["c"], "success": False}),
    ("take_events", {}),
    ("complete_load", {"keys": ["a", "a"]}),
    ("reset_cache", {}),
    ("num_pending", {}),
]


def test_replays_a_recorded_implementation_trace_without_divergence() -> None:
    report = replay_lines(_record(CALLS))
    assert report.ok, report.text()
    assert report.calls == len(CALLS)
    assert "every recorded outcome matches" in report.text()


def test_reports_the_first_divergence_with_its_line_number() -> None:
    lines = _record(CALLS)
    doctored = json.loads(lines[5])  # line 6: prepare_load(['a']) -> [0]
    doctored["result"] = [1]
    lines[5] = json.dumps(doctored)
    lines[8] = lines[8].replace('"a"', '"b"')  # a later divergence is not reported
    report = replay_lines(lines)
    assert report.divergence is not None
    assert report.divergence.line == 6
    assert report.divergence.recorded == "-> [1]" and report.divergence.model == "-> [0]"
    assert "line 6" in report.text()


def test_reports_a_wrong_error_as_a_divergence() -> None:
    lines = [
        HEADER,
        trace_line("prepare_load", {"keys": ["x"]}, error=LifecycleError("x", keys=["x"])),
    ]
    report = replay_lines(lines)
    assert report.divergence is not None and report.divergence.line == 2
    assert "BlockNotFoundError" in report.divergence.model


def test_reports_an_error_the_model_does_not_raise() -> None:
    ok_call = json.dumps(
        {"op": "lookup", "args": {"key": "a"}, "error": {"type": "BlockNotFoundError"}}
    )
    report = replay_lines([HEADER, "", ok_call])
    assert report.divergence is not None and report.divergence.line == 3


def test_error_keys_are_optional_but_compared_when_given() -> None:
    base = {"op": "complete_load", "args": {"keys": ["q"]}}
    loose = json.dumps({**base, "error": {"type": "BlockNotFoundError"}})
    wrong = json.dumps({**base, "error": {"type": "BlockNotFoundError", "keys": ["r"]}})
    assert replay_lines([HEADER, loose]).ok
    assert not replay_lines([HEADER, wrong]).ok


def test_keys_round_trip_through_json() -> None:
    for key in ("a", 7, b"\x01\xab"):
        assert decode_key(json.loads(json.dumps(encode_key(key))), 1) == key
    with pytest.raises(TypeError):
        encode_key(("tuple", "key"))


def test_header_can_come_from_the_caller() -> None:
    body = [json.dumps({"op": "prepare_store", "args": {"keys": ["a", "b", "c"]}, "result": None})]
    assert replay_lines(body, Header(2)).ok
    with pytest.raises(TraceFormatError, match="no header"):
        replay_lines(body)


def test_replays_a_file(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(_record(CALLS)) + "\n", encoding="utf-8")
    assert replay_file(path).ok


MALFORMED = [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"op": "prepare_stor", "args": {"keys": []}, "result": null}', "unknown op"),
    ('{"op": "touch", "args": {"keys": ["a"]}}', "exactly one of"),
    (
        '{"op": "touch", "args": {"keys": ["a"]}, "result": null, "error": {"type": "X"}}',
        "exactly one of",
    ),
    ('{"op": "touch", "args": {"keys": [1.5]}, "result": null}', "a key must be"),
    ('{"op": "touch", "args": {"keys": [{"hex": "zz"}]}, "result": null}', "bad hex"),
    ('{"op": "touch", "args": {"key": "a"}, "result": null}', "takes args"),
    ('{"op": "touch", "args": {"keys": "a"}, "result": null}', "must be a list"),
    ('{"op": "touch", "args": [], "result": null}', "args must be an object"),
    ('{"op": "touch", "args": {"keys": []}, "result": 3}', "returns null"),
    ('{"op": "lookup", "args": {"key": "a"}, "result": "maybe"}', "lookup result"),
    ('{"op": "prepare_load", "args": {"keys": []}, "result": [true]}', "list of integers"),
    (
        '{"op": "prepare_store", "args": {"keys": []}, "result": {"slot_ids": []}}',
        "prepare_store result",
    ),
    ('{"op": "take_events", "result": [{"keys": []}]}', "an event must be"),
    (
        '{"op": "complete_store", "args": {"keys": [], "success": 1}, "result": []}',
        "success must be",
    ),
    ('{"op": "num_pending", "result": "0"}', "must be an integer"),
    ('{"op": "touch", "args": {"keys": []}, "error": {"kind": "X"}}', "error must be"),
    ('{"op": "touch", "args": {"keys": []}, "result": null, "note": 1}', "unknown fields"),
    ('{"num_blocks": 3}', "only the first line may be a header"),
]


@pytest.mark.parametrize(("line", "message"), MALFORMED)
def test_rejects_malformed_lines_with_their_line_number(line: str, message: str) -> None:
    lines = [HEADER, '{"op": "reset_cache", "result": null}', line]
    with pytest.raises(TraceFormatError, match=message) as info:
        parse_trace(lines)
    assert info.value.line == 3
    assert str(info.value).startswith("line 3: ")
    assert isinstance(info.value, ValueError) and not isinstance(info.value, LifecycleError)


@pytest.mark.parametrize(
    "header",
    [
        '{"num_blocks": -1}',
        '{"num_blocks": true}',
        '{"num_blocks": 2, "policy": 3}',
        '{"num_blocks": 2, "colour": "red"}',
    ],
)
def test_rejects_malformed_headers(header: str) -> None:
    with pytest.raises(TraceFormatError) as info:
        parse_trace([header])
    assert info.value.line == 1


def test_rejects_a_header_the_model_refuses() -> None:
    with pytest.raises(TraceFormatError, match="rejects the header"):
        replay_lines(['{"num_blocks": 2, "policy": "no-such-policy"}'])

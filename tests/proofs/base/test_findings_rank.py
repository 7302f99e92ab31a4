"""Findings ranked by severity, consequences folded, events compared as collections."""

from __future__ import annotations

from evictable.model.types import OffloadingEvent
from evictable.proofs.base.compare import Kind, Reply, UnorderedKeys, canonical, judge
from evictable.proofs.base.findings import SEVERITY, Finding, rank, severity


def _event(keys: object, removed: bool) -> OffloadingEvent:
    """An event whose keys are any collection, as a third-party manager may make it."""
    return OffloadingEvent(keys, removed)  # type: ignore[arg-type]


def _finding(kind: Kind, calls: list[str]) -> Finding:
    trace = "\n".join(f"{c}  # note" for c in calls)
    return Finding(kind, "conformance", f"{kind.value}!", trace, trace, len(calls))


def test_safety_comes_before_atomicity_behaviour_accounting_and_error_types() -> None:
    found = [
        _finding(Kind.ERROR, ["m = f()", "m.touch([1])"]),
        _finding(Kind.ACCOUNTING, ["m = f()", "m.touch([2])"]),
        _finding(Kind.RESULT, ["m = f()", "m.touch([3])"]),
        _finding(Kind.LEAKED_PIN, ["m = f()", "m.touch([4])"]),
        _finding(Kind.EVICTED_PINNED, ["m = f()", "m.touch([5])", "m.touch([6])"]),
    ]
    tiers = [severity(f.kind) for f in rank(found)]
    assert tiers == ["safety", "atomicity", "behaviour", "accounting", "error type"]
    assert [name for name, _ in SEVERITY][:5] == tiers


def test_the_shortest_trace_comes_first_among_equals() -> None:
    long = _finding(Kind.SLOT, ["m = f()", "m.a()", "m.b()"])
    short = _finding(Kind.EVICTED_PINNED, ["m = f()", "m.c()"])
    assert [f.calls for f in rank([long, short])] == [2, 3]


def test_a_consequence_on_the_same_trace_is_folded_into_the_earlier_finding() -> None:
    cause = _finding(Kind.LEAKED_PIN, ["m = f()", "m.prepare_load([1, 2])"])
    same_call = _finding(Kind.ERROR, ["m = f()", "m.prepare_load([1, 2])"])
    later = _finding(Kind.ACCOUNTING, ["m = f()", "m.prepare_load([1, 2])", "m.touch([1])"])
    elsewhere = _finding(Kind.ERROR, ["m = f()", "m.complete_load([3])"])
    (first, second) = rank([later, elsewhere, same_call, cause])
    assert first.kind is Kind.LEAKED_PIN
    assert [k for k, _ in first.consequences] == [Kind.ACCOUNTING, Kind.ERROR]  # by severity
    assert second.kind is Kind.ERROR and not second.consequences
    assert "(a consequence)" in first.text(1)


def test_a_more_severe_class_is_never_folded_into_a_milder_one() -> None:
    mild = _finding(Kind.ERROR, ["m = f()", "m.a()"])
    severe = _finding(Kind.SLOT, ["m = f()", "m.a()", "m.b()"])
    assert [f.kind for f in rank([mild, severe])] == [Kind.SLOT, Kind.ERROR]


def test_event_keys_in_a_list_a_tuple_or_a_set_are_the_same_event() -> None:
    model = [OffloadingEvent((b"a", b"b"), True)]
    for keys in ([b"a", b"b"], (b"a", b"b")):
        impl = [_event(keys, True)]
        assert judge(Reply(False, model), Reply(False, impl), 0, 0, 0, 0) is None
    as_set = [_event({b"b", b"a"}, True)]
    assert canonical(as_set) == canonical(model)
    assert UnorderedKeys({b"a"}) != [b"a", b"a"]


def test_events_with_other_keys_order_or_flag_still_differ() -> None:
    model = [OffloadingEvent((b"a", b"b"), True)]
    for other in (
        [_event([b"b", b"a"], True)],  # a list has an order
        [_event([b"a", b"b"], False)],
        [_event([b"a"], True)],
    ):
        mismatch = judge(Reply(False, model), Reply(False, other), 0, 0, 0, 0)
        assert mismatch is not None and mismatch.kind is Kind.RESULT

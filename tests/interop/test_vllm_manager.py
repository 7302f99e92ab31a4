"""vLLM 0.33's CPUOffloadingManager under the safety contract: exactly its real defects.

The verdicts of docs/interop.md: with the shipped adapter (safety contract, any
exception as the rejection, no malformed arguments, vLLM's own key format) both
policies show three classes of finding, each once, each with its shortest trace --
and nothing else.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import jsonschema
import pytest

pytest.importorskip("vllm")

from evictable.proofs.cli.report import schema
from tests.interop.conftest import classes, finding

DEFECTS = {"slot", "leaked_pin", "atomicity"}


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_the_manager_shows_exactly_its_three_defects(check: Any, policy: str) -> None:
    code, report, out = check(f"evictable.proofs.adapters.vllm:{policy}_manager", "--seed", "0")
    jsonschema.validate(report, schema())
    assert code == 1 and report["verdict"] == "rejected"
    assert sorted(classes(report)) == sorted(DEFECTS), out
    assert report["contract"]["mode"] == "safety" and report["contract"]["errors"] == "any"
    assert set(report["timings"]) >= {"import_s", "conformance_s", "explorer_s"}

    slot = finding(report, "slot")
    assert slot["calls"] == 1
    assert "m.prepare_store([K(0), K(0)])" in slot["snippet"]
    assert "slot_ids=[0, 1]" in slot["snippet"] and "orphaned" in slot["reason"]

    pin = finding(report, "leaked_pin")
    assert pin["calls"] == 3
    assert "m.prepare_load([K(0), K(1)])" in pin["snippet"]
    assert "READY ref 0 -> LOADING ref 1" in pin["reason"]

    atom = finding(report, "atomicity")
    assert atom["calls"] == 4
    assert "m.complete_load([K(0), K(1)])" in atom["snippet"]
    assert "LOADING ref 1 -> READY ref 0" in atom["reason"]


def test_every_snippet_fails_on_vllm_with_its_finding(check: Any) -> None:
    _, report, _ = check("evictable.proofs.adapters.vllm:lru_manager", "--seed", "0")
    for f in report["findings"]:
        got = subprocess.run(
            [sys.executable, "-c", f["snippet"]], capture_output=True, text=True, timeout=120
        )
        last = (got.stderr.strip().splitlines() or [""])[-1]
        assert got.returncode == 1, (f["class"], got.stderr[-2000:])
        assert last == f"AssertionError: {f['reason']}", (f["class"], last)


def test_black_box_sees_the_same_three_classes_and_what_they_lead_to(check: Any) -> None:
    """Without snapshots the three defects are still found. A partial `complete_load`
    or `prepare_load` that raised may also show later, first as counters off by one,
    and is then followed to what it leads to: a block evicted while its caller still
    loads it, a store refused although an idle block could go -- the same defects
    seen by their consequences, each with the failed call in its trace and the
    counters as its cause."""
    code, report, out = check(
        "evictable.proofs.adapters.vllm:lru_manager", "--black-box", "--seed", "0"
    )
    found = set(classes(report))
    consequences = {"evicted_pinned", "store_verdict", "accounting", "unlisted"}
    assert code == 1 and set(DEFECTS) <= found <= DEFECTS | consequences, out
    for cls in found - DEFECTS:
        f = finding(report, cls)
        assert "with suppress(Exception): m.complete_load(" in f["snippet"] or (
            "with suppress(Exception): m.prepare_load(" in f["snippet"]
        ), f["snippet"]
        assert cls in ("accounting", "unlisted") or f["cause"]["class"] in consequences
    assert report["contract"]["black_box"] is True


def test_builtin_errors_add_one_class_the_asserts_where_a_key_error_is_due(check: Any) -> None:
    code, report, out = check(
        "evictable.proofs.adapters.vllm:lru_manager", "--errors", "builtin", "--seed", "0"
    )
    assert code == 1 and sorted(classes(report)) == sorted(DEFECTS | {"error"}), out
    err = finding(report, "error")
    assert "BlockNotFoundError" in err["reason"] and "AssertionError" in err["reason"]


def test_the_exact_contract_rejects_vllm_on_its_legitimate_choices(check: Any) -> None:
    """What a plain adapter would see: recency and slot order differ from this project's
    design, which the exact contract (rightly) compares."""
    code, report, _ = check(
        "evictable.proofs.adapters.vllm:lru_manager",
        "--contract",
        "exact",
        "--seed",
        "0",
        "--no-explore",
    )
    assert code == 1 and set(classes(report)) - DEFECTS

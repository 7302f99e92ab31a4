"""`evictable check --profile vllm-0.33 --contract exact`: vLLM 0.33's own semantics.

Under the `vllm-0.33` profile (model/vllm033.py: request-scoped recency, ReqContext
positions, the events 0.33 emits) the exact contract compares recency, victims,
slots and events. vLLM's real manager, with its own LRU or ARC, shows exactly its
three real defects (a repeated key in one `prepare_store` handled per occurrence:
an orphaned slot; a failing `prepare_load` leaks pins; a failing `complete_load`
is not atomic) and no semantic difference. With evictable's `EvictableLRU` /
`EvictableARC` plugged in through vLLM's factory the verdict is the same three
defects -- they are the manager's, whatever policy it holds -- and over valid calls
(where the manager's defects cannot fire) nothing at all.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

pytest.importorskip("vllm")

from evictable.proofs.cli.report import schema
from tests.interop.conftest import classes, finding

DEFECTS = {"slot", "leaked_pin", "atomicity"}
EXACT = ("--profile", "vllm-0.33", "--contract", "exact", "--seed", "0")


@pytest.mark.parametrize("target", ["lru", "arc", "evictable_lru", "evictable_arc"])
def test_the_033_profile_finds_exactly_the_three_defects(check: Any, target: str) -> None:
    code, report, out = check(f"evictable.proofs.adapters.vllm:{target}_manager", *EXACT)
    jsonschema.validate(report, schema())
    assert code == 1 and report["verdict"] == "rejected"
    assert report["contract"]["mode"] == "exact"
    assert report["contract"]["profile"] == "vllm-0.33"
    assert sorted(classes(report)) == sorted(DEFECTS), out

    slot = finding(report, "slot")
    assert slot["calls"] == 1 and "m.prepare_store([K(0), K(0)])" in slot["snippet"]
    pin = finding(report, "leaked_pin")
    assert "prepare_load" in pin["reason"] and "nothing will release" in pin["reason"]
    atom = finding(report, "atomicity")
    assert "complete_load" in atom["reason"]


@pytest.mark.parametrize("target", ["evictable_lru", "evictable_arc"])
def test_the_plug_in_conforms_exactly_over_valid_calls(check: Any, target: str) -> None:
    code, report, out = check(
        f"evictable.proofs.adapters.vllm:{target}_manager", *EXACT, "--valid-only"
    )
    assert code == 0 and report["verdict"] == "conforms", out
    assert report["findings"] == []


def test_the_seed_profile_is_still_the_default(check: Any) -> None:
    _, report, _ = check("evictable.proofs.adapters.vllm:lru_manager", "--seed", "0")
    assert report["contract"]["profile"] == "seed"

"""vLLM 0.33's free queue, block pool and lazy offload walk under the safety contract.

The queue and the pool conform for valid calls (vLLM trusts its caller for the rest);
the lazy walk fails scan completeness on vLLM's real code: a cursor block that is
allocated, hashed and freed between two steps strands the cursor at the back of the
queue, and every later step selects nothing.
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


@pytest.mark.parametrize("target", ["free-queue", "block-pool"])
def test_queue_and_pool_conform_for_valid_calls(check: Any, target: str) -> None:
    spec = f"evictable.proofs.adapters.vllm:{target.replace('-', '_')}"
    code, report, out = check(spec, "--target", target, "--examples", "60", "--seed", "0")
    jsonschema.validate(report, schema())
    assert code == 0 and report["verdict"] == "conforms", out
    assert report["contract"]["inputs"]["invalid"] is False


def test_the_queue_accepts_what_this_projects_refuses(check: Any) -> None:
    code, report, out = check(
        "evictable.proofs.adapters.vllm:free_queue",
        "--target",
        "free-queue",
        "--all-inputs",
        "--examples",
        "60",
        "--seed",
        "0",
    )
    assert code == 1 and "accepted_bad_call" in classes(report), out


def test_the_lazy_walk_fails_scan_completeness_with_the_shortest_trace(check: Any) -> None:
    code, report, out = check("evictable.proofs.adapters.vllm:lazy_scanner", "--target", "lazy")
    jsonschema.validate(report, schema())
    assert code == 1 and classes(report) == ["scan"], out
    scan = finding(report, "scan")
    assert scan["calls"] == 5  # four calls, then the drain
    lines = [line.split("  #")[0] for line in scan["snippet"].splitlines()]
    assert lines[6:10] == [
        "capacity[0] = 1; print([b.block_id for b in scanner.step()])",
        "[b.block_id for b in pool.get_new_blocks(1)]",
        "pool.cache_block(pool.blocks[1], 'a')",
        "pool.free_blocks([pool.blocks[1]])",
    ]
    assert "block(s) [1]" in scan["reason"] and "never selected" in scan["reason"]
    got = subprocess.run(
        [sys.executable, "-c", scan["snippet"]], capture_output=True, text=True, timeout=120
    )
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stdout.split() == ["[]"] * 5  # the first step and the four of the drain

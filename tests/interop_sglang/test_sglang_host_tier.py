"""`evictable check --profile sglang-0.5 --contract exact` on SGLang 0.5's host tier.

SGLang's HiCache host tier (`UnifiedRadixCache` over `UnifiedTreeCore`, write-through,
its `LogicalHostPool`), driven by `evictable.sglang.host_tier`, conforms exactly to the
`sglang-0.5` profile (model/sglang05.py): the set of findings is empty, so there is no
finding script. The same check rejects SGLang's tree core with its host-leaf rule
broken (`broken_tiers`), so the empty set is the check's verdict, not its blindness.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

pytest.importorskip("sglang")

from evictable.model.lifecycle import CpuState
from evictable.model.types import LookupResult, PrepareStoreOutput
from evictable.proofs.cli.report import schema

SEED = ("--seed", "0")
FINDINGS: set[str] = set()
"""The finding classes SGLang 0.5's host tier shows under the profile: none."""


def test_the_host_tier_conforms_exactly_to_the_profile(check: Any) -> None:
    code, report, out = check("evictable.sglang:host_tier", *SEED)
    jsonschema.validate(report, schema())
    assert report["contract"]["mode"] == "exact"
    assert report["contract"]["profile"] == "sglang-0.5"
    assert {f["class"] for f in report["findings"]} == FINDINGS, out
    assert code == 0 and report["verdict"] == "conforms", out


@pytest.mark.parametrize("broken", ["ignores_locks", "keeps_stale_leaves"])
def test_a_broken_host_leaf_rule_is_rejected(check: Any, broken: str) -> None:
    # the conformance engine alone finds either break within its first examples
    args = ("--no-explore", "--examples", "50")
    code, report, out = check(f"tests.interop_sglang.broken_tiers:{broken}", *SEED, *args)
    assert code == 1 and report["verdict"] == "rejected", out
    assert report["findings"], out


def test_the_adapter_drives_sglangs_own_tree() -> None:
    from evictable.sglang import SglangHostTier

    tier = SglangHostTier(1)
    assert tier.prepare_store(["a"]) == PrepareStoreOutput(["a"], [0], [])
    node = tier.node_of("a")
    assert node.write_through_pending_id is not None  # SGLang's write is in flight
    assert tier.lookup("a") is LookupResult.HIT_PENDING and tier.num_pending == 1
    assert tier.prepare_store(["b"]) is None  # no host leaf to evict: b gets no copy
    assert tier.node_of("b") is None  # ... and its device copy is dropped too
    tier.complete_store(["a"])
    assert node.evicted and node in tier.cache.tree_core.evictable_host_leaves
    tier.prepare_load(["a"])
    assert node not in tier.cache.tree_core.evictable_host_leaves
    assert {(e.key, e.state, e.ref_cnt) for e in tier.snapshot().blocks} == {
        ("a", CpuState.LOADING, 1)
    }
    tier.complete_load(["a"])
    out = tier.prepare_store(["b"])
    assert out == PrepareStoreOutput(["b"], [0], ["a"])  # SGLang's evict_host made room


def test_torchvision_is_the_stub_here() -> None:
    import torchvision.transforms as transforms

    from evictable.proofs.adapters.sglang import torchvision_stub

    assert torchvision_stub.installed()
    with pytest.raises(ImportError, match="stub"):
        transforms.Compose([])


def test_the_heap_bench_measures_both_sides() -> None:
    from bench.sglang_host_heap import measure

    got = measure([32], [0.0, 0.5], 3)
    rows = got["rows"]
    assert [(r["host_leaves"], r["locked_fraction"]) for r in rows] == [(32, 0.0), (32, 0.5)]
    assert rows[0]["sglang"]["evictable"] == 32 and rows[1]["sglang"]["evictable"] == 16
    assert all(r["impl"]["median_us"] >= 0 and r["sglang"]["p90_us"] >= 0 for r in rows)

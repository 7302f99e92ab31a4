"""The benchmark harness runs end to end at tiny sizes and writes what it promises.

No timing thresholds: performance is measured by `evictable bench`, not asserted here.
Also checks that the baselines do the same work as the managers they are compared
with (same outputs and same final state on the benchmark trace).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from bench import runner
from bench.naive import NaiveLruManager
from bench.skeleton import DictFloorManager, SkeletonManager, SplitSkeletonManager
from bench.workloads import OPS_PER_STEP, fill, make_trace, pinned_indices
from evictable.model.manager import ModelManager


def test_quick_run_writes_results_and_plots(tmp_path: Path) -> None:
    assert runner.main(["--quick", "--out", str(tmp_path)]) == 0
    payload = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert {"meta", "benchmarks", "plots"} <= payload.keys()
    assert payload["meta"]["quick"] is True
    benches = payload["benchmarks"]
    assert set(benches) == {name for name, _, _ in runner.BENCHMARKS}

    throughput = benches["throughput"]
    assert {"cells", "scaling", "table", "plot", "skipped", "method"} <= throughput.keys()
    assert throughput["method"]["ops_per_step"] == OPS_PER_STEP
    for cell in throughput["cells"]:
        assert {"num_blocks", "pinned_fraction", "median_ops_per_s", "ratios"} <= cell.keys()
        assert {"impl-lru", "naive", "skeleton"} <= cell["median_ops_per_s"].keys()
        assert {"impl-lru/naive", "impl-lru/skeleton"} <= cell["ratios"].keys()
        assert all(v > 0 for v in cell["median_ops_per_s"].values())
    assert {cell["pinned_fraction"] for cell in throughput["cells"]} == {0.0, 0.9}
    for cell in throughput["cells"]:
        floor = cell["floor_ratios"]
        assert floor["dict-floor"] == pytest.approx(1.0)
        assert set(floor) == set(cell["median_ops_per_s"])
        for name, (low, high) in cell["spread_ops_per_s"].items():
            assert low <= cell["median_ops_per_s"][name] <= high
        assert "impl-arc/impl-lru" in cell["ratios"]
    assert throughput["vs_vllm"] and all("impl-arc/impl-lru" in r for r in throughput["vs_vllm"])
    assert throughput["interop"] == {"available": False, "source": "hidden from the tests"}
    assert any("vllm-lru, vllm-arc not measured" in note for note in throughput["notes"])
    assert throughput["scaling"]
    for b in throughput["scaling_budget"]:
        assert b["allowed_added_us"] > 0
        assert len(b["impl_us_per_step"]) == len(b["floor_us_per_step"]) == 2

    eviction = benches["eviction"]
    assert {"pinned_counts", "median_prepare_store_us", "max_over_min"} <= eviction.keys()
    for series in eviction["median_prepare_store_us"].values():
        assert len(series) == len(eviction["pinned_counts"])

    memory = benches["memory"]
    per_block = memory["bytes_per_block"]
    assert "manager impl-lru" in per_block
    assert "ctypes.Structure in a ctypes array" in per_block
    assert memory["sizeof_ctypes_struct"] == 16

    for name, result in benches.items():
        if "skipped" in result and len(result) == 1:
            continue  # a benchmark module that is not present
        assert "error" not in result, result.get("error")
        assert (tmp_path / f"{name}.png").stat().st_size > 0
        assert payload["plots"][name].endswith(f"{name}.png")
        for key in result.get("extra_plots", {}):
            assert (tmp_path / f"{name}-{key}.png").stat().st_size > 0
    assert {"throughput-floor", "free_queue-walk"} <= set(payload["plots"])
    assert payload["meta"]["interop"] == {"python": None, "source": "hidden from the tests"}


def test_only_runs_the_named_benchmark(tmp_path: Path) -> None:
    assert runner.main(["--quick", "--only", "memory", "--out", str(tmp_path)]) == 0
    payload = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert list(payload["benchmarks"]) == ["memory"]


def test_rejects_unknown_benchmark_name(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        runner.main(["--only", "nonesuch", "--out", str(tmp_path)])


@pytest.mark.parametrize("fraction", [0.0, 0.9])
def test_naive_baseline_does_the_same_work_as_the_model(fraction: float) -> None:
    base = make_trace(512, 0.0, 40)
    trace = replace(base, pinned_fraction=fraction, pinned=pinned_indices(512, fraction))
    naive, model = NaiveLruManager(512), ModelManager(512)
    fill(naive, trace)
    fill(model, trace)
    for step in trace.steps:
        assert naive.prepare_store(step.stores) == model.prepare_store(step.stores)
        assert naive.complete_store(step.stores) == model.complete_store(step.stores)
        assert naive.prepare_load(step.loads) == model.prepare_load(step.loads)
        naive.complete_load(step.loads)
        model.complete_load(step.loads)
    assert naive.snapshot() == model.snapshot()


@pytest.mark.parametrize("skeleton_class", [SkeletonManager, SplitSkeletonManager])
def test_skeleton_evicts_what_the_naive_baseline_evicts(skeleton_class: type) -> None:
    trace = replace(make_trace(512, 0.0, 40), pinned=pinned_indices(512, 0.9))
    skeleton, naive = skeleton_class(512), NaiveLruManager(512)
    fill(skeleton, trace)
    fill(naive, trace)
    for step in trace.steps:
        assert skeleton.prepare_store(step.stores) == naive.prepare_store(step.stores)
        skeleton.complete_store(step.stores)
        naive.complete_store(step.stores)
        assert skeleton.prepare_load(step.loads) == naive.prepare_load(step.loads)
        skeleton.complete_load(step.loads)
        naive.complete_load(step.loads)


def test_evictable_bench_passes_its_options_to_the_runner(tmp_path: Path) -> None:
    from evictable.proofs.cli.main import main as cli_main

    assert cli_main(["bench", "--quick", "--only", "memory", "--out", str(tmp_path)]) == 0
    payload = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert list(payload["benchmarks"]) == ["memory"]


def _boom(quick: bool) -> dict[str, object]:
    raise RuntimeError("benchmark exploded")


def test_a_failing_benchmark_is_recorded_and_fails_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        runner,
        "BENCHMARKS",
        (
            ("memory", "bench.bench_manager", "run_memory"),
            ("boom", __name__, "_boom"),
            ("absent", "bench.no_such_benchmark", "run"),
        ),
    )
    assert runner.main(["--quick", "--out", str(tmp_path)]) == 1
    payload = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert "benchmark exploded" in payload["benchmarks"]["boom"]["error"]
    assert "not present" in payload["benchmarks"]["absent"]["skipped"]
    assert "bytes_per_block" in payload["benchmarks"]["memory"]


def test_without_matplotlib_the_numbers_are_still_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(runner, "_have_matplotlib", lambda: False)
    assert runner.main(["--quick", "--only", "memory", "--out", str(tmp_path)]) == 0
    assert "matplotlib is not installed" in capsys.readouterr().err
    payload = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert payload["plots"] == {}
    assert not list(tmp_path.glob("*.png"))


def test_dict_floor_keeps_one_slot_per_resident_key() -> None:
    trace = make_trace(512, 0.0, 40)
    floor = DictFloorManager(512)
    fill(floor, trace)
    for step in trace.steps:
        out = floor.prepare_store(step.stores)
        assert out is not None and out.keys_to_store == step.stores
        assert len(out.evicted_keys) == len(step.stores)
        assert not set(out.evicted_keys) & set(step.stores)
        floor.complete_store(step.stores)
        assert floor.prepare_load(step.loads) == [floor.index[k] for k in step.loads]
        floor.complete_load(step.loads)
    assert len(floor.index) == 512
    assert sorted(floor.index.values()) == list(range(512))
    assert list(floor.order) == list(floor.index)

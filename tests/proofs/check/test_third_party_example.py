"""The first hour with a manager you did not write (examples/third_party_lru.py).

The example evicts a block while it is being loaded, and otherwise differs from
this project's manager only where a third-party design may: plain `KeyError` /
`ValueError`, its own slot order, no `snapshot()`, events whose keys are a list.
Under the exact contract (black box, since it has no snapshot) that makes several
classes of finding, and the real defect must come first; under the third-party
preset it must be the only one, and the same manager with the defect fixed must
conform: no false positive from the list of keys in its events, nor anywhere else.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Collection, Hashable
from pathlib import Path
from typing import Any

import pytest

from evictable.proofs.base.compare import Kind
from evictable.proofs.base.findings import severity
from evictable.proofs.cli.main import main
from evictable.proofs.lockstep.inputs import Call
from evictable.proofs.lockstep.strategies import check_calls
from examples.third_party_lru import DictLruManager

ROOT = Path(__file__).resolve().parents[3]
SMALL = ["--seed", "0", "--examples", "100", "--steps", "20", "--no-explore"]


def _check(args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))  # the examples are imported from the checkout
    report = tmp_path / "report.json"
    main(["check", *args, *SMALL, "--json", str(report)])
    result: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    return result


def test_the_real_defect_comes_first_among_the_findings_of_a_black_box(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = _check(["examples.third_party_lru:make_manager", "--black-box"], tmp_path, monkeypatch)
    classes = [f["class"] for f in report["findings"]]
    assert len(classes) > 1, classes  # its plain errors and other choices differ from the model's
    assert classes[0] == "evicted_pinned"
    assert report["findings"][0]["severity"] == "safety"


def test_the_third_party_preset_reports_the_real_defect_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = _check(
        ["examples.third_party_lru:make_manager", "--preset", "third-party"], tmp_path, monkeypatch
    )
    assert [f["class"] for f in report["findings"]] == ["evicted_pinned"]


def test_the_example_with_its_defect_fixed_conforms_under_the_preset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fixed_lru.py").write_text(
        textwrap.dedent("""
            from examples.third_party_lru import DictLruManager

            class FixedLruManager(DictLruManager):
                def may_evict(self, block):
                    return block.ref_cnt == 0

            def make_manager(num_blocks, policy, enable_events):
                return FixedLruManager(num_blocks, policy, enable_events)
        """),
        encoding="utf-8",
    )
    monkeypatch.delitem(sys.modules, "fixed_lru", raising=False)
    report = _check(["fixed_lru:make_manager", "--preset", "third-party"], tmp_path, monkeypatch)
    assert report["findings"] == []  # without the comparison of events as collections: 'result'
    assert report["ok"] and report["exit_code"] == 0


class _LoadsWhileStoring(DictLruManager):
    """The example with its eviction fixed and another defect: a load of a block
    whose store is still in flight is accepted (it would read unwritten data)."""

    def may_evict(self, block: Any) -> bool:
        return bool(block.ref_cnt == 0)

    def prepare_load(self, keys: Collection[Hashable]) -> list[int]:
        for key in keys:
            self.blocks[key].ref_cnt = max(self.blocks[key].ref_cnt, 0) + 1
        return [self.blocks[k].slot for k in keys]


def test_a_load_of_a_block_still_being_stored_is_a_safety_finding_of_its_own() -> None:
    calls = [Call.keys("prepare_store", [b"a"]), Call.keys("prepare_load", [b"a"])]
    failure = check_calls(
        _LoadsWhileStoring, calls, contract="safety", errors="any", black_box=True
    )
    assert failure is not None and failure.kind is Kind.UNWRITTEN_LOAD, failure
    assert severity(failure.kind) == "safety"
    assert "while its store is still in flight" in failure.reason

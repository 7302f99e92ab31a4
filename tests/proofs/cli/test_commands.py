"""The `explore`, `check` and `replay` subcommands, including their error paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.check.setup import SetupError, load_factory
from evictable.proofs.cli.main import main


def raising_factory(num_blocks: int, policy: str, enable_events: bool) -> object:
    """A factory that cannot build anything (for the error path of `check`)."""
    raise RuntimeError("no manager today")


def not_a_manager(num_blocks: int, policy: str, enable_events: bool) -> object:
    """A factory returning something without the manager API."""
    return object()


NOT_CALLABLE = 42


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


# ------------------------------------------------------------------ explore


def test_explore_prints_the_figures(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        ["explore", "--slots", "2", "--keys", "2", "--max-ref", "1", "--workers", "1", "--savings"],
        capsys,
    )
    assert code == 0
    assert "states," in out and "transitions" in out and "states/s" in out and "-> OK" in out
    assert "canonicalisation:" in out and "fewer" in out


def test_explore_without_canonicalisation(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        [
            "explore",
            "--slots",
            "1",
            "--keys",
            "2",
            "--no-canonical",
            "--workers",
            "2",
            "--events",
            "1",
        ],
        capsys,
    )
    assert code == 0 and "no canonicalisation" in out and "events<=1" in out


def test_explore_takes_a_factory(capsys: pytest.CaptureFixture[str]) -> None:
    spec = "evictable.proofs.controls.manager:non_atomic_prepare_load"
    code, out, _ = _run(
        ["explore", "--slots", "2", "--keys", "3", "--workers", "1", "--factory", spec], capsys
    )
    assert code == 1 and "FAILED" in out and "m.prepare_load(['a', 'b'])" in out
    spec = "tests.proofs.cli.test_commands:raising_factory"
    code, _, err = _run(["explore", "--factory", spec], capsys)
    assert code == 2 and "no manager today" in err


def test_explore_reports_an_incomplete_run(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["explore", "--max-states", "3", "--workers", "1"], capsys)
    assert code == 2 and "INCOMPLETE" in out and "no verdict" in err


def test_explore_rejects_bad_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["explore", "--keys", "0"], capsys)
    assert code == 2 and "keys" in err
    code, _, err = _run(["explore", "--policy", "fifo"], capsys)
    assert code == 2 and "unknown policy" in err
    code, _, err = _run(["explore", "--slots", "-1"], capsys)
    assert code == 2 and "at least 0" in err


# ------------------------------------------------------------------ check


def test_check_rejects_the_nonatomic_manager_with_a_trace(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = "evictable.proofs.controls.manager:non_atomic_prepare_load"
    code, out, _ = _run(
        ["check", spec, "--examples", "5", "--steps", "5", "--seed", "3", "--workers", "1"], capsys
    )
    assert code == 1
    assert "verdict: REJECTED" in out
    assert "[leaked pin]" in out and "impl changed state on an error" in out
    assert "m.prepare_load(['a', 'b'])" in out
    assert "from evictable.proofs.controls.manager import non_atomic_prepare_load" in out


def test_check_accepts_the_reference_implementation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(
        [
            "check",
            "evictable.impl.manager:CPUOffloadingManager",
            "--examples",
            "5",
            "--steps",
            "5",
            "--seed",
            "1",
            "--workers",
            "2",
        ],
        capsys,
    )
    assert code == 0, out
    assert "verdict: conforms" in out and "explorer:" in out


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("evictable.proofs.controls.manager", "expected MODULE:FACTORY"),
        ("evictable.proofs.controls.manager:", "expected MODULE:FACTORY"),
        (":make", "expected MODULE:FACTORY"),
        ("tests.nonatomic manager:make", "expected MODULE:FACTORY"),
        ("a:b:c", "expected MODULE:FACTORY"),
        ("no_such_module_xyz:make", "importing 'no_such_module_xyz' raised ModuleNotFoundError"),
        ("evictable.proofs.controls.manager:missing", "has no attribute 'missing'"),
        ("tests.proofs.cli.test_commands:NOT_CALLABLE", "not callable"),
        ("tests.proofs.cli.test_commands:raising_factory", "raised RuntimeError: no manager today"),
        ("tests.proofs.cli.test_commands:not_a_manager", "lacks lookup, prepare_store"),
    ],
)
def test_check_rejects_unusable_factories(
    spec: str,
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _run(["check", spec, "--examples", "1", "--steps", "1"], capsys)
    assert code == 2 and message in err and out == ""


def test_check_rejects_an_unknown_policy(capsys: pytest.CaptureFixture[str]) -> None:
    spec = "evictable.impl.manager:CPUOffloadingManager"
    code, _, err = _run(["check", spec, "--policy", "fifo"], capsys)
    assert code == 2 and "unknown policy 'fifo'" in err


def test_load_factory_resolves_dotted_attributes() -> None:
    assert load_factory("evictable.impl.manager:CPUOffloadingManager") is CPUOffloadingManager
    with pytest.raises(SetupError):
        load_factory("evictable.impl.manager:CPUOffloadingManager.nope")


def test_check_reports_an_import_that_crashes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "crashing_adapter_mod.py").write_text("raise ImportError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = _run(["check", "crashing_adapter_mod:make"], capsys)
    assert code == 2 and "ImportError: boom" in err


# ------------------------------------------------------------------ replay


def _write(path: Path, lines: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def test_replay_accepts_a_matching_trace(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    trace = _write(
        tmp_path / "t.jsonl",
        [
            {"num_blocks": 1},
            {
                "op": "prepare_store",
                "args": {"keys": [{"hex": "00ff"}]},
                "result": {"keys_to_store": [{"hex": "00ff"}], "slot_ids": [0], "evicted_keys": []},
            },
            {
                "op": "prepare_load",
                "args": {"keys": [{"hex": "00ff"}]},
                "error": {"type": "BlockNotReadyError", "keys": [{"hex": "00ff"}]},
            },
        ],
    )
    code, out, _ = _run(["replay", str(trace)], capsys)
    assert code == 0 and "replayed 2 calls" in out


def test_replay_reports_the_first_divergence(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    trace = _write(
        tmp_path / "t.jsonl",
        [
            {
                "op": "prepare_store",
                "args": {"keys": ["a"]},
                "result": {"keys_to_store": ["a"], "slot_ids": [0], "evicted_keys": []},
            },
            {"op": "lookup", "args": {"key": "a"}, "result": "hit"},
        ],
    )
    code, out, _ = _run(["replay", str(trace), "--num-blocks", "2"], capsys)
    assert code == 1
    assert "first divergence at line 2: lookup('a')" in out and "hit_pending" in out


def test_replay_overrides_the_header(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _write(
        tmp_path / "t.jsonl",
        [
            {"num_blocks": 5, "enable_events": False},
            {"op": "prepare_store", "args": {"keys": ["a"]}, "result": None},
        ],
    )
    code, out, _ = _run(["replay", str(trace), "--num-blocks", "0", "--events"], capsys)
    assert code == 0 and "ModelManager(0, 'lru', True)" in out


def test_replay_reports_malformed_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "bad.jsonl"
    trace.write_text('{"num_blocks": 1}\n\n{"op": "touch", "args": {"keys": []}\n')
    code, out, err = _run(["replay", str(trace)], capsys)
    assert code == 2 and out == ""
    assert f"{trace}:3: not valid JSON" in err


def test_replay_reports_a_missing_header_and_a_missing_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    trace = _write(tmp_path / "t.jsonl", [{"op": "reset_cache", "result": None}])
    code, _, err = _run(["replay", str(trace)], capsys)
    assert code == 2 and "no header" in err
    code, _, err = _run(["replay", str(trace), "--policy", "lru"], capsys)
    assert code == 2 and "--num-blocks" in err
    code, _, err = _run(["replay", str(tmp_path / "absent.jsonl")], capsys)
    assert code == 2 and "cannot read" in err


def test_explore_holds_a_factory_to_a_contract(capsys: pytest.CaptureFixture[str]) -> None:
    spec = "evictable.proofs.controls.manager:FifoSlotReuse"  # other slots: legal under safety
    base = ["explore", "--slots", "2", "--keys", "2", "--workers", "1", "--factory", spec]
    code, out, _ = _run(base, capsys)
    assert code == 1 and "FAILED" in out
    code, out, _ = _run([*base, "--contract", "safety"], capsys)
    assert code == 0 and "-> OK" in out
    code, _, err = _run([*base, "--errors", "none"], capsys)
    assert code == 2 and "invalid choice" in err

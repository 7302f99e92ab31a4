"""The `evictable` command: verify's records, kinds, verdicts, counts and budget; diagram;
--version; one-line errors."""

from __future__ import annotations

import json
import re
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest
import z3

import evictable.impl
from evictable import __version__
from evictable.proofs.base.records import (
    Kind,
    Obligation,
    Outcome,
    Status,
    check_deadline,
    proved,
    refuted,
)
from evictable.proofs.cli import main as cli
from evictable.proofs.obligations import registry
from evictable.proofs.z3.solver import z3_valid


def _fake_group(monkeypatch: pytest.MonkeyPatch, name: str, obs: list[Obligation]) -> None:
    mod = types.ModuleType(name)
    mod.obligations = lambda level: obs  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr(registry, "GROUPS", (name,))


def _ob(
    name: str, check: object, kind: Kind = Kind.UNBOUNDED, negative: object = None, bounds: str = ""
) -> Obligation:
    return Obligation(name, "s", check, negative, kind=kind, bounds=bounds)  # type: ignore[arg-type]


def _z3(detail: str = "") -> Any:
    """A check that a Z3 query decides (a proof record may print `proved` only then)."""

    def check(t: float) -> Any:
        out = z3_valid(z3.BoolVal(True), t, lambda _m: "")
        return proved(detail) if out.status is Status.PROVED else out

    return check


def test_verify_exits_zero_and_writes_the_records(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_group(monkeypatch, "fake_ok", [_ob("a.one", _z3())])
    out = tmp_path / "r.json"
    assert cli.main(["verify", "--quick", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["ok"] is True and data["level"] == "quick" and data["exit_code"] == 0
    assert [r["name"] for r in data["records"]] == ["a.one"]
    assert data["records"][0]["verdict"] == "proved"
    assert "proved" in capsys.readouterr().out


def test_only_proofs_are_printed_as_proved(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_group(
        monkeypatch,
        "fake_kinds",
        [
            _ob("k.unbounded", _z3(), Kind.UNBOUNDED),
            _ob("k.bounded", _z3(), Kind.BOUNDED, bounds="N=8"),
            _ob("k.explored", lambda t: proved("9 states"), Kind.EXPLORED, bounds="2 slots"),
            _ob("k.tested", lambda t: proved("5 examples"), Kind.TESTED, bounds="5 x 5, seed 0"),
        ],
    )
    out = tmp_path / "r.json"
    assert cli.main(["verify", "--json", str(out)]) == 0
    verdicts = {r["name"]: r["verdict"] for r in json.loads(out.read_text())["records"]}
    assert verdicts == {
        "k.unbounded": "proved",
        "k.bounded": "proved",
        "k.explored": "explored",
        "k.tested": "passed",
    }
    text = capsys.readouterr().out
    assert re.search(r"k\.tested\s.*tested\s.*passed", text)
    assert "2 proved" in text and "1 explored" in text and "1 passed" in text


def test_a_caught_control_is_refuted_and_a_missed_one_fails(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_group(
        monkeypatch,
        "fake_controls",
        [
            _ob("c.caught", _z3(), negative=lambda t: refuted("the bug")),
            _ob("c.missed", _z3(), negative=lambda t: proved()),
        ],
    )
    out = tmp_path / "r.json"
    assert cli.main(["verify", "--json", str(out)]) == 1
    records = {r["name"]: r for r in json.loads(out.read_text())["records"]}
    assert records["c.caught~neg"]["verdict"] == "refuted"
    assert records["c.caught~neg"]["ok"] is True
    assert records["c.caught~neg"]["control_of"] == "c.caught"
    assert records["c.missed~neg"]["verdict"] == "not refuted"
    assert records["c.missed~neg"]["ok"] is False
    assert "not refuted" in capsys.readouterr().out


def test_the_counts_agree_with_the_records(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    obs = [_ob(f"n.{i}", _z3(), negative=lambda t: refuted("x")) for i in range(3)]
    _fake_group(monkeypatch, "fake_counts", obs)
    out = tmp_path / "r.json"
    assert cli.main(["verify", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["counts"]["records"] == len(data["records"]) == 6
    assert data["counts"]["by_verdict"] == {"proved": 3, "refuted": 3}
    assert "6 records" in capsys.readouterr().out


def test_verbose_prints_one_line_per_record(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_group(
        monkeypatch,
        "fake_verbose",
        [_ob("v.one", _z3(), negative=lambda t: refuted("x"))],
    )
    assert cli.main(["verify", "--verbose"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("proved") and "v.one" in line for line in lines)
    assert any(line.startswith("refuted") and "v.one~neg" in line for line in lines)


def test_a_check_stopped_by_the_hang_backstop_is_unknown(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def hangs(_backstop_s: float) -> Outcome:
        while True:  # an engine that never finishes, but honours the backstop
            time.sleep(0.02)
            check_deadline("spinning")

    _fake_group(monkeypatch, "fake_slow", [_ob("s.slow", hangs)])
    assert cli.main(["verify", "--backstop", "0.1", "-j", "0"]) == 1
    out = capsys.readouterr().out
    assert "unknown" in out and "hang backstop" in out


def test_verify_fails_and_prints_the_counterexample(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_group(
        monkeypatch,
        "fake_bad",
        [
            _ob("a.good", _z3()),
            _ob("a.bad", lambda t: refuted("transition load_end LOADING->READY")),
        ],
    )
    assert cli.main(["verify"]) == 1
    assert "load_end LOADING->READY" in capsys.readouterr().out


def test_verify_reports_a_group_that_cannot_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "GROUPS", ("no_such_group_module",))
    assert cli.main(["verify", "--quick"]) == 1


def test_verify_only_filters_by_prefix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_group(
        monkeypatch,
        "fake_mixed",
        [
            _ob("keep.me", _z3()),
            _ob("drop.me", lambda t: refuted("x")),
        ],
    )
    assert cli.main(["verify", "--only", "keep"]) == 0
    assert "drop.me" not in capsys.readouterr().out


def test_verify_only_takes_several_prefixes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_group(
        monkeypatch,
        "fake_several",
        [
            _ob("one.me", _z3()),
            _ob("two.me", _z3()),
            _ob("drop.me", lambda t: refuted("x")),
        ],
    )
    assert cli.main(["verify", "--only", "one", "--only", "two"]) == 0
    out = capsys.readouterr().out
    assert "one.me" in out and "two.me" in out and "drop.me" not in out
    assert cli.main(["verify", "--only", "one", "--only", "zzz"]) == 2
    assert "--only 'zzz' selects no obligation" in capsys.readouterr().err


def test_verify_group_runs_only_the_named_groups(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, obs in (
        ("fake.kept", [_ob("kept.one", _z3())]),
        ("fake.left", [_ob("left.one", lambda t: refuted("x"))]),
    ):
        mod = types.ModuleType(name)
        mod.obligations = lambda level, obs=obs: obs  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr(registry, "GROUPS", ("fake.kept", "fake.left"))
    assert cli.main(["verify", "--group", "kept"]) == 0
    out = capsys.readouterr().out
    assert "kept.one" in out and "left.one" not in out
    assert cli.main(["verify", "--group", "fake.kept", "--group", "left"]) == 1


def test_rejects_an_unknown_group(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_group(monkeypatch, "fake_one", [_ob("a.one", lambda t: proved())])
    assert cli.main(["verify", "--group", "zzz"]) == 2
    assert "--group 'zzz' is no group" in capsys.readouterr().err


def test_verify_with_nothing_selected_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_group(monkeypatch, "fake_empty", [])
    assert cli.main(["verify"]) == 1


@pytest.mark.parametrize("fmt", ["mermaid", "dot"])
def test_diagram_prints_the_raw_diagram(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["diagram", "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert "LOADING" in out and "```" not in out
    assert out.startswith("stateDiagram-v2" if fmt == "mermaid" else "digraph cpu")


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    build = "compiled" if evictable.impl.COMPILED else "pure Python"
    assert capsys.readouterr().out.strip() == f"evictable {__version__} ({build})"


@pytest.mark.parametrize(
    "argv",
    [
        ["frobnicate"],
        [],
        ["verify", "--timeout", "-3"],
        ["verify", "--quick", "--thorough"],
        ["diagram", "--format", "png"],
        ["explore", "--slots", "-1"],
    ],
)
def test_rejects_bad_arguments_in_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1 and "Traceback" not in captured.err
    assert captured.err.startswith("evictable")

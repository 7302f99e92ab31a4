"""The `evictable` command: verify's exit code, JSON report, summary; diagram."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from evictable.proofs.cli import main as cli
from evictable.proofs.obligations import Obligation, proved, refuted


def _fake_group(monkeypatch: pytest.MonkeyPatch, name: str, obs: list[Obligation]) -> None:
    mod = types.ModuleType(name)
    mod.obligations = lambda level: obs  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, name, mod)


def test_verify_exits_zero_when_everything_is_proved(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_group(monkeypatch, "fake_ok", [Obligation("a.one", "s", lambda t: proved())])
    monkeypatch.setattr(cli, "GROUPS", ("fake_ok",))
    out = tmp_path / "r.json"
    assert cli.main(["verify", "--quick", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["ok"] is True and data["level"] == "quick"
    assert [r["name"] for r in data["results"]] == ["a.one"]
    assert "proved" in capsys.readouterr().out


def test_verify_fails_and_prints_the_counterexample(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    obs = [
        Obligation("a.good", "s", lambda t: proved()),
        Obligation("a.bad", "s", lambda t: refuted("transition load_end LOADING->READY")),
    ]
    _fake_group(monkeypatch, "fake_bad", obs)
    monkeypatch.setattr(cli, "GROUPS", ("fake_bad",))
    assert cli.main(["verify"]) == 1
    assert "load_end LOADING->READY" in capsys.readouterr().out


def test_verify_reports_a_group_that_cannot_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "GROUPS", ("no_such_group_module",))
    assert cli.main(["verify", "--quick"]) == 1


def test_verify_only_filters_by_prefix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    obs = [
        Obligation("keep.me", "s", lambda t: proved()),
        Obligation("drop.me", "s", lambda t: refuted("x")),
    ]
    _fake_group(monkeypatch, "fake_mixed", obs)
    monkeypatch.setattr(cli, "GROUPS", ("fake_mixed",))
    assert cli.main(["verify", "--only", "keep"]) == 0
    assert "drop.me" not in capsys.readouterr().out


def test_verify_with_nothing_selected_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_group(monkeypatch, "fake_empty", [])
    monkeypatch.setattr(cli, "GROUPS", ("fake_empty",))
    assert cli.main(["verify"]) == 1


@pytest.mark.parametrize("fmt", ["mermaid", "dot"])
def test_diagram_prints_the_generated_diagram(
    fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["diagram", "--format", fmt]) == 0
    assert "LOADING" in capsys.readouterr().out


def test_unknown_subcommand_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["frobnicate"])
    assert exc.value.code == 2

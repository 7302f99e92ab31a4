"""Every command's exit code on every path, and its `--json` report against the schema.

The exit-code table (docs/proofs.md): 0 holds, 1 a finding, 2 could not run; an
error is one line on stderr, never a traceback; the report validates against
`cli/schema.json` in every case, the could-not-run case included.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from evictable.proofs.cli.main import main
from evictable.proofs.cli.report import SCHEMA_VERSION, schema

GOOD = "evictable.impl.manager:CPUOffloadingManager"
BROKEN = "evictable.proofs.controls.manager:non_atomic_prepare_load"
SMALL = ["--examples", "5", "--steps", "5", "--seed", "3", "--workers", "1"]


def _traces(tmp: Path) -> dict[str, Path]:
    match = tmp / "match.jsonl"
    match.write_text(
        "\n".join(
            json.dumps(x)
            for x in [
                {"num_blocks": 1},
                {
                    "op": "prepare_store",
                    "args": {"keys": ["a"]},
                    "result": {"keys_to_store": ["a"], "slot_ids": [0], "evicted_keys": []},
                },
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    diverge = tmp / "diverge.jsonl"
    diverge.write_text(
        "\n".join(
            json.dumps(x)
            for x in [
                {"num_blocks": 1},
                {"op": "lookup", "args": {"key": "a"}, "result": "hit"},
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    binary = tmp / "binary.jsonl"
    binary.write_bytes(b'{"num_blocks": 1}\n\xff\xfe\x00garbage\n')
    return {"match": match, "diverge": diverge, "binary": binary}


CASES: list[tuple[str, list[str], int]] = [
    ("check conforms", ["check", GOOD, *SMALL], 0),
    ("check finds a divergence", ["check", BROKEN, *SMALL], 1),
    ("check with zero examples", ["check", GOOD, "--examples", "0"], 2),
    ("check with a bad spec", ["check", "no-colon"], 2),
    ("check with an unknown policy", ["check", GOOD, "--policy", "fifo"], 2),
    ("check under the safety contract", ["check", GOOD, *SMALL, "--contract", "safety"], 0),
    (
        "check a black box, any errors, valid calls only",
        ["check", BROKEN, *SMALL, "--black-box", "--errors", "any", "--valid-only"],
        0,
    ),
    ("check with an unknown contract", ["check", GOOD, "--contract", "strict"], 2),
    (
        "check a free queue",
        [
            "check",
            "evictable.impl.free_queue:FreeKVCacheBlockQueue",
            "--target",
            "free-queue",
            *SMALL,
        ],
        0,
    ),
    (
        "check a block pool",
        ["check", "evictable.impl.block_pool:BlockPool", "--target", "block-pool", *SMALL],
        0,
    ),
    (
        "check a lazy scanner that stalls",
        [
            "check",
            "evictable.proofs.controls.gpu:RefCountScanner",
            "--target",
            "lazy",
            "--blocks",
            "2",
            "--contract",
            "safety",
        ],
        1,
    ),
    ("explore holds", ["explore", "--slots", "1", "--keys", "2", "--workers", "1"], 0),
    (
        "explore finds a divergence",
        ["explore", "--slots", "2", "--keys", "3", "--workers", "1", "--factory", BROKEN],
        1,
    ),
    ("explore stops at its state cap", ["explore", "--max-states", "3", "--workers", "1"], 2),
    ("explore with bad bounds", ["explore", "--keys", "0"], 2),
    ("replay matches", ["replay", "{match}"], 0),
    ("replay diverges", ["replay", "{diverge}"], 1),
    ("replay of a binary file", ["replay", "{binary}"], 2),
    ("replay of a missing file", ["replay", "{missing}"], 2),
    ("verify of one group", ["verify", "--quick", "--only", "cpu.initiation"], 0),
    (
        "verify of two prefixes",
        ["verify", "--quick", "--only", "cpu.initiation", "--only", "cpu.hooks.load_end"],
        0,
    ),
    ("verify with a bad timeout", ["verify", "--timeout", "0"], 2),
]


@pytest.mark.parametrize(("what", "argv", "code"), CASES, ids=[c[0] for c in CASES])
def test_exit_code_and_report(
    what: str, argv: list[str], code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = {**_traces(tmp_path), "missing": tmp_path / "absent.jsonl"}
    argv = [a.format(**paths) for a in argv]
    report = tmp_path / "report.json"
    got = main([*argv, "--json", str(report)])
    captured = capsys.readouterr()
    assert got == code, (what, captured.err)
    assert "Traceback" not in captured.err
    if code == 2:
        assert len(captured.err.strip().splitlines()) == 1, captured.err
    doc = json.loads(report.read_text(encoding="utf-8"))
    jsonschema.validate(doc, schema())
    assert doc["exit_code"] == code and doc["ok"] is (code == 0)
    assert doc["command"] == argv[0] and doc["schema_version"] == SCHEMA_VERSION
    assert doc["tool"]["name"] == "evictable"
    if code == 2:
        assert doc["error"].startswith("evictable")


def test_the_schema_is_itself_valid_and_rejects_a_wrong_report() -> None:
    jsonschema.Draft202012Validator.check_schema(schema())
    bad = {
        "schema": "evictable.report",
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "evictable", "version": "0", "commit": None},
        "command": "verify",
        "argv": [],
        "exit_code": 0,
        "ok": True,
        "seconds": 0.0,
    }
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema())  # a verify report without its records

"""`evictable verify --quick` holds end to end: every claim proved, explored or passed,
every negative control refuted (the net under every engine, control and obligation)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_verify_quick_holds_and_every_control_is_refuted(tmp_path: Path) -> None:
    report = tmp_path / "verify.json"
    command = ["verify", "--quick", "-j", "2", "--json", str(report)]
    run = subprocess.run(
        [sys.executable, "-m", "evictable.proofs.cli.main", *command],
        capture_output=True,
        text=True,
        timeout=1800,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    doc = json.loads(report.read_text(encoding="utf-8"))
    failed = [
        f"{r['name']}: {r['verdict']}: {r['counterexample'][:200]}"
        for r in doc["records"]
        if not r["ok"]
    ]
    assert run.returncode == 0 and not failed, "\n".join(failed) or run.stderr[-2000:]
    controls = [r for r in doc["records"] if r["control_of"]]
    assert controls and all(r["verdict"] == "refuted" for r in controls)
    claims = {r["name"] for r in doc["records"] if not r["control_of"]}
    assert {r["control_of"] for r in controls} == claims  # every claim has its control

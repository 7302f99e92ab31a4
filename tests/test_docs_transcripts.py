"""The command output shown in the docs is regenerated and compared (tools/transcripts.py).

Every transcript block of README.md and docs/*.md (a fenced block after
`<!-- transcript -->`) is run again and must print what the docs show, once the
volatile parts (seconds, rates, the checkout's path) are masked; a stale one fails
with the diff and the command that refreshes it (`make docs`). Every snippet a
`check` transcript prints -- the shortest trace of a finding, the fault-injection
one included -- runs as printed, up to the step that diverges, where it asserts the
model's answer: against the manager the docs check, it raises `AssertionError` with
the finding's message (`tests/proofs/check/test_hostile.py` runs the same snippets
against correct managers, which they pass).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tools.transcripts import (
    DOCS,
    REFRESH,
    ROOT,
    Command,
    Transcript,
    mask,
    regenerate,
    snippets,
    stale_message,
    transcripts,
)

BLOCKS = [block for path in DOCS for block in transcripts(path)]
SNIPPETS = sorted({code: b.name for b in BLOCKS if b.needs is None for code in snippets(b)}.items())


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_transcript_is_current(block: Transcript) -> None:
    if not block.runnable():
        pytest.skip(f"needs {block.needs} (tests/interop checks it: make interop)")
    fresh = regenerate(block)
    assert fresh == block, stale_message(block, fresh)


@pytest.mark.parametrize(
    "code", [code for code, _ in SNIPPETS], ids=[f"{n}#{i}" for i, (_, n) in enumerate(SNIPPETS)]
)
def test_printed_snippet_runs_as_printed_and_fails_with_its_finding(code: str) -> None:
    # pasted into `python -` at the project's root, as the docs say to run `check`
    run = subprocess.run(
        [sys.executable, "-"], input=code, cwd=ROOT, capture_output=True, text=True, check=False
    )
    last = (run.stderr.strip().splitlines() or [""])[-1]
    assert run.returncode == 1 and last.startswith("AssertionError: "), f"{code}\n{run.stderr}"
    finding = next(line for line in code.splitlines() if line.startswith("FINDING = "))
    assert last.removeprefix("AssertionError: ") in finding, (last, finding)


def test_docs_show_the_commands_as_transcripts() -> None:
    shown = {
        (b.path.name, c.text.split()[0], c.text.split()[1]) for b in BLOCKS for c in b.commands
    }
    assert ("README.md", "evictable", "verify") in shown
    for command in ("check", "explore", "replay"):
        assert ("conformance.md", "evictable", command) in shown
    assert any("PLAN.failing(" in code for code, _ in SNIPPETS), "no fault-injection snippet"


def test_conformance_starts_with_a_manager_you_did_not_write() -> None:
    text = (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert sections[0] == "## Checking a manager you did not write"
    first = text[text.index(sections[0]) : text.index(sections[1])]
    order = [first.index(s) for s in ("$ pytest", "--preset third-party", "exact contract")]
    assert order == sorted(order), "the pytest plugin, then the preset, then the exact contract"


def _doc(tmp_path: Path, body: str) -> Path:
    doc = tmp_path / "doc.md"
    doc.write_text(f"text\n\n<!-- transcript -->\n```\n{body}```\n", encoding="utf-8")
    return doc


def test_masked_parts_do_not_make_a_transcript_stale(tmp_path: Path) -> None:
    doc = _doc(tmp_path, "$ echo 3 states in 0.52s, 289 states/s\n3 states in 9.99s, 7 states/s\n")
    (block,) = transcripts(doc)
    assert block.commands == (
        Command("echo 3 states in 0.52s, 289 states/s", block.commands[0].output),
    )
    assert mask("0.52s, 289 states/s") == "#.#s, # states/s"
    assert regenerate(block) == block  # the old text is kept


def test_a_line_wrapped_elsewhere_is_not_stale(tmp_path: Path) -> None:
    (block,) = transcripts(
        _doc(tmp_path, "$ printf 'took 0.5s, 2 workers\\n'\ntook 10.25s,\n2 workers\n")
    )
    assert regenerate(block) == block


def test_a_changed_output_is_stale_with_its_diff_and_the_refresh_command(tmp_path: Path) -> None:
    (block,) = transcripts(_doc(tmp_path, "$ echo 4 states\n3 states\n$ echo same\nsame\n"))
    fresh = regenerate(block)
    assert fresh.commands == (
        Command("echo 4 states", "4 states\n"),
        Command("echo same", "same\n"),
    )
    message = stale_message(block, fresh)
    assert "-3 states\n+4 states\n" in message
    assert REFRESH in message and "doc.md:4" in message


def test_a_command_that_cannot_run_shows_its_error(tmp_path: Path) -> None:
    (block,) = transcripts(_doc(tmp_path, "$ no-such-command-here\n"))
    (command,) = regenerate(block).commands
    assert "no-such-command-here" in command.output  # bash's "command not found"


def test_a_malformed_transcript_is_an_error(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- transcript -->\ntext\n", encoding="utf-8")
    with pytest.raises(ValueError, match="followed by a ``` fence"):
        transcripts(doc)
    doc.write_text("<!-- transcript -->\n```\noutput without a command\n```\n", encoding="utf-8")
    with pytest.raises(ValueError, match="starts with a `\\$ ` command"):
        transcripts(doc)

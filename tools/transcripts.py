"""Transcripts in the docs: command output that is regenerated, never typed.

    python -m tools.transcripts            # check: exit 1 and a diff when one is stale
    python -m tools.transcripts --write    # refresh them (what `make docs` runs)

A transcript is a fenced block right after the line `<!-- transcript -->` (or
`<!-- transcript cwd=docs/examples -->`, run in that folder of the checkout; the
default is the checkout's root; `needs=vllm` last: run only where that module is
installed, so `make interop` checks it and `make test` skips it). Its lines that
start with `$ ` are commands; the lines after each one, up to the next command, are
its output. A command runs in bash, with this interpreter's `bin` folder first on
PATH (so `evictable` and `pytest` are this checkout's), a fixed terminal width and
hash seed, and no inherited pytest, Hypothesis or evictable settings. Its output is its stdout, and
its stderr too when it could not run (exit code 2, this project's one-line error,
or any other code but 0 and 1); a progress line on stderr is never part of it.

Two outputs are the same when they are equal once their volatile parts are masked
-- every decimal number (seconds, rates, ratios), a rate in states/s and the path
of the checkout -- and their spacing and line breaks are ignored (a table or a long
line wraps where the unmasked numbers put it). `--write` rewrites a block only when
its output changed beyond those, so a refresh does not churn the docs.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!-- transcript(?: cwd=(?P<cwd>\S+))?(?: needs=(?P<needs>\S+))? -->$")
PROMPT = "$ "
COLUMNS = "120"
REFRESH = "make docs (python -m tools.transcripts --write)"

_DECIMAL = re.compile(r"\d+\.\d+")
_RATE = re.compile(r"\d+ states/s")


@dataclass(frozen=True)
class Command:
    """One `$ ` line of a transcript and the output printed under it."""

    text: str
    output: str


@dataclass(frozen=True)
class Transcript:
    """One transcript block: where it is and what it shows."""

    path: Path
    start: int  # 0-based index of the opening fence
    end: int  # 0-based index of the closing fence
    cwd: str
    commands: tuple[Command, ...]
    needs: str | None = None  # a module the commands need (vllm), None for none

    def runnable(self) -> bool:
        """Whether the module the block needs, if any, is installed here."""
        return self.needs is None or importlib.util.find_spec(self.needs) is not None

    @property
    def name(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.start + 1}"

    def text(self) -> str:
        return "".join(f"{PROMPT}{c.text}\n{c.output}" for c in self.commands)


def transcripts(path: Path, text: str | None = None) -> list[Transcript]:
    """Every transcript block of `path` (or of `text`, read as that file), in order.
    A marker not followed by a fence, a fence that does not end, or a block whose
    first line is not a command is an error, so that none is silently left out."""
    lines = (path.read_text(encoding="utf-8") if text is None else text).splitlines()
    found: list[Transcript] = []
    for i, line in enumerate(lines):
        marker = MARKER.match(line.strip())
        if marker is None:
            continue
        start = i + 1
        if start >= len(lines) or not lines[start].startswith("```"):
            raise ValueError(f"{path}:{i + 1}: a transcript marker must be followed by a ``` fence")
        end = next((j for j in range(start + 1, len(lines)) if lines[j] == "```"), None)
        if end is None:
            raise ValueError(f"{path}:{start + 1}: unterminated transcript block")
        body = lines[start + 1 : end]
        if not body or not body[0].startswith(PROMPT):
            raise ValueError(f"{path}:{start + 2}: a transcript starts with a `$ ` command")
        commands: list[Command] = []
        for row in body:
            if row.startswith(PROMPT):
                commands.append(Command(row[len(PROMPT) :], ""))
            else:
                last = commands[-1]
                commands[-1] = Command(last.text, last.output + row + "\n")
        found.append(
            Transcript(path, start, end, marker["cwd"] or ".", tuple(commands), marker["needs"])
        )
    return found


def environment() -> dict[str, str]:
    """The environment every command runs in (see the module's docstring)."""
    dropped = ("PYTEST_", "HYPOTHESIS_", "EVICTABLE_", "COLUMNS", "LINES", "CI", "FORCE_COLOR")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(
        COLUMNS=COLUMNS,
        NO_COLOR="1",
        TERM="dumb",
        PYTHONHASHSEED="0",
        PYTEST_ADDOPTS="-p no:cacheprovider",
    )
    return env


def run(command: str, cwd: str = ".") -> str:
    """The output of one command, as a transcript shows it."""
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT / cwd,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    # stderr only for a command that could not run: exit 2, or bash's 126/127
    out = done.stdout + (done.stderr if done.returncode not in (0, 1) else "")
    out = "\n".join(line.rstrip() for line in out.splitlines())
    return out + "\n" if out else ""


def mask(text: str) -> str:
    """`text` with its volatile parts replaced by `#`."""
    text = text.replace(str(ROOT), "<checkout>")
    return _DECIMAL.sub("#.#", _RATE.sub("# states/s", text))


def same(old: str, new: str) -> bool:
    """Whether two outputs are the same once masked, whatever their spacing and line
    breaks (a table or a long line is wrapped where the unmasked numbers put it)."""
    return mask(old).split() == mask(new).split()


def regenerate(block: Transcript) -> Transcript:
    """`block` with every command run again; an output equal to the old one once
    masked keeps the old text."""
    fresh = []
    for command in block.commands:
        output = run(command.text, block.cwd)
        kept = same(command.output, output)
        fresh.append(Command(command.text, command.output if kept else output))
    return Transcript(block.path, block.start, block.end, block.cwd, tuple(fresh), block.needs)


def diff(old: Transcript, new: Transcript) -> str:
    """A unified diff of a block's masked text, as printed and as regenerated."""
    return "".join(
        difflib.unified_diff(
            mask(old.text()).splitlines(keepends=True),
            mask(new.text()).splitlines(keepends=True),
            f"{old.name} (in the docs)",
            f"{old.name} (regenerated)",
        )
    )


def stale_message(old: Transcript, new: Transcript) -> str:
    return f"{old.name}: the transcript is stale; refresh it with {REFRESH}\n{diff(old, new)}"


def rewrite(path: Path, blocks: list[tuple[Transcript, Transcript]]) -> None:
    """Write each regenerated block of `path` in place of its old text."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for old, new in sorted(blocks, key=lambda pair: -pair[0].start):
        lines[old.start + 1 : old.end] = new.text().splitlines()
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def snippets(block: Transcript) -> list[str]:
    """The runnable snippets a `check` transcript prints: in each finding (a line
    `N. [class] ...`), the lines indented by four spaces after its two-space
    explanation."""
    found: list[str] = []
    current: list[str] | None = None
    for command in block.commands:
        for line in command.output.splitlines():
            if re.match(r"^\d+\. \[", line):
                current = []
                found.append("")
            elif current is not None and line.startswith("    "):
                current.append(line)
                found[-1] = textwrap.dedent("\n".join(current)) + "\n"
            elif current is not None and line.startswith("  ") and not current:
                continue
            else:
                current = None
    return [code for code in found if code]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.transcripts", description=__doc__)
    parser.add_argument("--write", action="store_true", help="refresh the stale transcripts")
    parser.add_argument("docs", nargs="*", type=Path, help="Markdown files (default: all)")
    args = parser.parse_args(argv)
    stale = 0
    for path in [p.resolve() for p in args.docs] or DOCS:
        changed = []
        for block in transcripts(path):
            if not block.runnable():
                print(f"{block.name}: skipped, it needs {block.needs} (make interop runs it)")
                continue
            new = regenerate(block)
            if new != block:
                changed.append((block, new))
                stale += 1
                print(f"{block.name}: refreshed" if args.write else stale_message(block, new))
        if args.write and changed:
            rewrite(path, changed)
    return 0 if args.write or not stale else 1


if __name__ == "__main__":
    sys.exit(main())

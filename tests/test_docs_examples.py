"""The examples in the documentation run as written.

* Every module of `evictable.model` and `evictable.impl` has its doctests run. The
  modules are imported by their package names: collecting the folders with
  `pytest --doctest-modules` would import `model/` a second time as a top-level
  package named `model` (docs/architecture.md, "Packaging").
* Every public class of `evictable.impl` has a doctest in its class docstring.
* Every ```python block of README.md and docs/*.md runs, each in a fresh
  interpreter (so a block that registers a policy cannot leak into other tests),
  from an empty directory. A block right after the line `<!-- not run -->` is
  skipped; that is for blocks that need vLLM, take long, or are run by a test of
  their own (the property-test recipe of docs/conformance.md:
  `tests/proofs/check/test_recipe.py`).
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

import evictable.impl
import evictable.model

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_RUN = "<!-- not run -->"


def _modules(package: ModuleType) -> list[str]:
    prefix = package.__name__ + "."
    return sorted(name for _, name, _ in pkgutil.walk_packages(package.__path__, prefix))


MODULES = [*_modules(evictable.model), *_modules(evictable.impl)]


def _public_classes(module: ModuleType) -> list[type]:
    """The classes a module exports (`__all__`) and defines itself."""
    found = (getattr(module, name) for name in getattr(module, "__all__", ()))
    return [obj for obj in found if inspect.isclass(obj) and obj.__module__ == module.__name__]


@dataclass(frozen=True)
class Block:
    """One ```python block of a Markdown file: where it starts and its code."""

    path: Path
    line: int  # 1-based line of the first line of code
    code: str
    skip: bool

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def python_blocks(path: Path) -> list[Block]:
    """Every ```python block of `path`, in order; `skip` when the nearest non-blank
    line before it is `<!-- not run -->`. An indented or unterminated ```python
    fence is an error, so that no block is silently left out."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        if not lines[i].lstrip().startswith("```python"):
            i += 1
            continue
        if lines[i] != lines[i].lstrip():
            raise ValueError(f"{path}:{i + 1}: indented ```python block (not run; unindent it)")
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        if end is None:
            raise ValueError(f"{path}:{i + 1}: unterminated ```python block")
        before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        code = "\n".join(lines[i + 1 : end]) + "\n"
        blocks.append(Block(path, i + 2, code, skip=before == NOT_RUN))
        i = end + 1
    return blocks


BLOCKS = [block for path in DOCS for block in python_blocks(path)]


# ---------------------------------------------------------------------- doctests


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests_pass(name: str) -> None:
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    for test in doctest.DocTestFinder().find(module, name):
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


@pytest.mark.parametrize("name", _modules(evictable.impl))
def test_every_public_impl_class_has_a_doctest(name: str) -> None:
    module = importlib.import_module(name)
    missing = [cls.__name__ for cls in _public_classes(module) if ">>>" not in (cls.__doc__ or "")]
    assert not missing, f"{name}: classes without a doctest in their docstring: {missing}"


def test_doctests_are_found() -> None:
    finder = doctest.DocTestFinder()
    found = {
        name
        for name in MODULES
        if any(t.examples for t in finder.find(importlib.import_module(name), name))
    }
    assert "evictable.impl.manager" in found
    assert "evictable.impl.free_queue" in found


# ---------------------------------------------------------------------- Markdown


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(b, id=b.name, marks=[pytest.mark.skip(reason=NOT_RUN)] if b.skip else [])
        for b in BLOCKS
    ],
)
def test_markdown_python_block_runs(block: Block, tmp_path: Path) -> None:
    # Padded with blank lines, so that a traceback gives the line in the Markdown file.
    script = tmp_path / f"{block.path.stem}_{block.line}.py"
    script.write_text("\n" * (block.line - 1) + block.code, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, f"{block.name} failed:\n{run.stderr}"


def test_readme_and_docs_have_python_examples() -> None:
    readme = [b for b in BLOCKS if b.path.name == "README.md"]
    assert len(readme) >= 2
    assert any(b.path.name == "semantics.md" for b in BLOCKS)


def test_block_parser_honours_the_skip_marker_and_refuses_indented_blocks(
    tmp_path: Path,
) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "text\n\n```python\nx = 1\n```\n\n<!-- not run -->\n\n```python\nimport vllm\n```\n",
        encoding="utf-8",
    )
    first, second = python_blocks(doc)
    assert (first.line, first.code, first.skip) == (4, "x = 1\n", False)
    assert (second.line, second.code, second.skip) == (10, "import vllm\n", True)
    doc.write_text("- item\n\n  ```python\n  x = 1\n  ```\n", encoding="utf-8")
    with pytest.raises(ValueError, match="indented"):
        python_blocks(doc)

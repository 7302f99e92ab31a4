# Everything the project needs is installed here, from a fresh clone, into .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: all test verify lint typecheck docs bench clean

all: test

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(STAMP)

# The test suite (CI runs this): pytest, then the type checker and the linter.
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2
	$(MAKE) lint

# The main job: proofs, explorer and conformance, with a summary table.
verify: $(STAMP)
	$(BIN)/evictable verify

lint: $(STAMP)
	$(BIN)/mypy --strict model impl proofs
	$(BIN)/mypy --strict tests bench
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Regenerate docs/spec.md from model/lifecycle.py (a test fails when it is stale).
docs: $(STAMP)
	$(BIN)/python -m evictable.proofs.cli.docgen --write

bench: $(STAMP)
	$(BIN)/evictable bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis

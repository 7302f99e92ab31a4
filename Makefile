# Everything the project needs is installed here, from a fresh clone, into .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: all test verify lint typecheck docs bench soak mutate clean

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

# The soak profile: 10^6 mixed steps per policy, invariants checked, memory flat.
soak: $(STAMP)
	EVICTABLE_SOAK=1 nice $(BIN)/python -m pytest -q -s tests/soak

# Mutation testing of impl/ with the engines as the kill command (CPU-heavy: niced,
# two mutants at a time). MUTATE_ARGS="--sample 100" for a quick look.
mutate: $(STAMP)
	nice $(BIN)/python -m tools.mutate $(MUTATE_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis

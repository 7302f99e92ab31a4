# Everything the project needs is installed here, from a fresh clone, into .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: all test verify lint typecheck docs bench soak mutate mutate-proofs clean interop compiled
.PHONY: interop-sglang interop-lmcache

all: test

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip 'setuptools>=77.0.3' wheel
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(STAMP)

# The test suite (CI runs this): pytest, then the type checker and the linter. When
# the compiled build exists it is brought up to date first, and tests/compiled runs
# the engines against it (skipped, with the reason, when it was never built).
test: $(STAMP)
	if [ -d $(COMPILED) ]; then $(MAKE) compiled; fi
	$(BIN)/python -m pytest -q -n 2
	$(MAKE) lint

# The compiled build of impl/ (docs/performance.md, "The compiled build"): the whole
# package built into build/compiled with impl/ compiled by mypyc; pure Python (one
# line says why) where there is no C compiler. Selected by putting it first on the
# path: PYTHONPATH=build/compiled (evictable.impl.COMPILED says which build loaded).
COMPILED := build/compiled
SOURCES  := $(shell find model impl proofs src -name '*.py' -o -name '*.json' -o -name py.typed)

$(COMPILED)/.built: $(STAMP) setup.py $(SOURCES)
	rm -rf $(COMPILED)
	EVICTABLE_COMPILE=1 nice $(BIN)/python setup.py --quiet build --build-base build/compiled-tmp --build-lib $(COMPILED) 2>&1 | grep -E '^evictable:|error' || true
	$(BIN)/python -c "import sys; sys.path.insert(0, '$(COMPILED)'); import evictable.impl as i; print('make compiled:', 'compiled' if i.COMPILED else 'pure Python (no compiled build)')"
	touch $@

compiled: $(COMPILED)/.built

# The main job: proofs, explorer and conformance, with a summary table.
verify: $(STAMP)
	$(BIN)/evictable verify

lint: $(STAMP)
	$(BIN)/mypy --strict model impl proofs src/evictable
	$(BIN)/mypy --strict tests bench
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Regenerate docs/spec.md from model/lifecycle.py, and the command transcripts of
# README.md and docs/*.md by running them (tests fail when either is stale).
docs: $(STAMP)
	$(BIN)/python -m evictable.proofs.cli.docgen --write
	$(BIN)/python -m tools.transcripts --write

bench: $(STAMP)
	$(BIN)/evictable bench

# The soak profile: 10^6 mixed steps per policy, invariants checked, memory flat.
soak: $(STAMP)
	EVICTABLE_SOAK=1 nice $(BIN)/python -m pytest -q -s tests/soak

# Mutation testing of impl/ with the engines as the kill command (CPU-heavy: niced,
# two mutants at a time). MUTATE_ARGS="--sample 100" for a quick look.
mutate: $(STAMP)
	nice $(BIN)/python -m tools.mutate $(MUTATE_ARGS)

# Mutation testing of the proofs (proofs/z3, proofs/refine) with the records of
# `evictable verify --quick` as the kill command (docs/proofs.md, "Mutation testing of
# the proofs"; hours for every mutant: niced, two at a time).
# MUTATE_ARGS="--sample 40" for a quick look, "--json r.json --resume r.json" to go on.
mutate-proofs: $(STAMP)
	nice $(BIN)/python -m tools.mutate --proofs $(MUTATE_ARGS)

# vLLM 0.33.0 on a CPU build of torch, in its own venv (docs/interop.md): the pinned
# set of interop/requirements.txt without dependency resolution, then this project.
INTEROP_PYTHON ?= python3.11
INTEROP        := .venv-interop
IBIN           := $(INTEROP)/bin
ISTAMP         := $(INTEROP)/.installed

$(ISTAMP): interop/requirements.txt pyproject.toml
	$(INTEROP_PYTHON) -m venv $(INTEROP)
	$(IBIN)/python -m pip install --quiet --no-deps -r interop/requirements.txt
	$(IBIN)/python -m pip install --quiet --no-warn-conflicts -e . pytest jsonschema
	touch $(ISTAMP)

# The interop suite: the expected verdicts of `evictable check` on vLLM's own code.
interop: $(ISTAMP)
	$(IBIN)/python -m pytest -q -p no:cacheprovider -W "ignore::DeprecationWarning:torch.jit._script" tests/interop

# SGLang 0.5.23 (its HiCache host tier) on a CPU build of torch, in its own venv
# (docs/interop.md, "SGLang 0.5"): the pinned set of interop/sglang-requirements.txt
# without dependency resolution (resolving SGLang's would pull CUDA), then this project.
SGL       := .venv-interop-sglang
SBIN      := $(SGL)/bin
SSTAMP    := $(SGL)/.installed

$(SSTAMP): interop/sglang-requirements.txt pyproject.toml
	$(INTEROP_PYTHON) -m venv $(SGL)
	$(SBIN)/python -m pip install --quiet --no-deps -r interop/sglang-requirements.txt
	$(SBIN)/python -m pip install --quiet --no-warn-conflicts -e . pytest jsonschema
	touch $(SSTAMP)

# The SGLang suite: the verdicts of `evictable check --profile sglang-0.5` on SGLang's
# own host tier, its findings' scripts (interop/sglang/) and the heap-rebuild bench.
interop-sglang: $(SSTAMP)
	$(SBIN)/python -m pytest -q -p no:cacheprovider -W "ignore::DeprecationWarning:torch.jit._script" tests/interop_sglang

# LMCache 0.5.6 on a CPU build of torch, in its own venv (docs/interop.md, "LMCache
# 0.5"): the pinned set of interop/lmcache-requirements.txt without dependency
# resolution, then this project. `make test` never needs it.
LMC       := .venv-interop-lmcache
LBIN      := $(LMC)/bin
LSTAMP    := $(LMC)/.installed

$(LSTAMP): interop/lmcache-requirements.txt pyproject.toml
	$(INTEROP_PYTHON) -m venv $(LMC)
	$(LBIN)/python -m pip install --quiet --no-deps -r interop/lmcache-requirements.txt
	$(LBIN)/python -m pip install --quiet --no-warn-conflicts -e . pytest jsonschema
	touch $(LSTAMP)

# The LMCache suite: the expected findings of `evictable check` on LMCache's own
# LocalCPUBackend, each reproduced by its script in interop/lmcache/ on LMCache alone.
interop-lmcache: $(LSTAMP)
	$(LBIN)/python -m pytest -q -p no:cacheprovider tests/interop_lmcache

clean:
	rm -rf $(VENV) $(INTEROP) $(SGL) $(LMC) .pytest_cache .mypy_cache .ruff_cache .hypothesis

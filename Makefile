# Two commands do everything on a fresh machine:
#   make run    start the whole system on this machine (the local stack), on loopback
#   make test   every check: lint, types, template (cfn-lint, sam validate --lint, sam build), tests
# Each target sets up what it needs first (the virtual environment in .venv).

PYTHON    := $(shell scripts/find-python)
VENV      := .venv
BIN       := $(VENV)/bin
STAMP     := $(VENV)/.installed
export AWS_DEFAULT_REGION ?= us-east-1
# sam build looks for the runtime's python3.13 on PATH; the venv's bin holds one.
export PATH := $(CURDIR)/$(BIN):$(PATH)
export SAM_CLI_TELEMETRY := 0

.PHONY: run test lint typecheck template unit integration e2e bench clean

$(STAMP): pyproject.toml shared/requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m local_stack $(ARGS)

test: lint typecheck template unit integration e2e

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy shared/shortener functions local_stack shortener_cli

template: $(STAMP)
	$(BIN)/cfn-lint template.yaml
	$(BIN)/sam validate --lint --template template.yaml
	$(BIN)/sam build --template template.yaml --build-dir .aws-sam/build --parallel --cached

unit: $(STAMP)
	$(BIN)/pytest tests/unit

integration: $(STAMP)
	$(BIN)/pytest tests/integration

e2e: $(STAMP)
	$(BIN)/pytest tests/e2e

bench: $(STAMP)
	$(BIN)/python -m benchmarks $(ARGS)

clean:
	rm -rf $(VENV) .aws-sam .local-stack .pytest_cache .mypy_cache .ruff_cache

# Two commands do everything on a fresh machine:
#   make run    start the whole system on this machine (the local stack), on loopback
#   make test   every check: lint, types, template (cfn-lint, sam validate --lint, sam build), tests
# Each target sets up what it needs first (the virtual environment in .venv).

PYTHON    := $(shell scripts/find-python)
VENV      := .venv
BIN       := $(VENV)/bin
# One stamp per installed set (pyproject.toml's extras): `make run` needs only `local` (the
# functions' libraries, moto, aws-sam-translator); everything else needs `dev` (local + test tools).
LOCAL     := $(VENV)/.installed-local
DEV       := $(VENV)/.installed-dev
# pip's own lines (one per package, a progress bar on a terminal), not silence.
PIP       := $(BIN)/python -m pip install --disable-pip-version-check --progress-bar on
export AWS_DEFAULT_REGION ?= us-east-1
# sam build looks for the runtime's python3.13 on PATH; the venv's bin holds one.
export PATH := $(CURDIR)/$(BIN):$(PATH)
export SAM_CLI_TELEMETRY := 0

.PHONY: run test lint typecheck template unit integration e2e bench clean

$(BIN)/python:
	@echo "==> Creating the virtual environment $(VENV) ($(PYTHON))"
	$(PYTHON) -m venv $(VENV)

$(LOCAL): pyproject.toml shared/requirements.txt | $(BIN)/python
	@echo "==> Installing what make run needs into $(VENV) (once; about a minute on a fresh clone)"
	$(PIP) -e '.[local]'
	@touch $@

$(DEV): pyproject.toml shared/requirements.txt | $(BIN)/python
	@echo "==> Installing what make test needs into $(VENV) (once: linters, SAM CLI, test tools)"
	$(PIP) -e '.[dev]'
	@touch $@ $(LOCAL)

run: $(LOCAL)
	@echo "==> Starting the local stack (python -m local_stack $(ARGS))"
	$(BIN)/python -m local_stack $(ARGS)

test: lint typecheck template unit integration e2e

lint: $(DEV)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(DEV)
	$(BIN)/mypy shared/shortener functions local_stack shortener_cli

template: $(DEV)
	$(BIN)/cfn-lint template.yaml
	$(BIN)/sam validate --lint --template template.yaml
	$(BIN)/sam build --template template.yaml --build-dir .aws-sam/build --parallel --cached

unit: $(DEV)
	$(BIN)/pytest tests/unit

integration: $(DEV)
	$(BIN)/pytest tests/integration

e2e: $(DEV)
	$(BIN)/pytest tests/e2e

bench: $(DEV)
	$(BIN)/python -m benchmarks $(ARGS)

clean:
	rm -rf $(VENV) .aws-sam .local-stack .pytest_cache .mypy_cache .ruff_cache

# Two commands do everything on a fresh machine:
#   make run    start the whole system on this machine (the local stack), on loopback
#   make test   every check: lint, types, template (cfn-lint, sam validate --lint, sam build, checkov), tests
# And for an AWS account (README, Deploy):
#   make deploy [ENV=prod]              build, check the reserved concurrency against the account's
#                                       quota, and deploy (guided the first time for an environment)
#   make delete [ENV=prod | STACK=...]  delete a stack; says what it keeps (the links table)
#   make acceptance STACK=<name>        the end-to-end tests that need only HTTP, against that stack
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

# samconfig.toml environment of `make deploy` / `make delete` (default = dev).
ENV       ?= default
SAMCONFIG ?= samconfig.toml
# Deploying goes to the caller's region (AWS_DEFAULT_REGION, AWS_REGION, or the profile's), not the
# default set above for the offline tools (botocore reads AWS_DEFAULT_REGION, not AWS_REGION).
AWS_COMMAND := $(if $(filter file,$(origin AWS_DEFAULT_REGION)),$(if $(AWS_REGION),env AWS_DEFAULT_REGION=$(AWS_REGION),env -u AWS_DEFAULT_REGION))
# checkov pins boto3, cachetools and packaging below the project's own pins, so it has a venv of its
# own; its version is pinned in pyproject.toml's [dependency-groups].
CHECKOV_VENV  := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed

.PHONY: run test lint typecheck template checkov unit integration e2e bench clean deploy delete acceptance

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

test: lint typecheck template checkov unit integration e2e

lint: $(DEV)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(DEV)
	$(BIN)/mypy shared/shortener functions local_stack shortener_cli stack_tools

template: $(DEV)
	$(BIN)/cfn-lint template.yaml
	$(BIN)/sam validate --lint --template template.yaml
	$(BIN)/sam build --template template.yaml --build-dir .aws-sam/build --parallel --cached

$(CHECKOV_STAMP): pyproject.toml
	test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --group checkov
	touch $(CHECKOV_STAMP)

checkov: $(CHECKOV_STAMP)
	$(CHECKOV_VENV)/bin/checkov --config-file .checkov.yaml

# Tests live by what they test; the tier is a marker (tests/conftest.py says which). Unit and
# integration tests run on every core (TEST_WORKERS=0 runs them in this process).
TEST_WORKERS ?= auto
unit: $(DEV)
	$(BIN)/pytest -n $(TEST_WORKERS) -m "not integration" --ignore=tests/e2e tests

integration: $(DEV)
	$(BIN)/pytest -n $(TEST_WORKERS) -m integration --ignore=tests/e2e tests

e2e: $(DEV)
	$(BIN)/pytest tests/e2e

bench: $(DEV)
	$(BIN)/python -m benchmarks $(ARGS)

# sam is the venv's; the runtime's python3.13 is on PATH through the venv's bin (see PATH above).
# Guided (it asks, and saves the answers to SAMCONFIG) when the environment has no deploy parameters.
deploy: $(DEV)
	$(BIN)/sam build --config-file $(abspath $(SAMCONFIG)) --config-env $(ENV)
	$(AWS_COMMAND) $(BIN)/python -m stack_tools check-quota --config-file $(SAMCONFIG) --config-env $(ENV) $(ARGS)
	$(AWS_COMMAND) $(BIN)/python -m stack_tools check-edge --config-file $(SAMCONFIG) --config-env $(ENV) $(ARGS)
	@if $(BIN)/python -m stack_tools configured --config-file $(SAMCONFIG) --config-env $(ENV); then \
	  echo "$(AWS_COMMAND) sam deploy --config-file $(SAMCONFIG) --config-env $(ENV) $(ARGS)"; \
	  $(AWS_COMMAND) $(BIN)/sam deploy --config-file $(abspath $(SAMCONFIG)) --config-env $(ENV) $(ARGS); \
	else \
	  echo "$(SAMCONFIG) has no deploy parameters for $(ENV): guided deploy (answers are saved there)"; \
	  $(AWS_COMMAND) $(BIN)/sam deploy --guided --config-file $(abspath $(SAMCONFIG)) --config-env $(ENV) $(ARGS); \
	fi

delete: $(DEV)
	$(AWS_COMMAND) $(BIN)/python -m stack_tools delete --sam $(BIN)/sam --config-file $(SAMCONFIG) \
	  --config-env $(ENV) $(if $(STACK),--stack-name $(STACK)) $(ARGS)

# The HTTP-only end-to-end tests against a deployed stack (found by name; its outputs give the API);
# the tests that need the local stack's insides are skipped.
acceptance: $(DEV)
	@test -n "$(STACK)" || { echo "usage: make acceptance STACK=<stack name> [AWS_REGION=...]"; exit 2; }
	$(AWS_COMMAND) ACCEPTANCE_STACK=$(STACK) $(BIN)/pytest tests/e2e $(ARGS)

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) .aws-sam .local-stack .pytest_cache .mypy_cache .ruff_cache

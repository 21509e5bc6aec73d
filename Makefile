# Two commands matter: `make run` and `make test`. Everything else is set up on demand.
PYTHON ?= python3
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.synced

export UV_PROJECT_ENVIRONMENT := $(VENV)
export SSL_CERT_FILE ?= /etc/ssl/certs/ca-certificates.crt

.PHONY: run test setup lint fmt typecheck unit bench chat demo doctor migrate clean browser

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet uv==$(UV_VERSION)

$(STAMP): $(UV) pyproject.toml uv.lock
	$(UV) sync --locked --extra dev --compile-bytecode --python $(PYTHON)
	@touch $(STAMP)

setup: $(STAMP)

migrate: setup
	$(PY) -m gateway db upgrade

# A configuration the gateway refuses (no API key, no platform token) is told in one line and exits 2.
run: migrate
	@$(PY) -m gateway run

chat: setup
	$(PY) -m gateway chat

# The terminal chat without an API key: the repository's fake model answers, every reply marked demo>.
demo: setup
	@$(PY) -m gateway chat --demo

doctor: setup
	$(PY) -m gateway doctor

lint: setup
	$(PY) -m ruff check agent gateway tests bench migrations
	$(PY) -m ruff format --check agent gateway tests bench migrations
	$(VENV)/bin/lint-imports

# Fix what ruff can, then format (a fix can leave lines to reformat).
fmt: setup
	$(PY) -m ruff check --fix agent gateway tests bench migrations
	$(PY) -m ruff format agent gateway tests bench migrations

typecheck: setup
	$(PY) -m mypy

# The dashboard's browser test drives Debian's Chromium through its driver (installed once; sudo when not root).
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
browser:
	@test -x /usr/bin/chromedriver || ($(SUDO) apt-get update && $(SUDO) apt-get install -y chromium chromium-driver)

# One test worker more than there are CPUs: many tests wait on subprocesses and sockets, so a spare
# worker keeps both cores busy (2 cores: 8.9 min instead of 10.4 for the whole suite).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))

test: setup lint typecheck browser
	$(PY) -m pytest -q -n $(TEST_WORKERS) --maxschedchunk=1

# A quick run while working: the agent and gateway tests in parallel, without the e2e marker (~2.5 min).
unit: setup
	$(PY) -m pytest -q -n auto -m "not e2e" tests/agent tests/gateway

bench: setup
	$(PY) -m bench

clean:
	rm -rf $(VENV) $(TOOLS) .pytest_cache .mypy_cache .ruff_cache

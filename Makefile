# The two set-up commands of the README: `make run` and `make test`.
# Both create the virtual environment in .venv and install the project (editable, with the dev
# extra) the first time, and again whenever pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
SPEC ?= examples/wscc9_raptor_vs_baselines.json

.PHONY: run test lint typecheck install

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/raptorgrid run $(SPEC)

# Three test processes (pytest-xdist, work stealing) on this 2-core machine: most slow tests
# wait on worker processes, brokers and servers, so a third keeps the cores busy while they
# wait (13 min 46 s with two, 10 min 28 s with three; docs/platform.md, test suite).
TEST_WORKERS ?= 3

test: $(STAMP)
	$(VENV)/bin/python -m pytest -n $(TEST_WORKERS) --dist worksteal --durations=15

lint: $(STAMP)
	$(VENV)/bin/ruff check .

# The type checker CI runs (mypy, configured in pyproject.toml): models, solvers, workers and the
# service package.
typecheck: $(STAMP)
	$(VENV)/bin/mypy -p models -p solvers -p workers -p raptorgrid

# Two entry points for a fresh clone: `make demo` and `make test`.
# Both create .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

SHARED ?= $(or $(GPUSCHED_SHARED),../shared)

.PHONY: demo test bench clean system-deps shared-data docs docs-serve

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,experiments,gpu,kube]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/gpusched demo

system-deps:
	@echo "make test: installing missing Debian packages system-wide (as root, sudo if needed): see scripts/install-system-deps.sh" >&2
	bash scripts/install-system-deps.sh

# The suite reads the trace data in ../shared (README, "Getting started"); say so in one line.
shared-data:
	@test -d "$(SHARED)/data" || { echo "make test: $(SHARED)/data not found: clone the shared data folder beside the repository as ../shared (or set GPUSCHED_SHARED=/path); see README, Getting started" >&2; exit 1; }

test: shared-data $(STAMP) system-deps
	$(BIN)/lint-imports
	$(BIN)/mypy --strict gpusched
	$(BIN)/python -m pytest -n 2 -q

# The documentation site (mkdocs.yml): strict, so a broken link fails the build.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

bench: $(STAMP)
	$(BIN)/python bench/bench_scheduler.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache build *.egg-info site

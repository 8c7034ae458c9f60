# Two entry points for a fresh clone: `make demo` and `make test`.
# Both create .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean system-deps

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/gpusched demo

system-deps:
	bash scripts/install-system-deps.sh

test: $(STAMP) system-deps
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -n 2 -q

bench: $(STAMP)
	$(BIN)/python bench/bench_scheduler.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info

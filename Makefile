# Set-up commands for a fresh machine (Python 3.11, git, make): `make demo`, `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo bench lint clean redteam

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy --strict src
	$(BIN)/lint-imports

test: lint
	$(BIN)/pytest

demo: $(STAMP)
	$(BIN)/automaton-loop --demo

# The agent hooks against the attack corpus (tests/redteam/corpus): caught / missed / false positives.
redteam: $(STAMP)
	$(BIN)/python -m tests.redteam.score

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info

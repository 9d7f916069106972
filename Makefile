# Set-up commands for a fresh machine (Python 3.11, git, make): `make demo`, `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo bench lint clean redteam browser screenshots e2e node mutate

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
	$(BIN)/vulture

# The dashboard's browser tests drive Debian's Chromium (browser downloads are not reachable):
# installed here when this runs as root with apt; elsewhere those tests say what to install.
browser:
	@if ! [ -x /usr/bin/chromium ] || ! [ -x /usr/bin/chromedriver ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing chromium and chromium-driver for the dashboard's browser tests"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1 || \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; }; \
	  else \
	    echo "note: no /usr/bin/chromium or /usr/bin/chromedriver; the browser tests are skipped" \
	         "(Debian: sudo apt-get install chromium chromium-driver)"; \
	  fi; \
	fi

test: lint browser
	$(BIN)/pytest

# The end-to-end suite runs the real agent CLIs (versions pinned in tests/e2e/clis.lock.json,
# installed with npm into $(E2E_CACHE)) against scripted local model servers: no network, no key.
# `make test` leaves it out (pytest's `-m "not e2e"`); with AUTOMATON_E2E_REQUIRED=1 (CI) a CLI
# that cannot be installed fails the run instead of skipping. Node and npm are installed here
# when this runs as root with apt.
E2E_CACHE ?= $(CURDIR)/.e2e-cache
node:
	@if ! command -v npm >/dev/null || ! command -v node >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing nodejs and npm for the e2e suite"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null 2>&1 || \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }; \
	  else \
	    echo "note: no node or npm; the e2e tests are skipped (Debian: sudo apt-get install nodejs npm)"; \
	  fi; \
	fi

e2e: $(STAMP) node
	-AUTOMATON_E2E_CACHE=$(E2E_CACHE) $(BIN)/python -m tests.e2e.install
	AUTOMATON_E2E_CACHE=$(E2E_CACHE) $(BIN)/pytest -m e2e -p no:randomly tests/e2e

demo: $(STAMP)
	$(BIN)/automaton-loop --demo

# The agent hooks against the attack corpus (tests/redteam/corpus): caught / missed / false positives.
redteam: $(STAMP)
	$(BIN)/python -m tests.redteam.score

# The README's dashboard screenshots (docs/img/), from the demo's loops in headless Chromium.
screenshots: $(STAMP) browser
	$(BIN)/python -m tests.dashboard.screenshots

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

# Mutation testing of the brake modules (tests/mutation/scope.py): kill rate per module and every
# surviving mutant; minutes per group, so not part of `make test`. GROUPS="gates ledger" runs some.
mutate: $(STAMP)
	$(BIN)/python -m tests.mutation.run $(GROUPS)

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info

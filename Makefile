# `make run`: the whole server on this machine (SQLite under instance/).  `make test`: the test suite.
# `make lint`: ruff, the type check and the import contracts (what CI runs before the suite).
# Each creates .venv and installs what it needs on first use.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export PBEM_CONFIG ?= config/development.toml

.PHONY: run test lint bench bench-bots clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

# `make run PORT=5101 MAIL_PORT=2625 INSTANCE=instance-2`: a second server beside the first, on its own web
# port, mail listener port (its dev mailbox on the next one) and files (database and mailbox).
PORT ?=
MAIL_PORT ?=
INSTANCE ?=
RUN_ENV := $(if $(INSTANCE),PBEM_SERVER_INSTANCE_PATH=$(INSTANCE))

run: $(STAMP)
	$(RUN_ENV) $(BIN)/pbem run --upgrade $(if $(PORT),--port $(PORT)) $(if $(MAIL_PORT),--mail-port $(MAIL_PORT))

# The suite runs on every core and one worker more (pytest-xdist): part of its time is waiting for
# servers, subprocesses and the browser, which the extra worker fills (on 2 cores, both databases:
# 489 s with 3 workers against 518-558 s with 2).  `make test TEST_WORKERS=2` to choose.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test: $(STAMP)
	PBEM_CONFIG=config/testing.toml $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --durations=15

# Lint: ruff, the type check (mypy, configured in pyproject.toml: pbem/ and games/) and the import
# contracts (import-linter, [tool.importlinter] in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-logo

bench: $(STAMP)
	$(BIN)/python bench/engines.py
	$(BIN)/python bench/carreaux.py
	$(BIN)/python bench/sweep.py
	$(BIN)/python bench/archive.py
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/movepath.py
	$(BIN)/python bench/mail.py
	$(BIN)/python bench/mailfloor.py
	$(BIN)/python bench/pagecpu.py
	$(BIN)/python bench/apicpu.py
	$(BIN)/python bench/tournament.py
	$(BIN)/python bench/startup.py
	command -v wrk >/dev/null || { echo 'bench/web.py needs wrk: apt-get install wrk'; exit 1; }
	$(BIN)/python bench/web.py

# The computer players' figures (issue #31): hours of CPU, so recorded game by game and gone on with.
bench-bots: $(STAMP)
	$(BIN)/python bench/bots.py --record bench/results/bots.jsonl

clean:
	rm -rf $(VENV) instance .pytest_cache .hypothesis .import_linter_cache .mypy_cache .ruff_cache

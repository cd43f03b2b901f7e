# Two entry points for newcomers: `make run` and `make test`. Each creates .venv on
# first use and reinstalls when pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

# The terminal chat, set up to show what the product does: a list is delegated inline, with a
# ⏳ progress line each second until the answer (the README says so; a test runs this line).
run: $(STAMP)
	$(BIN)/switchboard chat --set delegation.gateway_mode=inline --set agent.gateway_notify_interval=1

# The suite starts `switchboard` a few hundred times: with bytecode kept (an environment may turn it
# off), a start does not compile every module of the project again first.
test: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest

bench: $(STAMP)
	@for b in bench/*_bench.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +

# Two entry points for newcomers: `make run` and `make test`. Each creates .venv on
# first use and reinstalls when pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench clean

# A .venv a failed first run left (made by a Python older than 3.11, or without pip, as Debian's python3
# makes it before python3-venv is installed) is made again, not reused: else every later run fails alike.
$(STAMP): pyproject.toml
	@$(BIN)/python -c 'import sys, pip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
	  $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
	    echo "Switchboard needs Python 3.11 or newer; $(PYTHON) is" \
	      "$$($(PYTHON) -c 'import platform; print(platform.python_version())' 2>/dev/null || echo 'not found'):" \
	      "name a newer one, as in: $(strip make $(MAKECMDGOALS) PYTHON=python3.11)" >&2; exit 1; }; \
	  $(PYTHON) -m venv --clear $(VENV); }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

# The terminal chat, set up to show what the product does: a list is delegated inline, with a
# ⏳ progress line each second until the answer (the README says so; a test runs this line).
run: $(STAMP)
	$(BIN)/switchboard chat --set delegation.gateway_mode=inline --set agent.gateway_notify_interval=1

# The suite starts `switchboard` a few hundred times: with bytecode kept (an environment may turn it
# off), a start does not compile every module of the project again first.
# Two workers (pytest-xdist): the suite waits on sockets and child processes as much as it computes, so a
# second keeps a 2-core machine busy while the first waits; each worker has its own browser and servers.
test: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n 2

bench: $(STAMP)
	@for b in bench/*_bench.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +

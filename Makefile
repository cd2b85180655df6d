# kit: common tasks. `make help` lists them.
SHELL := /bin/bash
VENV ?= .venv
KIT := $(VENV)/bin/kit

.PHONY: help venv demo test test-fast lint
help:  ## list the targets
	@grep -E '^[a-zA-Z0-9_.-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | column -t -s "$$(printf '\t')"

venv:  ## create/update .venv with kit, its worker and report extras and the test tools
	bash scripts/venv.sh

demo: venv  ## run the embedded tiny sweep end to end (no files, no network)
	$(KIT) demo

test:  ## set up and run the whole test suite (starts the services it needs)
	bash scripts/test.sh

test-fast: venv  ## the fast tier: pure logic, generated scripts, config errors (< 5 min)
	$(VENV)/bin/python -m pytest -m "not slow and not integration and not e2e"

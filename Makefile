# The two commands of the README: `make demo` and `make test`. Both set up what they need.
.PHONY: setup demo test lint unit integration faults services clean

VENV := .venv/bin

setup:
	@./scripts/bootstrap.sh

demo: setup
	@$(VENV)/sparkcdc demo

test: setup
	@./scripts/test.sh

lint: setup
	$(VENV)/ruff check src tests benchmarks
	$(VENV)/ruff format --check src tests benchmarks
	$(VENV)/mypy

unit: setup
	$(VENV)/python -m pytest -m "not integration"

integration: setup
	$(VENV)/python -m pytest -m integration

faults: setup  # the fault suite's long form (CI runs the short form within `make test`)
	SPARKCDC_FAULT_KILLS=50 $(VENV)/python -m pytest -m faults -s

services: setup
	$(VENV)/python -m sparkcdc.embedded

clean:
	rm -rf .venv jvm/jars .pytest_cache .mypy_cache .ruff_cache .hypothesis

# The two commands of the README: `make demo` and `make test`. Both set up what they need.
.PHONY: setup demo test lint unit integration services clean

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

services: setup
	$(VENV)/python -m sparkcdc.embedded

clean:
	rm -rf .venv jvm/jars .pytest_cache .mypy_cache .ruff_cache .hypothesis

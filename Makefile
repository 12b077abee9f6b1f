# The two commands of the README: `make demo` and `make test`. Both set up what they need.
.PHONY: setup demo test lint unit integration faults services clean fuzz fuzz-short

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

# The C decoders (csrc/) under ASan + UBSan (docs/fuzzing.md). fuzz: libFuzzer, FUZZ_SECONDS
# per decoder (findings in build/fuzz/findings/); fuzz-short: the committed seeds replayed,
# as `make test` does (tests/fuzz/test_fuzz_seeds.py).
FUZZ_SECONDS ?= 600
fuzz:  # the set-up, with clang
	@SPARKCDC_FUZZ_CLANG=1 ./scripts/bootstrap.sh
	$(VENV)/python -m tests.fuzz.fuzz run --seconds $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-short: setup
	$(VENV)/python -m tests.fuzz.fuzz replay

services: setup
	$(VENV)/python -m sparkcdc.embedded

clean:
	rm -rf .venv jvm/jars .pytest_cache .mypy_cache .ruff_cache .hypothesis

#!/usr/bin/env bash
# The whole test suite: lint (ruff, mypy), then every test, unit and integration. Integration
# tests start real MariaDB, PostgreSQL, Kafka and Spark on loopback; none may be skipped in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
V=.venv/bin
echo "== ruff"; $V/ruff check src tests benchmarks; $V/ruff format --check src tests benchmarks
echo "== mypy"; $V/mypy
echo "== pytest"
# Two test processes (SPARKCDC_TEST_WORKERS): a test waits on servers and on Spark much of
# the time, so a second process fills the idle core (each has its own servers and Spark).
exec $V/python -m pytest -p no:cacheprovider -n "${SPARKCDC_TEST_WORKERS:-2}" --dist worksteal "$@"

#!/usr/bin/env bash
# The whole test suite: lint (ruff, mypy), then every test, unit and integration. Integration
# tests start real MariaDB, PostgreSQL, Kafka and Spark on loopback; none may be skipped in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
V=.venv/bin
echo "== ruff"; $V/ruff check src tests benchmarks; $V/ruff format --check src tests benchmarks
echo "== mypy"; $V/mypy
echo "== pytest"
exec $V/python -m pytest -p no:cacheprovider "$@"

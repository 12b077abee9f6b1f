"""Throughput benchmarks for sparkcdc, each printing its own C-client baseline from the same run.

Run from the repository root as ``.venv/bin/python -m benchmarks.<name>`` (see README.md).
Nothing here asserts on time: the figures are for reading, not for pass/fail.
"""

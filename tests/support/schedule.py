"""The order the suite's tests start in: the longest first, spread over the test processes.

Why: ``make test`` runs pytest-xdist's ``worksteal`` on two processes. It hands each process
a contiguous half of the collection, runs each half from its front, and balances by moving
the back of one process's queue to the other when one runs dry. A test of minutes collected
late (the installed-wheel test: ~5 minutes, in the middle of ``tests/integration``) starts
late and leaves the other process with nothing left to take: the run ends when it does.
Started first, the long tests overlap each other and the short ones, and the run ends on
unit tests of a second or less in both processes.

The weights are rough seconds on a quiet 2-core machine (the slowest tests of a full run
with ``--durations``); only their order matters. A test that is not listed keeps its place
in the collection after the listed ones; a listed one that is gone matches nothing. A
module with a module-scoped fixture is listed whole (its tests stay together, and in one
process as long as it has one test) or not at all. The first prefix that matches counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

#: Node-id prefixes of the longest tests, with rough seconds (set-up included): measured in
#: a full run at e349a34 (2,193 tests), on a clean clone, 2 processes.
LONG_TESTS: dict[str, float] = {
    "tests/integration/test_installed_wheel.py": 290,
    "tests/integration/test_pipeline_cluster.py": 160,
    "tests/faults/test_lost_log.py::test_binlogs_purged_past": 113,
    "tests/integration/test_pipeline_route.py::test_three_shards": 96,
    "tests/faults/test_kill_loop_mysql.py": 94,
    "tests/integration/test_pipeline_delta.py::test_sigkill_during_snapshot": 90,
    "tests/faults/test_kill_loop.py::test_sigkill_again_and_again_loses_and_repeats_nothing"
    "[delta]": 84,
    "tests/faults/test_network.py": 82,
    "tests/faults/test_restarts.py::test_kafka_broker_restarted": 82,
    "tests/faults/test_kill_loop.py::test_sigkill_right_after": 78,
    "tests/faults/test_restarts.py::test_postgres_source_and_target": 68,
    "tests/faults/test_kill_loop.py::test_sigkill_around_schema_changes": 68,
    "tests/faults/test_lost_log.py::test_a_dropped_postgres_slot": 64,
    "tests/integration/test_pipeline_schema_changes.py::test_evolve_mirrors": 64,
    "tests/integration/test_delta_catalog.py::test_a_metastore_table_by_route": 63,
    "tests/integration/test_pipeline_delta.py::test_concurrent_writes_during": 56,
    "tests/integration/test_pipeline_random_ddl.py::test_random_ddl_and_dml_during_the_snapshot"
    "_and_while_streaming[lenient-delta]": 55,
    "tests/integration/test_pipeline_delta.py::test_the_demo_runs_end_to_end": 54,
    "tests/integration/test_pipeline_postgres.py::test_postgres_to_delta": 53,
    "tests/integration/test_cli_flink_files.py::test_a_flink_cdc_example": 52,
    "tests/faults/test_kill_loop.py::test_sigkill_again_and_again": 50,
    # added after e349a34, estimated from runs under load (about half their loaded time)
    "tests/integration/test_pipeline_keyless.py::test_postgres_keyless_tables": 100,
    # each of its three writers' cases (Delta by Spark, by delta-rs; JDBC): 49-305 s loaded
    "tests/integration/test_pipeline_postgres_upsert.py": 60,
}

Item = TypeVar("Item")


def weight(node_id: str) -> float:
    """The listed seconds of the test ``node_id``, 0 when it is not listed."""
    return next((s for prefix, s in LONG_TESTS.items() if node_id.startswith(prefix)), 0)


def long_tests_first(items: Sequence[Item], node_ids: Sequence[str], workers: int) -> list[Item]:
    """``items`` reordered for ``workers`` processes: the listed tests, longest first, dealt
    to the process whose share of them is the shortest so far (each share at the front of
    the part of the collection worksteal hands that process first), the others in their
    order after them."""
    weights = [weight(n) for n in node_ids]
    listed = sorted((i for i, w in enumerate(weights) if w), key=lambda i: -weights[i])
    rest = [item for item, w in zip(items, weights, strict=True) if not w]
    shares: list[list[Item]] = [[] for _ in range(max(1, workers))]
    loads = [0.0] * len(shares)
    for i in listed:
        lightest = loads.index(min(loads))
        shares[lightest].append(items[i])
        loads[lightest] += weights[i]
    ordered: list[Item] = []
    left = len(items)
    for n, share in enumerate(shares):  # worksteal's first split: len // processes left
        size = left // (len(shares) - n)
        left -= size
        taken = max(0, size - len(share))
        ordered += share + rest[:taken]
        del rest[:taken]
    return ordered + rest

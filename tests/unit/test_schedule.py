"""The suite's start order (tests/support/schedule.py): the longest tests at the front of
each process's first share, the others after them in their collected order."""

from __future__ import annotations

from tests.support.schedule import LONG_TESTS, long_tests_first, weight

WHEEL = "tests/integration/test_installed_wheel.py::test_readme_install"
CLUSTER = "tests/integration/test_pipeline_cluster.py::test_a_pipeline_on_a_cluster"
LOST_LOG = "tests/faults/test_lost_log.py::test_binlogs_purged_past_a_stopped_pipeline[delta]"
UNITS = [f"tests/unit/test_u.py::test_{n}" for n in range(9)]


def test_the_longest_start_each_process_and_the_rest_keep_their_order() -> None:
    collected = [UNITS[0], LOST_LOG, *UNITS[1:5], WHEEL, *UNITS[5:], CLUSTER]
    ordered = long_tests_first(collected, collected, 2)
    assert sorted(ordered) == sorted(collected)
    half = len(collected) // 2  # worksteal's first share of two processes
    assert ordered[0] == WHEEL  # the longest first in one process
    assert ordered[half : half + 2] == [CLUSTER, LOST_LOG]  # the next two in the other
    assert [n for n in ordered if n in UNITS] == UNITS


def test_one_process_takes_them_longest_first_and_unlisted_tests_stay_put() -> None:
    collected = [UNITS[0], LOST_LOG, UNITS[1], WHEEL, CLUSTER]
    assert long_tests_first(collected, collected, 1) == [WHEEL, CLUSTER, LOST_LOG, *UNITS[:2]]
    assert long_tests_first(UNITS, UNITS, 2) == UNITS


def test_the_first_matching_prefix_weighs() -> None:
    kill_loop = "tests/faults/test_kill_loop.py::test_sigkill_again_and_again_loses_and_repeats"
    assert weight(f"{kill_loop}_nothing[delta]") > weight(f"{kill_loop}_nothing[kafka-upsert]")
    assert weight(UNITS[0]) == 0
    assert all(prefix.startswith(("tests/integration/", "tests/faults/")) for prefix in LONG_TESTS)

"""``verify`` says how far each side's read is while Spark reads it (verify/progress.py)."""

from __future__ import annotations

from typing import Any

from sparkcdc.verify.progress import tracked


def test_a_tracked_action_reports_its_first_stages_tasks_up_to_all_of_them(spark: Any) -> None:
    """Whatever the moment the watcher looks, the counts only grow and the last one said
    is every partition of the read (said after the action when the watcher missed it);
    the caller's job group is its own again afterwards."""
    context = spark.sparkContext
    context.setJobGroup("the-callers-group", "a caller's jobs")
    frame = spark.range(0, 20_000, 1, numPartitions=7).selectExpr("id", "id * 2 AS twice")
    reports: list[tuple[int, int]] = []
    try:
        counted = tracked(
            spark,
            "a test read",
            frame.count,
            lambda done, total: reports.append((done, total)),
            interval=0.01,
        )
        assert counted == 20_000
        assert reports and reports[-1] == (7, 7)
        assert all(total == 7 for _, total in reports)
        assert [done for done, _ in reports] == sorted({done for done, _ in reports})
        assert context.getLocalProperty("spark.jobGroup.id") == "the-callers-group"
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
        context.setLocalProperty("spark.job.description", None)
        context.setLocalProperty("spark.job.interruptOnCancel", None)

"""Whether a batch's snapshot rows are in a Delta target, from the target's history
(sinks/delta/appended.py): the sink's own replay check for snapshot appends."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.sinks.delta.appended import appended_through

PIPELINE = "orders:0f1e"


def own(batch: int, snapshot_rows: bool = False, pipeline: str = PIPELINE) -> str:
    metadata = {"pipeline": pipeline, "batch_id": batch, "source_offset": None}
    if snapshot_rows:
        metadata["snapshot_rows"] = True
    return json.dumps(metadata)


def newest_first(commits: list[tuple[str, str | None]]) -> list[tuple[int, str, str | None]]:
    """``(operation, userMetadata)`` oldest first, as ``DESCRIBE HISTORY`` rows."""
    return [(v, op, meta) for v, (op, meta) in reversed(list(enumerate(commits)))]


CREATED = ("CREATE TABLE", None)


def test_the_newest_own_append_says_through_which_batch() -> None:
    history = newest_first([CREATED, ("WRITE", own(0)), ("WRITE", own(1)), ("MERGE", own(1))])
    assert appended_through(history, PIPELINE, 1) is True  # a replay of batch 1
    assert appended_through(history, PIPELINE, 0) is True
    assert appended_through(history, PIPELINE, 2) is False


def test_an_earlier_batchs_merge_ends_the_walk() -> None:
    history = newest_first([("WRITE", own(3)), ("MERGE", own(4))])  # no version 0 here
    assert appended_through(history, PIPELINE, 5) is False
    # this batch's own MERGE (of its log changes) does not: its append comes before
    assert appended_through(newest_first([("WRITE", own(5)), ("MERGE", own(5))]), PIPELINE, 5)
    truncated = newest_first([("MERGE", own(4)), ("DELETE", own(5))])
    assert appended_through(truncated, PIPELINE, 5) is False


def test_a_merge_marked_as_carrying_snapshot_rows_counts_as_their_append() -> None:
    history = newest_first([CREATED, ("WRITE", own(0)), ("MERGE", own(1, snapshot_rows=True))])
    assert appended_through(history, PIPELINE, 1) is True
    assert appended_through(history, PIPELINE, 2) is False


def test_other_writers_are_passed_over_and_a_cut_history_tells_nothing() -> None:
    others = [
        ("OPTIMIZE", None),
        ("WRITE", own(9, pipeline="another:1")),
        ("WRITE", "not json"),
        ("WRITE", json.dumps({"pipeline": PIPELINE, "batch_id": "7"})),
        ("SET TBLPROPERTIES", None),
    ]
    assert appended_through(newest_first([CREATED, ("WRITE", own(2)), *others]), PIPELINE, 2)
    cut = newest_first([CREATED, ("WRITE", own(2)), *others])[: len(others)]
    assert appended_through(cut, PIPELINE, 2) is None
    assert appended_through(newest_first([CREATED, *others]), PIPELINE, 2) is False
    assert appended_through([], PIPELINE, 0) is None


@st.composite
def pipeline_runs(draw: st.DrawFn) -> tuple[list[tuple[str, str | None]], int, bool]:
    """A target's commits as a pipeline makes them, batch by batch in order (a truncate's
    DELETE, then the snapshot rows' append or a MERGE of them marked, then a MERGE of log
    changes; each there or not), with other writers' commits in between, cut short by a
    crash anywhere; and the batch the restart replays with whether its rows are in."""
    commits: list[tuple[str, str | None]] = [CREATED]
    batches = draw(st.integers(1, 8))
    appended = -1
    for batch in range(batches):
        snapshot = draw(st.sampled_from([None, "WRITE", "marked"]))
        steps = [
            ("DELETE", own(batch)) if draw(st.booleans()) else None,
            None if snapshot is None else ("WRITE", own(batch)),
            ("MERGE", own(batch, snapshot_rows=True)) if snapshot == "marked" else None,
            ("MERGE", own(batch)) if draw(st.booleans()) else None,
        ]
        if snapshot == "marked":
            steps[1] = None
        for step in [s for s in steps if s is not None]:
            if draw(st.booleans()):
                commits.append(draw(st.sampled_from([("OPTIMIZE", None), ("WRITE", None)])))
            if draw(st.integers(0, 15)) == 0:  # the crash: this batch is replayed
                return commits, batch, appended >= batch
            commits.append(step)
            if step[0] == "WRITE" or step == ("MERGE", own(batch, snapshot_rows=True)):
                appended = batch
    return commits, batches - 1, appended >= batches - 1


@given(pipeline_runs())
def test_the_walk_agrees_with_what_the_pipeline_committed(
    run: tuple[list[tuple[str, str | None]], int, bool],
) -> None:
    commits, replayed, expected = run
    history = newest_first(commits)
    assert appended_through(history, PIPELINE, replayed) is expected
    # a history cut short (cleaned up, or past the walk) says the same or nothing, and
    # the right thing once it reaches a commit of an earlier batch's
    for length in range(len(history)):
        said = appended_through(history[:length], PIPELINE, replayed)
        assert said is None or said is expected
    earlier = [
        i
        for i, (_, _, meta) in enumerate(history)
        if meta and json.loads(meta)["batch_id"] < replayed
    ]
    if earlier:
        assert appended_through(history[: earlier[0] + 1], PIPELINE, replayed) is expected

"""The Arrow reduction to each key's last change (sinks/reduce_arrow.py), against a plain
Python model of the rule sinks/reduce.py states (order by ``_commit_version``, then an
image that sets the key over one that removes it, then the later row), and the fetch
groups that bound the native writer's memory (spark/arrow_fetch.py)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.sinks.reduce import DELETED
from sparkcdc.sinks.reduce_arrow import last_change_per_key, snapshot_rows
from sparkcdc.spark.arrow_fetch import fetch_groups

KINDS = ("insert", "update_preimage", "update_postimage", "delete")
CHANGE = st.tuples(
    st.one_of(st.none(), st.integers(0, 4)),  # key (NULL is a key of its own)
    st.integers(0, 3),  # a second key column
    st.text(max_size=3),
    st.sampled_from(KINDS),
    st.integers(0, 5),  # _commit_version
)


def _table(changes: list[tuple[Any, ...]]) -> pa.Table:
    return pa.table(
        {
            "k": pa.array([c[0] for c in changes], pa.int64()),
            "j": pa.array([c[1] for c in changes], pa.int32()),
            "v": pa.array([c[2] for c in changes], pa.string()),
            "_change_type": pa.array([c[3] for c in changes], pa.string()),
            "_commit_version": pa.array([c[4] for c in changes], pa.int64()),
            "_commit_timestamp": pa.array([None] * len(changes), pa.timestamp("us", "UTC")),
        }
    )


def _model(changes: list[tuple[Any, ...]]) -> set[tuple[Any, ...]]:
    last: dict[tuple[Any, Any], tuple[tuple[int, int, int], tuple[Any, ...]]] = {}
    for position, (k, j, v, kind, version) in enumerate(changes):
        rank = 1 if kind in ("insert", "update_postimage") else 0
        order = (version, rank, position)
        if (k, j) not in last or last[(k, j)][0] < order:
            last[(k, j)] = (order, (k, j, v, version, rank == 0))
    return {row for _, row in last.values()}


@settings(max_examples=300, deadline=None)
@given(st.lists(CHANGE, max_size=40))
def test_the_last_change_per_key_is_the_models(changes: list[tuple[Any, ...]]) -> None:
    reduced = last_change_per_key(_table(changes), ["k", "j"], ["k", "j", "v"])
    assert reduced.column_names == ["k", "j", "v", "_commit_version", DELETED]
    rows = list(zip(*(reduced.column(c).to_pylist() for c in reduced.column_names), strict=True))
    assert len(rows) == len(set(rows)) and set(rows) == _model(changes)


def test_an_update_pre_and_post_image_of_one_version_ends_set() -> None:
    changes = [(1, 0, "a", "update_postimage", 7), (1, 0, "old", "update_preimage", 7)]
    reduced = last_change_per_key(_table(changes), ["k"], ["k", "v"])
    assert reduced.to_pylist() == [{"k": 1, "v": "a", "_commit_version": 7, DELETED: False}]


def test_snapshot_rows_are_inserts_at_the_batch_end() -> None:
    changes = [(1, 0, "", "insert", 9), (2, 0, "", "insert", 8), (3, 0, "", "update_postimage", 9)]
    assert snapshot_rows(_table(changes), 9).to_pylist() == [True, False, False]
    assert snapshot_rows(_table(changes), None).to_pylist() == [False] * 3


def test_fetch_groups_bound_the_rows_fetched_at_once() -> None:
    assert fetch_groups([], 10) == []
    assert fetch_groups([3, 3, 3, 3], 10) == [[0, 1, 2], [3]]
    # a frame over the limit, or of no count, goes alone; the order is kept
    assert fetch_groups([2, 50, None, 4, 6], 10) == [[0], [1], [2], [3, 4]]
    assert fetch_groups([0] * 5, 10) == [[0, 1, 2, 3, 4]]


@given(st.lists(st.one_of(st.none(), st.integers(0, 30)), max_size=30))
def test_every_frame_is_fetched_once_within_the_limit(counts: list[int | None]) -> None:
    groups = fetch_groups(counts, 10)
    assert [i for group in groups for i in group] == list(range(len(counts)))
    for group in groups:
        known = [counts[i] for i in group]
        assert len(group) == 1 or (None not in known and sum(c or 0 for c in known) <= 10)


#: Changes of a table (k, v, w) whose upserts may lack v and/or w (``_unchanged``).
ABSENT_CHANGE = st.tuples(
    st.integers(0, 3),  # key
    st.one_of(st.none(), st.text(max_size=2)),  # v
    st.one_of(st.none(), st.text(max_size=2)),  # w
    st.sampled_from(KINDS),
    st.integers(0, 5),  # _commit_version
    st.sampled_from([None, ("v",), ("w",), ("v", "w"), ("w", "v")]),  # absent columns
)


def _absent_table(changes: list[tuple[Any, ...]]) -> pa.Table:
    absent = [
        list(c[5]) if c[5] is not None and c[3] == "update_postimage" else None for c in changes
    ]
    return pa.table(
        {
            "k": pa.array([c[0] for c in changes], pa.int64()),
            # an absent value is None in the image, as the decoder gives it
            "v": pa.array(
                [None if a and "v" in a else c[1] for c, a in zip(changes, absent, strict=True)]
            ),
            "w": pa.array(
                [None if a and "w" in a else c[2] for c, a in zip(changes, absent, strict=True)]
            ),
            "_change_type": pa.array([c[3] for c in changes], pa.string()),
            "_commit_version": pa.array([c[4] for c in changes], pa.int64()),
            "_unchanged": pa.array(absent, pa.list_(pa.string())),
        },
        schema=pa.schema(
            [
                ("k", pa.int64()),
                ("v", pa.string()),
                ("w", pa.string()),
                ("_change_type", pa.string()),
                ("_commit_version", pa.int64()),
                ("_unchanged", pa.list_(pa.string())),
            ]
        ),
    )


def _folded_model(changes: list[tuple[Any, ...]]) -> dict[int, tuple[Any, ...]]:
    """Per key, in order (version, rank, position): the last change's version and whether it
    removed the key; each column's value from the latest change that sets the key and has
    it; the columns none has (sorted), or None."""
    by_key: dict[int, list[tuple[tuple[int, int, int], tuple[Any, ...]]]] = {}
    for position, change in enumerate(changes):
        k, _, _, kind, version, _ = change
        rank = 1 if kind in ("insert", "update_postimage") else 0
        by_key.setdefault(k, []).append(((version, rank, position), change))
    result: dict[int, tuple[Any, ...]] = {}
    for k, ordered in by_key.items():
        ordered.sort()
        (version, rank, _), _ = ordered[-1]
        values, lacking = [], []
        for i, name in ((1, "v"), (2, "w")):
            having = [
                c
                for (_, r, _), c in ordered
                if r == 1 and not (c[3] == "update_postimage" and c[5] and name in c[5])
            ]
            values.append(having[-1][i] if having else None)
            if not having:
                lacking.append(name)
        if rank == 0:  # a removed key's values are not written
            result[k] = (None, None, version, True, None)
        else:
            result[k] = (*values, version, False, sorted(lacking) or None)
    return result


@settings(max_examples=300, deadline=None)
@given(st.lists(ABSENT_CHANGE, max_size=40))
def test_absent_values_are_folded_from_the_keys_latest_change_that_has_them(
    changes: list[tuple[Any, ...]],
) -> None:
    reduced = last_change_per_key(_absent_table(changes), ["k"], ["k", "v", "w"])
    assert reduced.column_names == ["k", "v", "w", "_commit_version", "_unchanged", DELETED]
    got = {
        r["k"]: (None, None, r["_commit_version"], True, None)
        if r[DELETED]
        else (
            r["v"],
            r["w"],
            r["_commit_version"],
            False,
            None if r["_unchanged"] is None else sorted(r["_unchanged"]),
        )
        for r in reduced.to_pylist()
    }
    assert len(got) == reduced.num_rows
    assert got == _folded_model(changes)


def test_an_insert_then_an_update_lacking_a_value_is_a_whole_row() -> None:
    changes = [
        (1, "a", "big", "insert", 3, None),
        (1, "b", None, "update_postimage", 4, ("w",)),
        (2, "c", None, "update_postimage", 4, ("w",)),  # the target keeps w
    ]
    reduced = last_change_per_key(_absent_table(changes), ["k"], ["k", "v", "w"])
    rows = {r["k"]: (r["v"], r["w"], r["_unchanged"]) for r in reduced.to_pylist()}
    assert rows == {1: ("b", "big", None), 2: ("c", None, ["w"])}

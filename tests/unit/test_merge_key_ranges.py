"""The ranges that bound a Delta MERGE by a batch's keys (sinks/delta/pruning.py): they
hold every key, are at most as many as allowed, and cut where keys leave wide gaps."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.sinks.delta.pruning import _coalesced, _distance, split_at_gaps


def _points(keys: list[int]) -> list[tuple[int, int]]:
    return [(k, k) for k in sorted(set(keys))]


@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=300), st.integers(1, 20))
def test_the_ranges_hold_every_key_in_order_and_are_at_most_as_many_as_allowed(
    keys: list[int], most: int
) -> None:
    ranges = split_at_gaps(_points(keys), _distance, most)
    assert 1 <= len(ranges) <= max(most, 1)
    assert all(a <= b for a, b in ranges)
    assert all(b < c for (_, b), (c, _) in pairwise(ranges))
    assert all(any(a <= k <= b for a, b in ranges) for k in keys)
    ends = {k for r in ranges for k in r}
    assert ends <= set(keys), "every range starts and ends at a key of the batch"


@given(st.integers(17, 500), st.integers(1, 10**6), st.integers(-(10**9), 10**9))
def test_many_keys_spread_evenly_are_one_range(count: int, step: int, start: int) -> None:
    keys = [start + i * step for i in range(count)]
    assert split_at_gaps(_points(keys), _distance, 16) == [(keys[0], keys[-1])]


@given(st.integers(1, 16), st.integers(2, 10**6), st.integers(-(10**9), 10**9))
def test_as_many_keys_as_ranges_spread_evenly_are_a_range_each(
    count: int, step: int, start: int
) -> None:
    keys = [start + i * step for i in range(count)]
    assert split_at_gaps(_points(keys), _distance, 16) == _points(keys)


def test_clusters_far_apart_are_a_range_each_cut_at_the_widest_gaps() -> None:
    old = list(range(1, 201))  # the oldest rows, deleted
    recent = list(range(9_900_000, 9_900_500, 3))  # recent rows, updated
    new = list(range(10_000_001, 10_000_301))  # inserted
    ranges = split_at_gaps(_points(old + recent + new), _distance, 16)
    # a gap narrower than a 16th of the keys' span is not cut
    assert ranges == [(1, 200), (9_900_000, 10_000_300)]
    middle = list(range(5_000_000, 5_000_100))
    ranges = split_at_gaps(_points(old + middle + new), _distance, 16)
    assert ranges == [(1, 200), (5_000_000, 5_000_099), (10_000_001, 10_000_300)]
    # allowed three ranges only: the two widest gaps are cut
    late = list(range(9_000_000, 9_000_100))
    assert split_at_gaps(_points(old + middle + late + new), _distance, 3) == [
        (1, 200),
        (5_000_000, 5_000_099),
        (9_000_000, 10_000_300),
    ]


def test_dates_and_decimals_have_a_distance_strings_do_not() -> None:
    days = [date(2020, 1, 1) + timedelta(days=i) for i in range(50)]
    later = [date(2026, 1, 1) + timedelta(days=i) for i in range(50)]
    assert split_at_gaps([(d, d) for d in days + later], _distance, 16) == [
        (days[0], days[-1]),
        (later[0], later[-1]),
    ]
    cents = [Decimal(i) / 100 for i in range(30)] + [Decimal(10**6 + i) / 100 for i in range(30)]
    assert len(split_at_gaps([(c, c) for c in cents], _distance, 16)) == 2
    words = [f"a{i:03d}" for i in range(30)] + [f"z{i:03d}" for i in range(30)]
    assert split_at_gaps([(w, w) for w in words], _distance, 16) == [("a000", "z029")]


@given(st.lists(st.tuples(st.integers(-1000, 1000), st.integers(0, 50)), min_size=1))
def test_coalesced_spans_are_disjoint_and_cover_the_same_keys(
    pairs: list[tuple[int, int]],
) -> None:
    spans = sorted((a, a + width) for a, width in pairs)
    joined = _coalesced(spans)
    assert all(b < c for (_, b), (c, _) in pairwise(joined))
    covered = {k for a, b in spans for k in range(a, b + 1)}
    assert covered == {k for a, b in joined for k in range(a, b + 1)}

"""PostgreSQL truncates as the planner sees them (no server): the first transaction that
truncates a captured table, with positions counted as executors count, and the table's
JSON for the offset, which must read back to the equal table."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.connectors.postgres.server.discovery import PgTable
from sparkcdc.connectors.postgres.server.table_json import table_from_json, table_to_json
from sparkcdc.connectors.postgres.server.types import PgColumn, PgType
from sparkcdc.connectors.postgres.wal.position import LsnPosition
from sparkcdc.connectors.postgres.wal.scan import Transaction, first_truncate
from sparkcdc.core.table import TableId


def tx(commit: int, changes: int = 0, truncated: tuple[int, ...] = ()) -> Transaction:
    return Transaction(commit, commit, commit + 10, changes, len(truncated), truncated)


def test_the_first_truncate_of_a_captured_table_and_its_positions() -> None:
    transactions = [tx(100, 3), tx(200, 0, (77,)), tx(300, 2), tx(400, 0, (5, 6)), tx(500, 1)]
    start = LsnPosition(50, 40)
    # 77 is not captured: the truncate of 5 in the fourth transaction is the first
    first = first_truncate(start, LsnPosition(1000), transactions, {5, 9})
    assert first is not None
    before, after, found = first
    assert found == transactions[3]
    # 40 + (3 + 1) + (0 + 1) + (2 + 1) changes and commits before it; its commit after it
    assert before == LsnPosition(400, 48) and before.count == 48
    assert after == LsnPosition(410, 49) and after.count == 49
    assert first_truncate(start, LsnPosition(400), transactions, {5}) is None  # not before end
    assert first_truncate(start, LsnPosition(1000), transactions, {1}) is None


pg_types = st.recursive(
    st.builds(
        PgType,
        st.sampled_from(["int4", "text", "numeric", "mood"]),
        st.sampled_from("becr"),
        st.sampled_from("NSUE"),
        st.integers(-1, 10**6),
        st.none(),
        st.text(max_size=10),
        st.sampled_from([",", ";"]),
    ),
    lambda inner: st.builds(PgType, st.just("_x"), st.just("b"), st.just("A"), element=inner),
    max_leaves=3,
)
columns = st.lists(
    st.builds(
        PgColumn,
        st.text(min_size=1, max_size=8),
        pg_types,
        st.booleans(),
        st.none() | st.sampled_from(["C", "en_US"]),
        st.booleans(),
    ),
    min_size=1,
    max_size=5,
)


@given(columns, st.integers(1, 2**32 - 1), st.text(min_size=1, max_size=8))
def test_a_table_reads_back_from_its_json(found: list[PgColumn], oid: int, schema: str) -> None:
    table = PgTable(
        TableId(schema, "t.x"),
        oid,
        tuple(found),
        (found[0].name,),
        found[0].name,
        "f",
        tuple((23, -1) for _ in found),
    )
    assert table_from_json(table_to_json(table)) == table

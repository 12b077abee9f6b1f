"""An online schema change tool's RENAME swap of a captured table (binlog/schema_scan.py):
followed as a change to the swapped-in table's columns, or refused with the reason."""

from __future__ import annotations

import dataclasses

from sparkcdc.connectors.mysql.binlog.schema_scan import _change, _Found
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from tests.unit.test_mysql_ddl_columns import TABLE

OTHER = dataclasses.replace(TABLE, table_id=TableId("shop", "u"))
TABLES = {TABLE.table_id: TABLE, OTHER.table_id: OTHER}
GH_OST = "rename /* gh-ost */ table `shop`.`t` to `shop`.`_t_del`, `shop`.`_t_gho` to `shop`.`t`"


def swapped_in(*columns: str, key: tuple[str, ...] = ("id",)) -> CapturedTable:
    by_name = {c.name: c for c in TABLE.columns}
    picked = tuple(
        dataclasses.replace(by_name.get(name, TABLE.columns[2]), name=name, ordinal=i + 1)
        for i, name in enumerate(columns)
    )
    return CapturedTable(TABLE.table_id, picked, key, key[0])


def change(statement: str, now: CapturedTable | Exception | None) -> _Found:
    def describe(table: CapturedTable) -> CapturedTable:
        assert table is TABLE
        if isinstance(now, Exception):
            raise now
        assert now is not None
        return now

    found = _change(
        statement, "shop", TABLES, lambda t: None, True, None if now is None else describe
    )
    assert found is not None
    return found


def test_a_swap_takes_the_new_columns_and_drops_the_names_gone() -> None:
    new = swapped_in("id", "label", "d", "extra")
    found = change(GH_OST, new)
    assert (found.table_id, found.table, found.problem) == (TABLE.table_id, new, "")
    assert found.swapped and not found.truncated
    assert found.moves.dropped == ("b",) and found.moves.renamed == {}


def test_swaps_that_cannot_be_followed_say_why() -> None:
    def problem(statement: str, now: CapturedTable | Exception | None) -> str:
        found = change(statement, now)
        assert found.table is None
        return found.problem

    assert "another primary key (d instead of id)" in problem(
        GH_OST, swapped_in("id", "d", key=("d",))
    )
    assert "cannot be captured: gone" in problem(GH_OST, SchemaError("gone"))
    assert "several captured tables" in problem(
        "RENAME TABLE t TO a, b TO t, u TO c, d TO u", swapped_in("id")
    )
    # renamed away and not back in: the later changes would be missed
    assert "missed under its new name" in problem("RENAME TABLE t TO a, u TO b, c TO u", None)
    assert "missed under its new name" in problem(GH_OST, None)  # no way to read the columns

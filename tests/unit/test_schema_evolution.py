"""What a target becomes when its table's columns change (pipeline/evolution.py), per
``schema.change.behavior``: examples from docs/schema-evolution.md's table, and properties
over random sequences of changes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.change_types import excluded_types
from sparkcdc.pipeline.evolution import evolution, evolved_target
from sparkcdc.pipeline.widening import widen
from sparkcdc.snapshot.schema_change import ColumnMoves

TABLE = TableId("shop", "t")


def schema(*fields: tuple[str, T.DataType, bool]) -> T.StructType:
    return T.StructType([T.StructField(n, t, nullable) for n, t, nullable in fields])


BEFORE = schema(
    ("id", T.LongType(), False), ("a", T.IntegerType(), False), ("b", T.StringType(), True)
)


def shape(result: T.StructType) -> list[tuple[str, str, bool]]:
    return [(f.name, f.dataType.simpleString(), f.nullable) for f in result.fields]


def test_lenient_adds_keeps_and_widens() -> None:
    after = schema(
        ("id", T.LongType(), False), ("a", T.LongType(), False), ("c", T.IntegerType(), False)
    )
    assert shape(evolved_target("lenient", BEFORE, after, TABLE, "ALTER ...")) == [
        ("id", "bigint", False),
        ("a", "bigint", False),  # widened, still NOT NULL: the table's a is too
        ("b", "string", True),  # dropped: kept, NULL from now on
        ("c", "int", True),  # added: nullable (rows before it have none)
    ]


def test_lenient_stops_where_no_type_holds_both() -> None:
    after = schema(("id", T.LongType(), False), ("a", T.BinaryType(), True))
    with pytest.raises(
        SchemaError, match="column a of the target is int and the table's values are now binary"
    ):
        evolved_target("lenient", BEFORE, after, TABLE, "ALTER TABLE t MODIFY a BLOB")


def test_ignore_keeps_the_columns_and_refuses_values_that_do_not_fit() -> None:
    after = schema(
        ("id", T.LongType(), False), ("a", T.ShortType(), False), ("c", T.IntegerType(), True)
    )
    assert shape(evolved_target("ignore", BEFORE, after, TABLE, "x")) == [
        ("id", "bigint", False),
        ("a", "int", False),  # a narrower type fits
        ("b", "string", True),
    ]
    wider = schema(("id", T.LongType(), False), ("a", T.LongType(), False))
    with pytest.raises(SchemaError, match="'ignore' cannot write"):
        evolved_target("ignore", BEFORE, wider, TABLE, "ALTER TABLE t MODIFY a BIGINT")


def test_exception_names_the_statement() -> None:
    after = schema(
        *[(f.name, f.dataType, f.nullable) for f in BEFORE.fields], ("c", T.IntegerType(), True)
    )
    with pytest.raises(
        SchemaError, match=r"ALTER TABLE t ADD c INT\) and 'schema.change.behavior' is 'exception'"
    ):
        evolved_target("exception", BEFORE, after, TABLE, "ALTER TABLE t ADD c INT")
    assert evolved_target("exception", BEFORE, BEFORE, TABLE, "") == BEFORE


def test_evolve_mirrors_renames_drops_and_positions() -> None:
    """ALTER TABLE t RENAME COLUMN b TO c, ADD x INT FIRST, MODIFY a BIGINT, DROP ... : the
    target takes the table's columns; only added columns become nullable."""
    after = schema(
        ("x", T.IntegerType(), False),
        ("id", T.LongType(), False),
        ("a", T.LongType(), False),
        ("c", T.StringType(), True),
    )
    moves = ColumnMoves(renamed={"b": "c"})
    result = evolution("evolve", BEFORE, after, TABLE, "ALTER ...", moves)
    assert shape(result.schema) == [
        ("x", "int", True),
        ("id", "bigint", False),
        ("a", "bigint", False),
        ("c", "string", True),
    ]
    assert result.moves == ColumnMoves(renamed={"b": "c"})
    # a replay (the target renamed already) renames nothing again
    again = evolution("evolve", result.schema, after, TABLE, "ALTER ...", moves)
    assert again.schema == result.schema and again.moves == ColumnMoves()
    dropped = schema(("id", T.LongType(), False), ("b", T.StringType(), True))
    result = evolution("try_evolve", BEFORE, dropped, TABLE, "x", ColumnMoves(dropped=("a",)))
    assert shape(result.schema) == [("id", "bigint", False), ("b", "string", True)]
    assert result.moves == ColumnMoves(dropped=("a",))


def test_a_column_dropped_and_added_again_loses_its_values_under_evolve_only() -> None:
    after = schema(
        ("id", T.LongType(), False), ("a", T.IntegerType(), False), ("b", T.IntegerType(), True)
    )
    moves = ColumnMoves(dropped=("b",))
    result = evolution("evolve", BEFORE, after, TABLE, "DROP b, ADD b INT", moves)
    assert result.moves == ColumnMoves(dropped=("b",))  # the sink drops it, then adds it
    assert shape(result.schema)[2] == ("b", "int", True)
    # lenient keeps everything: b stays, widened to hold both (string holds ints)
    assert shape(evolved_target("lenient", BEFORE, after, TABLE, "x", moves))[2] == (
        "b",
        "string",
        True,
    )


def test_excluded_change_types_are_taken_as_ignore_takes_them() -> None:
    after = schema(
        ("id", T.LongType(), False), ("a", T.IntegerType(), False), ("c", T.StringType(), True)
    )
    moves = ColumnMoves(renamed={"b": "c"})
    # rename excluded: b kept (NULL from now on), c not added
    no_renames = excluded_types({"exclude.schema.changes": "rename.column"})
    assert shape(evolved_target("evolve", BEFORE, after, TABLE, "x", moves, no_renames)) == [
        ("id", "bigint", False),
        ("a", "int", False),
        ("b", "string", True),
    ]
    # only adds included: a drop is not applied
    only_adds = excluded_types({"include.schema.changes": "add"})
    gone = schema(("id", T.LongType(), False), ("a", T.IntegerType(), False))
    drop = ColumnMoves(dropped=("b",))
    assert shape(evolved_target("evolve", BEFORE, gone, TABLE, "x", drop, only_adds))[2] == (
        "b",
        "string",
        True,
    )
    # exception stops only at included types
    assert evolved_target("exception", BEFORE, gone, TABLE, "x", drop, only_adds) is not None
    with pytest.raises(SchemaError, match="'exception'"):
        evolved_target("exception", BEFORE, gone, TABLE, "x", drop, no_renames)


def test_change_type_options_name_the_valid_values() -> None:
    assert excluded_types({}) == frozenset()
    assert excluded_types({"include.schema.changes": "column"}) == {
        "drop.table",
        "truncate.table",
    }  # create.table is always applied
    assert excluded_types({"exclude.schema.changes": "drop, alter.column.type"}) == {
        "drop.column",
        "drop.table",
        "alter.column.type",
    }
    with pytest.raises(
        Exception,
        match=r"option 'exclude.schema.changes': invalid value "
        r"'add.columns'. Valid values: add.column, ",
    ):
        excluded_types({"exclude.schema.changes": "add.columns"})


TYPES = st.sampled_from(
    [
        T.ByteType(),
        T.ShortType(),
        T.IntegerType(),
        T.LongType(),
        T.DecimalType(10, 2),
        T.StringType(),
        T.DateType(),
    ]
)
NAMES = st.sampled_from(["a", "b", "c", "d", "e"])


@st.composite
def column_histories(draw: st.DrawFn) -> list[T.StructType]:
    """A table's columns after each of several random changes (add, drop, rename, type)."""
    columns: dict[str, T.DataType] = {"id": T.LongType()}
    history = []
    for _ in range(draw(st.integers(1, 8))):
        name = draw(NAMES)
        action = draw(st.sampled_from(["add", "drop", "rename", "type"]))
        if action == "add" and name not in columns:
            columns[name] = draw(TYPES)
        elif action == "drop" and name in columns and name != "id":
            del columns[name]
        elif action == "rename" and name in columns and name != "id":
            new = draw(NAMES)
            if new not in columns:
                columns = {new if k == name else k: v for k, v in columns.items()}
        elif action == "type" and name in columns and name != "id":
            columns[name] = draw(TYPES)
        history.append(schema(*[(n, t, n != "id") for n, t in columns.items()]))
    return history


@given(column_histories())
@settings(max_examples=300, deadline=None)
def test_lenient_never_loses_a_column_and_every_value_fits(history: list[T.StructType]) -> None:
    target = history[0]
    for columns in history[1:]:
        before = target
        try:
            target = evolved_target("lenient", before, columns, TABLE, "ALTER ...")
        except SchemaError:
            # only where no type holds the old and the new values
            assert any(
                f.name in before.fieldNames() and widen(before[f.name].dataType, f.dataType) is None
                for f in columns.fields
            )
            return
        names = target.fieldNames()
        assert names[: len(before.fields)] == before.fieldNames()  # nothing lost or moved
        for field in columns.fields:  # every column of the table fits its target column
            assert widen(target[field.name].dataType, field.dataType) == target[field.name].dataType
        # a replay (or a restart that lost the runner's state) computes the same target
        assert evolved_target("lenient", target, columns, TABLE, "ALTER ...") == target


@st.composite
def moving_histories(draw: st.DrawFn) -> list[tuple[T.StructType, ColumnMoves]]:
    """A table's columns after each of several random changes, with what each renamed and
    dropped (as the source reports them)."""
    columns: dict[str, T.DataType] = {"id": T.LongType()}
    history = [(schema(("id", T.LongType(), False)), ColumnMoves())]
    for _ in range(draw(st.integers(1, 8))):
        name = draw(NAMES)
        action = draw(st.sampled_from(["add", "drop", "rename", "type", "readd"]))
        moves = ColumnMoves()
        if action == "add" and name not in columns:
            columns[name] = draw(TYPES)
        elif action in ("drop", "readd") and name in columns and name != "id":
            del columns[name]
            if action == "readd":
                columns[name] = draw(TYPES)
            moves = ColumnMoves(dropped=(name,))
        elif action == "rename" and name in columns and name != "id":
            new = draw(NAMES)
            if new not in columns:
                columns = {new if k == name else k: v for k, v in columns.items()}
                moves = ColumnMoves(renamed={name: new})
        elif action == "type" and name in columns and name != "id":
            columns[name] = draw(TYPES)
        history.append((schema(*[(n, t, n != "id") for n, t in columns.items()]), moves))
    return history


@given(moving_histories())
@settings(max_examples=300, deadline=None)
def test_evolve_mirrors_the_table_and_every_value_fits(
    history: list[tuple[T.StructType, ColumnMoves]],
) -> None:
    target = history[0][0]
    for columns, moves in history[1:]:
        try:
            target = evolved_target("evolve", target, columns, TABLE, "ALTER ...", moves)
        except SchemaError:
            return  # only where no type holds the old and the new values (as lenient)
        assert target.fieldNames() == columns.fieldNames()
        for field in columns.fields:
            assert widen(target[field.name].dataType, field.dataType) == target[field.name].dataType

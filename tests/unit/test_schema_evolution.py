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
from sparkcdc.pipeline.evolution import evolved_target
from sparkcdc.pipeline.widening import widen

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

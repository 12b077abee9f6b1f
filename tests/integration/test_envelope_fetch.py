"""Issue 62: a batch's envelope rows decoded on the executors (spark/envelope_fetch.py,
formats/envelope_decode.py) give exactly the Arrow that Spark's way gives (``unpack_table``
per table, fetched with arrow_fetch.to_arrow): type by type over every Arrow type the
MySQL/MariaDB and PostgreSQL sources emit (the conformance fixtures' values, NULLs, NaN and
infinities, unicode, the ends of each range), every kind of change, with and without
``_unchanged``. A value that does not decode fails the fetch, naming table and column.
Then through the Delta sink's native writer: a many-table batch written from the envelope
makes no per-table DataFrame and leaves the targets and their change feed as the old path
does.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.core.changes import CHANGE_COLUMNS, UNCHANGED
from sparkcdc.core.table import TableId
from sparkcdc.formats.changelog_arrow import ENVELOPE_FIELDS
from sparkcdc.formats.row_json import RowJsonEncoder
from sparkcdc.sinks.write_plan import EnvelopeRows
from sparkcdc.spark import envelope_fetch
from sparkcdc.spark.arrow_fetch import to_arrow
from sparkcdc.spark.envelope import unpack_table
from sparkcdc.spark.schema import to_spark_schema

UTC = dt.timezone.utc
#: Each Arrow type a source emits, with values (NULL is added to every column).
TYPES: list[tuple[str, pa.DataType, list[Any]]] = [
    ("c_tiny", pa.int8(), [-128, 0, 127]),
    ("c_small", pa.int16(), [-32768, 32767]),
    ("c_int", pa.int32(), [-(2**31), 2**31 - 1]),
    ("c_big", pa.int64(), [-(2**63), 2**63 - 1]),
    ("c_unsigned", pa.decimal128(20, 0), [Decimal(0), Decimal(2**64 - 1)]),
    ("c_exact", pa.decimal128(30, 10), [Decimal("-12345678901234567890.0123456789")]),
    ("c_wide", pa.decimal128(38, 0), [Decimal("9" * 38), Decimal("-" + "9" * 38)]),
    ("c_fraction", pa.decimal128(38, 38), [Decimal("0." + "9" * 38), Decimal("-1e-38")]),
    ("c_money", pa.decimal128(10, 2), [Decimal("12.34"), Decimal("-0.50"), Decimal("0.00")]),
    ("c_single", pa.float32(), [0.1, -3.4e38, float("nan"), float("inf"), -0.0]),
    (
        "c_real",
        pa.float64(),
        [-1.5e300, 0.1, 3.0, float("nan"), float("inf"), float("-inf"), 5e-324, -0.0],
    ),
    ("c_flag", pa.bool_(), [True, False]),
    ("c_text", pa.string(), ["", "naïve ☃ 𝄞", "a  ", 'q"u,o{t}e\\', "line\nbreak\t\x00"]),
    ("c_time", pa.string(), ["-838:59:59.00", "12:34:56.78"]),
    ("c_json", pa.string(), ['{"a": [1, 2.5, null]}', '"text"', "[]"]),
    ("c_enum", pa.string(), ["x", "a,b"]),
    ("c_decimal_text", pa.string(), ["NaN", "1e-30", "123456789012345678901234567890.5"]),
    ("c_blob", pa.binary(), [b"", b"\x00\xff\x10"]),
    ("c_bit", pa.binary(), [b"\x05", b"\x80\x00"]),
    ("c_day", pa.date32(), [dt.date(1000, 1, 1), dt.date(2024, 2, 29), dt.date(9999, 12, 31)]),
    ("c_day_one", pa.date32(), [dt.date(1, 1, 1), dt.date(1582, 10, 10)]),
    (
        "c_moment",
        pa.timestamp("us"),
        [
            dt.datetime(2024, 2, 29, 23, 59, 59, 999999),
            dt.datetime(1, 1, 1),
            dt.datetime(1900, 1, 1),
        ],
    ),
    (
        "c_instant",
        pa.timestamp("us", tz="UTC"),
        [
            dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
            dt.datetime(2038, 1, 19, 3, 14, 7, 500000, tzinfo=dt.timezone(dt.timedelta(hours=2))),
            dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        ],
    ),
    ("c_list", pa.list_(pa.int32()), [[1, None, 3], []]),
    ("c_words", pa.list_(pa.string()), [["a,b", 'c"d', None, "NULL", ""]]),
    ("c_numbers", pa.list_(pa.decimal128(10, 2)), [[Decimal("1.50"), None]]),
    ("c_days", pa.list_(pa.date32()), [[dt.date(2024, 2, 29)]]),
    ("c_stamps", pa.list_(pa.timestamp("us", tz="UTC")), [[dt.datetime(2000, 1, 1, tzinfo=UTC)]]),
    ("c_reals", pa.list_(pa.float64()), [[float("nan"), 1.5, None]]),
]


def _rows(types: Sequence[tuple[str, pa.DataType, list[Any]]]) -> list[tuple[Any, ...]]:
    """Rows that hold every value of every column once (cycling the shorter lists), then a
    row of NULLs but the key."""
    longest = max(len(values) for _, _, values in types)
    rows = [(i, *(values[i % len(values)] for _, _, values in types)) for i in range(longest)]
    return [*rows, (longest, *(None for _ in types))]


def _envelope(
    spark: Any, tables: Mapping[TableId, Sequence[tuple[str, pa.DataType, list[Any]]]], absent: bool
) -> tuple[Any, dict[TableId, Any]]:
    """The envelope rows of ``tables`` (JSON as the sources write it: formats/row_json.py):
    each row inserted, updated (with and without its old row), updated again, deleted;
    with ``absent``, an ``_unchanged`` column (a list on some updates). Also each table's
    Spark schema."""
    columns: dict[str, list[Any]] = {f.name: [] for f in ENVELOPE_FIELDS}
    unchanged: list[Any] = []
    schemas = {}
    version = 0
    for table, types in tables.items():
        names = ["id", *(n for n, _, _ in types)]
        arrow = [pa.int64(), *(t for _, t, _ in types)]
        schemas[table] = to_spark_schema(pa.schema(list(zip(names, arrow, strict=True))))
        encoder = RowJsonEncoder(names, arrow)
        rows = _rows(types)
        changes: list[tuple[str, Any, Any, Any]] = []
        for i, row in enumerate(rows):
            later = rows[(i + 1) % len(rows)]
            moved = (row[0], *later[1:])
            changes += [
                ("insert", None, row, None),
                ("update", row, moved, ["c_text"] if i % 2 else None),
                ("update", None, row, None),  # read again: no old row
            ]
            if i % 3 == 0:
                changes.append(("delete", row, None, None))
        for kind, before, after, lacked in changes:
            version += 1
            columns["database_name"].append(table.database)
            columns["table_name"].append(table.table)
            columns["_change_type"].append(kind)
            columns["_commit_version"].append(version)
            columns["_commit_timestamp"].append(dt.datetime(2024, 1, 1, tzinfo=UTC))
            columns["key"].append(encoder.encode(after or before, [0]))
            columns["before"].append(encoder.encode(before))
            columns["after"].append(encoder.encode(after))
            unchanged.append(lacked)
    arrays = [pa.array(columns[f.name], f.type) for f in ENVELOPE_FIELDS]
    fields = list(ENVELOPE_FIELDS)
    if absent:
        arrays.append(pa.array(unchanged, pa.list_(pa.string())))
        fields.append(pa.field(UNCHANGED, pa.list_(pa.string())))
    frame = spark.createDataFrame(pa.Table.from_arrays(arrays, schema=pa.schema(fields)))
    return frame.repartition(3).persist(), schemas


def _comparable(value: Any) -> Any:
    """``value`` with floats as their ``repr`` (NaN equals NaN, -0.0 is not 0.0)."""
    if isinstance(value, float):
        return repr(value) if not math.isnan(value) else "nan"
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    return value


def _in_commit_order(rows: pa.Table) -> pa.Table:
    """``rows`` ordered by ``_commit_version`` (stable: an update's pre-image stays before
    its post-image). Both ways keep the envelope's order within a partition; which of the
    cached batch's partitions comes first is up to Spark's coalesce, in both."""
    import pyarrow.compute as pc

    return rows.take(pc.sort_indices(rows, [("_commit_version", "ascending")]))


def _spark_way(frame: Any, schemas: dict[TableId, Any]) -> list[pa.Table]:
    carried = [c for c in (*CHANGE_COLUMNS, UNCHANGED) if c in frame.columns]
    frames = [
        unpack_table(frame, t.database, t.table, s).select(
            *[f"`{n}`" for n in s.fieldNames()], *carried
        )
        for t, s in schemas.items()
    ]
    return to_arrow(frames)


@pytest.mark.parametrize("absent", [False, True], ids=["plain", "with _unchanged"])
def test_the_executors_decode_gives_what_sparks_unpacking_gives(spark: Any, absent: bool) -> None:
    half = len(TYPES) // 2
    tables = {
        TableId("db", "all_types"): TYPES,
        TableId("db", "first_half"): TYPES[:half],
        TableId("other", "second_half"): TYPES[half:],
        TableId("db", "not_fetched"): TYPES[:2],
        # Spark's parser substitutes ${...} inside SQL string literals: names held as text
        # there would filter another table's rows (none)
        TableId("db", "price${usd}"): TYPES[:3],
        TableId("s${env:HOME}", "t"): TYPES[:2],
        TableId("db", "odd_columns"): [(f"c${{env:HOME}}{n}", t, v) for n, t, v in TYPES[:2]],
    }
    frame, schemas = _envelope(spark, tables, absent)
    # on, as in a user's own session (sparkcdc's sessions turn it off)
    substitute = spark.conf.get("spark.sql.variable.substitute")
    spark.conf.set("spark.sql.variable.substitute", "true")
    try:
        fetched = {t: s for t, s in schemas.items() if t.table != "not_fetched"}
        expected = _spark_way(frame, fetched)
        got = envelope_fetch.fetch([EnvelopeRows(frame, t, s) for t, s in fetched.items()])
        for table, old, new in zip(fetched, expected, got, strict=True):
            assert new.schema == old.schema, table
            assert new.num_rows == old.num_rows > 0, table
            old, new = _in_commit_order(old), _in_commit_order(new)
            for name in old.column_names:  # column by column: a difference names its type
                want = _comparable(old.column(name).to_pylist())
                assert _comparable(new.column(name).to_pylist()) == want, (table, name)
    finally:
        spark.conf.set("spark.sql.variable.substitute", substitute)
        frame.unpersist()


@pytest.mark.parametrize(
    ("column", "image", "says"),
    [
        ("c_int", '{"id": 1, "c_int": "7"}', "expected an integer"),
        ("c_int", '{"id": 1, "c_int": 2147483648}', "does not fit"),
        ("c_dec", '{"id": 1, "c_dec": "123456.7"}', "does not fit DECIMAL"),
        ("c_dec", '{"id": 1, "c_dec": "NaN"}', "expected a decimal"),
        ("c_day", '{"id": 1, "c_day": "2024-02-30"}', "ISO 8601 date"),
        ("id", "{not json", "not JSON"),
    ],
)
def test_a_value_that_does_not_decode_fails_the_fetch_naming_it(
    spark: Any, column: str, image: str, says: str
) -> None:
    """Spark's ``from_json`` would make such a value (or the row) NULL: the fetch fails."""
    schema = to_spark_schema(
        pa.schema(
            [
                ("id", pa.int64()),
                ("c_int", pa.int32()),
                ("c_dec", pa.decimal128(5, 2)),
                ("c_day", pa.date32()),
            ]
        )
    )
    now = dt.datetime(2024, 1, 1, tzinfo=UTC)
    values = [["db"], ["t"], ["insert"], [1], [now], ['{"id":1}'], [None], [image]]
    arrays = [pa.array(v, f.type) for v, f in zip(values, ENVELOPE_FIELDS, strict=True)]
    frame = spark.createDataFrame(pa.Table.from_arrays(arrays, schema=pa.schema(ENVELOPE_FIELDS)))
    with pytest.raises(Exception, match=says) as failed:
        envelope_fetch.fetch([EnvelopeRows(frame, TableId("db", "t"), schema)])
    assert "db.t" in str(failed.value)
    if column != "id":
        assert repr(column) in str(failed.value)


def test_a_many_table_batch_into_native_targets_makes_no_table_dataframe(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the pipeline's split and the Delta sink's native writer: a batch of several
    tables' envelope rows is written without any table's DataFrame being made, and the
    targets and their change feed equal those the old path (each table's DataFrame)
    writes from the same batches."""
    from sparkcdc.pipeline.batch_split import BatchSplit
    from sparkcdc.pipeline.targets import Target, TargetSource
    from sparkcdc.pipeline.write_plan import write_plan
    from sparkcdc.sinks.base import SinkTable
    from sparkcdc.sinks.delta import native_batch
    from sparkcdc.sinks.delta.config import DeltaSinkConfig
    from sparkcdc.sinks.delta.sink import DeltaSink

    kinds: list[tuple[str, pa.DataType, list[Any]]] = [
        ("c_int", pa.int32(), [-(2**31), 7]),
        ("c_money", pa.decimal128(10, 2), [Decimal("12.34"), Decimal("-0.50")]),
        ("c_moment", pa.timestamp("us"), [dt.datetime(2024, 2, 29, 23, 59, 59, 999999)]),
        ("c_text", pa.string(), ["naïve ☃ 𝄞", ""]),
        ("c_real", pa.float64(), [0.1, float("nan")]),
    ]
    sources = {TableId("db", f"t{i}"): kinds for i in range(3)}
    frame, schemas = _envelope(spark, sources, absent=False)
    tables = [SinkTable(t, schemas[t], ("id",)) for t in sources]
    targets = [Target(t, (TargetSource(t, None, None, t.schema, t.key),)) for t in tables]
    lakes = {}
    try:
        for decode in (True, False):
            monkeypatch.setattr(native_batch, "DECODE_ENVELOPE", decode)
            options = {"path": str(tmp_path / str(decode)), "writer": "native"}
            sink = DeltaSink(DeltaSinkConfig.from_options(options), "p:0")
            sink.open(spark, tables)
            split = BatchSplit(tables, True, tmp_path / "p.yaml").of(frame, 0, None, None)
            plan = write_plan("p:0", 0, '{"batch": 0}', None, split, targets, None)
            sink.write(plan)
            made = split.changes.made  # type: ignore[attr-defined]
            assert made == (frozenset() if decode else frozenset(sources))
            lakes[decode] = sink
        for table in sources:
            new, old = (lakes[d].target_path(table) for d in (True, False))
            for read in (_target_rows, _change_feed):
                assert read(spark, new) == read(spark, old)
    finally:
        frame.unpersist()


def _target_rows(spark: Any, path: str) -> list[Any]:
    return sorted(repr(tuple(r)) for r in spark.read.format("delta").load(path).collect())


def _change_feed(spark: Any, path: str) -> list[Any]:
    feed = spark.read.format("delta").option("readChangeFeed", "true")
    rows = feed.option("startingVersion", 0).load(path).drop("_commit_timestamp")
    return sorted(repr(tuple(r)) for r in rows.collect())

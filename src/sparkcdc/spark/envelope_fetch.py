"""Many tables' changelogs brought to the driver as Arrow straight from a batch's envelope
rows: one narrow Spark plan and one action, whatever the number of tables.

The way through Spark (spark/envelope.py's ``unpack_table`` per table, each packed and
all unioned: spark/arrow_fetch.py) gives the driver one plan per table, a ``from_json`` of
the table's columns, and a union of them all to analyse and optimise: most of a
1000-table batch's time went there (issue 62), not to its rows. Here the plan is the
batch's cached rows filtered to the tables asked for, and one ``mapInArrow`` whose
function (:class:`_Decoding`) decodes each row's images with its table's schema into
Arrow on the executors (formats/envelope_decode.py, exactly what ``unpack_table`` gives,
tested type by type against it) and packs each table's rows as Arrow IPC, which the
driver unpacks as arrow_fetch does. A row that does not decode fails the action, naming
its table and column.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sparkcdc.core.changes import CHANGE_TYPE, change_columns
from sparkcdc.core.identifiers import quoted, sql_string
from sparkcdc.sinks.write_plan import EnvelopeRows
from sparkcdc.spark.arrow_fetch import PACKED, packed, unpacked

#: One table's part of a fetch: its envelope names, its changelog's Arrow schema and how
#: many of its first columns are the table's own.
Spec = tuple[str, str, Any, int]
_NAMES = ("database_name", "table_name")


class _Decoding:
    """The executors' half (``mapInArrow``): each record batch's rows of every table of
    ``specs`` decoded and packed, one packed row per table and batch, tagged with the
    table's index in ``specs``. A class, not a closure: pickled by reference."""

    def __init__(self, specs: Sequence[Spec]) -> None:
        self.specs = list(specs)

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        from sparkcdc.formats.envelope_decode import EnvelopeBatch, EnvelopeDecoder

        decoders = {
            (database, table): (index, EnvelopeDecoder(schema, width, f"{database}.{table}"))
            for index, (database, table, schema, width) in enumerate(self.specs)
        }
        for batch in batches:
            envelope = EnvelopeBatch(batch)
            rows_of: dict[tuple[str, str], list[int]] = {}
            names = zip(*(batch.column(n).to_pylist() for n in _NAMES), strict=True)
            for row, name in enumerate(names):
                rows_of.setdefault(name, []).append(row)
            for name, rows in rows_of.items():
                found = decoders.get(name)
                if found is not None:
                    index, decoder = found
                    yield packed(index, decoder.decode(envelope, rows))


def fetch(tables: Sequence[EnvelopeRows]) -> list[Any]:
    """Each of ``tables``' changelog (rows of one batch's envelope) as an Arrow table: the
    table's columns, ``_change_type``, ``_commit_version``, ``_commit_timestamp`` and
    ``_unchanged`` where the envelope has it, in one Spark action."""
    if not tables:
        return []
    import pyarrow as pa

    frame = tables[0].frame
    if any(t.frame is not frame for t in tables):
        raise ValueError("the tables fetched together must be rows of one envelope frame")
    spark = frame.sparkSession
    zone, large = spark._jconf.getConfs(
        ["spark.sql.session.timeZone", "spark.sql.execution.arrow.useLargeVarTypes"]
    )
    passed = change_columns(frame.columns)
    envelope = {f.name: f for f in frame.schema.fields}
    specs: list[Spec] = []
    for rows in tables:
        schema = changelog_schema(rows.schema, [envelope[c] for c in passed], zone, large == "true")
        specs.append((rows.table.database, rows.table.table, schema, len(rows.schema.fields)))
    chosen = frame.where(_only(tables)).select(
        *[quoted(c) for c in (*_NAMES, *passed, "before", "after")]
    )
    packs = chosen.mapInArrow(_Decoding(specs), PACKED)
    # as many tasks as the cores, as arrow_fetch's (a task's fixed cost)
    cores = max(1, spark.sparkContext.defaultParallelism)
    parts = unpacked(packs.coalesce(cores).toArrow(), len(tables))
    return [
        pa.concat_tables(own) if own else spec[2].empty_table()
        for own, spec in zip(parts, specs, strict=True)
    ]


def changelog_schema(columns: Any, passed: Sequence[Any], zone: str, large: bool) -> Any:
    """The Arrow schema ``unpack_table``'s rows reach Python with (``mapInArrow``'s, with
    the session's time zone and ``useLargeVarTypes``): the table's ``columns`` (a
    StructType) made nullable as ``from_json`` makes them, ``_change_type``, then the
    envelope's ``passed`` fields (StructFields) as they are."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StringType, StructField, StructType

    fields = [StructField(f.name, _nullable(f.dataType), True) for f in columns.fields]
    fields.append(StructField(CHANGE_TYPE, StringType(), False))
    fields += [f for f in passed if f.name != CHANGE_TYPE]
    return to_arrow_schema(StructType(fields), timezone=zone, prefers_large_types=large)


def _nullable(data_type: Any) -> Any:
    """``data_type`` with every nested field and element nullable (Spark's ``asNullable``,
    which ``from_json`` applies to its schema)."""
    from pyspark.sql.types import ArrayType, MapType, StructField, StructType

    if isinstance(data_type, ArrayType):
        return ArrayType(_nullable(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(_nullable(data_type.keyType), _nullable(data_type.valueType), True)
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, _nullable(f.dataType), True) for f in data_type])
    return data_type


def _only(tables: Sequence[EnvelopeRows]) -> Any:
    """A predicate on the envelope's rows: those of every database and table name of
    ``tables``, a superset where names pair across databases (:class:`_Decoding` skips the
    pairs not asked for); one IN per column stays small where a thousand databases each
    have one table. SQL text (no Py4J call per name), except for names holding ``$``:
    Spark's parser substitutes ``${...}`` even inside string literals
    (``spark.sql.variable.substitute``), so a table named ``price${usd}`` would be
    filtered as ``price`` and its rows silently missed; those go by Column."""
    from pyspark.sql import functions as F

    plain = [r.table for r in tables if "$" not in r.table.database + r.table.table]
    odd = [r.table for r in tables if "$" in r.table.database + r.table.table]
    chosen = F.lit(False)
    if plain:
        databases = ", ".join(sql_string(d) for d in sorted({t.database for t in plain}))
        names = ", ".join(sql_string(n) for n in sorted({t.table for t in plain}))
        chosen = F.expr(f"database_name IN ({databases}) AND table_name IN ({names})")
    for table in odd:
        one = (F.col("database_name") == F.lit(table.database)) & (
            F.col("table_name") == F.lit(table.table)
        )
        chosen = chosen | one
    return chosen

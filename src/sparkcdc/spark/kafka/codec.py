"""Spark column expressions that write and read sparkcdc's row JSON at scale.

They are the built-in-function twins of :mod:`sparkcdc.formats.row_json` (encode) and
:mod:`sparkcdc.formats.row_json_decode` (decode): ``to_json``/``from_json``/``struct`` with
options chosen so both sides agree value for value (tests/integration/test_kafka_codec.py
checks it). Spark's ``to_json`` writes decimals as JSON numbers and drops NULL fields by
default, and its timestamp formats stop at milliseconds; hence decimals are cast to their
plain text first and the options below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparkcdc.core.changes import CHANGE_COLUMNS
from sparkcdc.core.identifiers import quoted, sql_string
from sparkcdc.formats.changelog_arrow import METADATA_FIELDS

#: ``to_json`` options giving exactly row_json's layout: NULLs written, microsecond
#: timestamps, instants in UTC with ``Z``.
WRITE_OPTIONS = {
    "ignoreNullFields": "false",
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
    "dateFormat": "yyyy-MM-dd",
    "timeZone": "UTC",
}
#: ``from_json`` options: Spark's lenient ISO 8601 parsing, zone-less instants read as
#: UTC, and the raw text of a record that does not fit the schema kept in ``_corrupt``.
CORRUPT = "_corrupt"
READ_OPTIONS = {"timeZone": "UTC", "mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}

#: Columns of a changelog DataFrame that are not the table's own: CHANGE_COLUMNS and these.
METADATA_COLUMNS = tuple(METADATA_FIELDS)

#: ``_change_type`` <-> Flink row kind (changelog-json ``op``).
ROW_KINDS = {
    "insert": "+I",
    "update_preimage": "-U",
    "update_postimage": "+U",
    "delete": "-D",
}


def data_columns(df: Any) -> list[str]:
    """A changelog DataFrame's own table columns (no change or metadata columns)."""
    skip = {*CHANGE_COLUMNS, *METADATA_COLUMNS}
    return [c for c in df.columns if c not in skip]


def _is_text_in_json(field: Any) -> bool:
    """Whether row JSON holds ``field`` as text: decimals (``to_json`` would write a JSON
    number; their plain text never uses exponents)."""
    from pyspark.sql.types import DecimalType

    return isinstance(field.dataType, DecimalType)


def row_struct(schema: Any, names: Sequence[str] | None = None, source: Any = None) -> Any:
    """``struct`` of the named fields of ``schema`` ready for ``to_json``. ``source`` is a
    struct column to take them from (default: top-level columns)."""
    from pyspark.sql import functions as F

    wanted = list(names) if names is not None else [f.name for f in schema.fields]
    fields = {f.name: f for f in schema.fields}
    if source is None:  # one SQL expression: a function per column is Py4J calls each
        return F.expr(row_struct_sql(schema, wanted))
    return F.struct(*[_json_column(fields[n], source.getField(n)) for n in wanted])


def row_struct_sql(schema: Any, names: Sequence[str] | None = None) -> str:
    """:func:`row_struct` of top-level columns as Spark SQL text."""
    wanted = list(names) if names is not None else [f.name for f in schema.fields]
    fields = {f.name: f for f in schema.fields}
    return f"named_struct({', '.join(_json_item(fields[n]) for n in wanted)})"


def to_row_json_sql(struct: str) -> str:
    """:func:`to_row_json` as Spark SQL text, of a struct given as SQL text."""
    options = ", ".join(f"{sql_string(k)}, {sql_string(v)}" for k, v in WRITE_OPTIONS.items())
    return f"to_json({struct}, map({options}))"


def _json_column(field: Any, column: Any) -> Any:
    """``column`` holding ``field`` as ``to_json`` should see it."""
    value = column.cast("string") if _is_text_in_json(field) else column
    return value.alias(field.name)


def _json_item(field: Any) -> str:
    """A top-level column holding ``field`` as ``named_struct`` arguments."""
    value = quoted(field.name)
    if _is_text_in_json(field):
        value = f"CAST({value} AS STRING)"
    return f"{sql_string(field.name)}, {value}"


def to_row_json(struct: Any) -> Any:
    """Row JSON text of a struct column built by :func:`row_struct`."""
    from pyspark.sql import functions as F

    return F.to_json(struct, WRITE_OPTIONS)


def parse_json(text: Any, schema: Any, corrupt: bool = True) -> Any:
    """``from_json`` of row JSON (or a message containing it) into ``schema``; with
    ``corrupt`` the struct gains a ``_corrupt`` field holding the text of a record that
    is not JSON or does not fit the schema (null otherwise)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    if corrupt:
        schema = StructType([*schema.fields, StructField(CORRUPT, StringType())])
        return F.from_json(text, schema, READ_OPTIONS)
    return F.from_json(text, schema, {"timeZone": "UTC"})


def sub_schema(schema: Any, names: Sequence[str]) -> Any:
    """The fields of ``schema`` named ``names``, in that order."""
    from pyspark.sql.types import StructType

    fields = {f.name: f for f in schema.fields}
    missing = [n for n in names if n not in fields]
    if missing:
        raise ValueError(f"columns {missing} are not in the schema {schema.simpleString()}")
    return StructType([fields[n] for n in names])


def commit_version(partition: Any, offset: Any) -> Any:
    """``partition << 44 | offset``: strictly increasing within a partition, so per key."""
    from pyspark.sql import functions as F

    return F.shiftleft(partition.cast("long"), 44).bitwiseOR(offset.cast("long"))

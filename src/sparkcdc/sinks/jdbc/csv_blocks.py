"""A DataFrame's rows as blocks of CSV text for a target's bulk load (PostgreSQL's
``COPY ... FROM STDIN (FORMAT csv)``, MySQL/MariaDB's ``LOAD DATA LOCAL INFILE``), built in
the executors.

Why: the snapshot's rows are most of an initial load. Streamed to the driver one ``Row`` at
a time (pickled, converted, handed to the driver value by value) they kept the driver's one
Python thread busy: a 2M-row initial load into PostgreSQL took 69 s, against 21.5 s this
way (README, performance). Here each executor task turns its Arrow batches into CSV with
Arrow's C++ writer, and the driver only passes megabyte-sized blocks on to the target
inside the batch's transaction.

The text is what the target's CSV input reads back value for value (:class:`CsvForm`):
every non-NULL value quoted (a quote doubled) and NULL unquoted, so an empty string stays
an empty string; binary values in hex, made in Spark SQL because CSV has no bytes; floats
as their shortest round-trip text; decimals as exact text (exponent form for small values,
which both targets accept).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sparkcdc.core.identifiers import quoted

#: The columns of :func:`csv_blocks`' result: CSV text and how many rows it holds.
BLOCK, ROWS = "block", "rows"


@dataclass(frozen=True)
class CsvForm:
    """How one target family reads CSV back exactly."""

    #: The unquoted text of NULL (a quoted value is never NULL).
    null: str
    #: SQL prefix of a binary value's hex digits (PostgreSQL's ``\\x``; MySQL's load
    #: statement turns plain digits into bytes with ``UNHEX``).
    hex_prefix: str
    #: Instants as naive UTC wall-clock times (MySQL's DATETIME in a UTC session) instead
    #: of UTC with ``Z`` (PostgreSQL's ``timestamptz``).
    naive_instants: bool
    #: Booleans as 1/0 (MySQL's BOOLEAN is TINYINT) instead of true/false.
    numeric_booleans: bool
    #: 32-bit floats as the exact double of their value: MySQL parses the text as a
    #: double and refuses the shortest float text of the largest floats (3.4028235e38
    #: is above FLT_MAX), PostgreSQL's ``real`` reads the short form.
    double_floats: bool


POSTGRES_CSV = CsvForm(
    null="", hex_prefix="\\\\x", naive_instants=False, numeric_booleans=False, double_floats=False
)
MYSQL_CSV = CsvForm(
    null="NULL", hex_prefix="", naive_instants=True, numeric_booleans=True, double_floats=True
)


def csv_blocks(rows: Any, fields: Sequence[Any], form: CsvForm) -> Any:
    """``rows``' ``fields`` (Spark ``StructField``s, in target column order) as a DataFrame
    of CSV blocks in ``form``, one per Arrow batch of a task, each with its row count."""
    # positional names: CSV has no header, and PySpark's mapInArrow looks columns up by
    # a name it does not quote (a backtick in one fails)
    items = [f"{_csv_value(f, form)} AS c{i}" for i, f in enumerate(fields)]
    write = functools.partial(_write_csv, form=form)
    return rows.selectExpr(*items).mapInArrow(write, f"{BLOCK} binary, {ROWS} long")


def _csv_value(field: Any, form: CsvForm) -> str:
    """The SQL expression giving ``field`` as the CSV writer should see it."""
    from pyspark.sql.types import BinaryType

    column = quoted(field.name)
    if not isinstance(field.dataType, BinaryType):
        return column
    return f"concat('{form.hex_prefix}', hex({column}))" if form.hex_prefix else f"hex({column})"


def _write_csv(batches: Iterator[Any], form: CsvForm) -> Iterator[Any]:
    """In the executor: each Arrow batch as one CSV block."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    options = pa_csv.WriteOptions(
        include_header=False, quoting_style="all_valid", null_string=form.null
    )
    for batch in batches:
        if batch.num_rows == 0:
            continue
        columns = [_for_csv(c, form) for c in batch.columns]
        out = pa.BufferOutputStream()
        pa_csv.write_csv(pa.RecordBatch.from_arrays(columns, batch.schema.names), out, options)
        yield pa.RecordBatch.from_arrays(
            [pa.array([out.getvalue().to_pybytes()], pa.binary()), pa.array([batch.num_rows])],
            [BLOCK, ROWS],
        )


def _for_csv(column: Any, form: CsvForm) -> Any:
    """A column as ``form`` wants it written. An instant column (Spark labels it with the
    session's zone; the values, microseconds since the epoch, stay) is labelled UTC, so the
    writer prints it in UTC with ``Z``, or made naive for a naive UTC wall-clock time."""
    import pyarrow as pa

    kind = column.type
    if pa.types.is_timestamp(kind) and kind.tz is not None:
        return column.cast(pa.timestamp(kind.unit, None if form.naive_instants else "UTC"))
    if form.numeric_booleans and pa.types.is_boolean(kind):
        return column.cast(pa.int8())
    if form.double_floats and pa.types.is_float32(kind):
        return column.cast(pa.float64())
    return column

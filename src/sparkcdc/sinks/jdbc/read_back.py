"""A JDBC target read back for ``verify`` (``JdbcSink.snapshot``): the offsets row and the
rows, inside one consistent read-only transaction the sink opened (PostgreSQL REPEATABLE
READ, InnoDB CONSISTENT SNAPSHOT), so the rows are exactly those of the recorded source
offset while the pipeline keeps writing."""

from __future__ import annotations

from typing import Any

from sparkcdc.sinks.jdbc.dialects import SinkError, Target, TargetDialect

#: Rows fetched per round trip and per Arrow batch when reading a target back.
READ_BATCH_ROWS = 10_000


def read_offset(cur: Any, offsets_sql: str, offsets_name: str, pipeline: str | None) -> str | None:
    """The source offset of ``pipeline``'s last batch (None: none applied); without a
    pipeline, the only one the offsets table holds."""
    if pipeline is None:
        cur.execute(f"SELECT pipeline FROM {offsets_sql}", ())
        names = sorted(str(r[0]) for r in cur.fetchall())
        if len(names) > 1:
            raise SinkError(
                f"jdbc sink: offsets table {offsets_name} holds several pipelines "
                f"({', '.join(names)}); create the sink with pipeline=<name>"
            )
        if not names:
            return None
        pipeline = names[0]
    cur.execute(
        f"SELECT batch_id, source_offset FROM {offsets_sql} WHERE pipeline = %s", (pipeline,)
    )
    row = cur.fetchone()
    if row is None or int(row[0]) < 0:
        return None
    return None if row[1] is None else str(row[1])


def read_rows(dialect: TargetDialect, conn: Any, target: Target, schema: Any) -> Any:
    """The target's rows with ``schema``'s columns, as one Arrow table, streamed from the
    server in batches of :data:`READ_BATCH_ROWS`."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_type

    fields = list(schema.fields)
    arrow_schema = pa.schema(
        [pa.field(f.name, to_arrow_type(f.dataType, timezone="UTC")) for f in fields]
    )
    converters = [dialect.from_target(f) for f in fields]
    select = ", ".join(dialect.select_for_read(f) for f in fields)
    sql = f"SELECT {select} FROM {dialect.table_sql(target.qualifier, target.name)}"
    batches = []
    with _streaming_cursor(dialect, conn) as cur:
        cur.execute(sql, ())
        while chunk := cur.fetchmany(READ_BATCH_ROWS):
            columns = list(zip(*chunk, strict=True))
            arrays = [
                pa.array(
                    list(values) if c is None else [c(v) for v in values],
                    type=arrow_schema.field(i).type,
                )
                for i, (c, values) in enumerate(zip(converters, columns, strict=True))
            ]
            batches.append(pa.RecordBatch.from_arrays(arrays, schema=arrow_schema))
    return pa.Table.from_batches(batches, schema=arrow_schema)


def _streaming_cursor(dialect: TargetDialect, conn: Any) -> Any:
    """A cursor that fetches rows from the server as they are consumed."""
    if dialect.family == "postgresql":
        return conn.cursor(name="sparkcdc_snapshot")  # server-side, inside the transaction
    import pymysql.cursors

    return conn.cursor(pymysql.cursors.SSCursor)

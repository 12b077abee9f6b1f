"""Several captured tables in one stream: turning one table's envelope rows back into typed
changelog columns (the same shape a single-table stream has)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparkcdc.connectors.registry import connector
from sparkcdc.core.changes import CHANGE_COLUMNS, CHANGE_TYPE
from sparkcdc.core.table import TableId

ENVELOPE_COLUMNS = (
    "database_name",
    "table_name",
    *CHANGE_COLUMNS,
    "key",
    "before",
    "after",
)


def table_schema(
    spark: Any, options: Mapping[str, str], database: str, table: str, source: str = "mysql"
) -> Any:
    """The typed columns of one captured table (a StructType), asked from the source.

    ``database`` is the table's namespace (the envelope's ``database_name``: a MySQL
    database, a PostgreSQL schema); ``source`` the connector (``mysql``, ``postgres``)."""
    from pyspark.sql.types import StructType

    found = connector(source)
    single = found.one_table_of(options, TableId(database, table)) | {"metadata.list": ""}
    schema = spark.read.format(found.format).options(**single).load().schema
    return StructType([f for f in schema.fields if f.name not in CHANGE_COLUMNS])


def unpack_table(envelope: Any, database: str, table: str, schema: Any) -> Any:
    """One table's rows of an envelope DataFrame as a typed changelog DataFrame.

    The result has the table's columns, then ``_change_type`` (``insert``,
    ``update_preimage``, ``update_postimage``, ``delete``), ``_commit_version``,
    ``_commit_timestamp`` and any metadata columns the envelope carries. Works on batch and
    streaming DataFrames.
    """
    from pyspark.sql import functions as F

    rows = envelope.where((F.col("database_name") == database) & (F.col("table_name") == table))
    before = F.from_json("before", schema)
    after = F.from_json("after", schema)

    def image(kind: str, value: Any) -> Any:
        return F.struct(F.lit(kind).alias("kind"), value.alias("image"))

    images = (
        F.when(F.col(CHANGE_TYPE) == "insert", F.array(image("insert", after)))
        .when(  # a re-read row on demand: an upsert
            (F.col(CHANGE_TYPE) == "update") & F.col("before").isNull(),
            F.array(image("update_postimage", after)),
        )
        .when(
            F.col(CHANGE_TYPE) == "update",
            F.array(image("update_preimage", before), image("update_postimage", after)),
        )
        .otherwise(F.array(image("delete", before)))
    )
    metadata = [c for c in envelope.columns if c not in ENVELOPE_COLUMNS]
    exploded = rows.select(F.explode(images).alias("_c"), *CHANGE_COLUMNS[1:], *metadata)
    return exploded.select(
        "_c.image.*",
        F.col("_c.kind").alias(CHANGE_TYPE),
        *CHANGE_COLUMNS[1:],
        *metadata,
    )

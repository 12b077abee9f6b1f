"""Creating a Delta sink's target tables from the source schema, and checking existing ones
before the first batch: their columns and types, and the names Delta cannot write.

Targets are created by Spark, whichever writer commits their rows later: folder targets
with Spark's Delta API, catalog targets with ``CREATE TABLE`` (sinks/delta/catalog.py);
an upsert target with a change data feed and deletion vectors (as configured), column
mapping where a column's name is one Delta cannot store otherwise, the user's
``table.properties.*``, and the pipeline's mark (:data:`APPENDS_FOR`) when the pipeline is
known.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparkcdc.core.changes import CHANGE_TYPE, COMMIT_TIMESTAMP, COMMIT_VERSION
from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.identifiers import quoted
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.delta import catalog
from sparkcdc.sinks.delta.config import DeltaSinkConfig

#: The table property naming the pipeline whose rows alone the table holds (appends safe).
APPENDS_FOR = "sparkcdc.appends-for"
#: Characters Delta refuses in column names unless the table maps columns by name.
_UNSTORABLE = set(" ,;{}()\n\t=")
#: Table properties of a table whose columns are mapped by name (Delta's column mapping).
_COLUMN_MAPPING = {
    "delta.columnMapping.mode": "name",
    "delta.minReaderVersion": "2",
    "delta.minWriterVersion": "5",
}


def folder_name(name: str) -> str:
    """A source name as one folder name: path separators and backticks (which Delta's own
    path identifiers cannot take) become ``_``, and ``.`` / ``..`` cannot climb out of
    ``path``. Two names that become equal are refused as one shared target."""
    safe = name.replace("/", "_").replace("\\", "_").replace("`", "_")
    return f"_{safe}" if safe in (".", "..", "") else safe


def target_schema(table: SinkTable, upsert: bool) -> Any:
    """The target's Spark schema: the table's columns, and a history target's change
    columns after them."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

    fields = list(table.schema.fields)
    if not upsert:
        fields += [
            StructField(CHANGE_TYPE, StringType(), False),
            StructField(COMMIT_VERSION, LongType(), False),
            StructField(COMMIT_TIMESTAMP, TimestampType(), True),
        ]
    return StructType(fields)


def table_properties(
    schema: Any, config: DeltaSinkConfig, pipeline_id: str | None
) -> dict[str, str]:
    """The properties a new target is created with: the sink's own, then the user's
    ``table.properties.*`` (which win), then the pipeline's mark."""
    upsert = config.changelog_mode == "upsert"
    properties: dict[str, str] = {}
    # an append target's own columns are the change feed's reserved names (and an
    # append-only history needs no feed of its own)
    if config.change_data_feed and upsert:
        properties["delta.enableChangeDataFeed"] = "true"
    # a MERGE then marks the rows it replaces instead of copying their files' other
    # rows (benchmarks/delta_merge.py); append targets never replace rows
    if config.deletion_vectors and upsert:
        properties["delta.enableDeletionVectors"] = "true"
    if any(_UNSTORABLE & set(f.name) for f in schema.fields):
        properties.update(_COLUMN_MAPPING)
    properties.update(config.table_properties)  # the user's own win
    if pipeline_id is not None:
        # new, so this pipeline's rows alone: its snapshot rows (a history target's
        # every row) are appended without a Delta transaction id
        properties[APPENDS_FOR] = pipeline_id
    return properties


def create(
    spark: Any,
    path: str,
    table: SinkTable,
    config: DeltaSinkConfig,
    pipeline_id: str | None,
) -> None:
    """Creates the target at ``path`` (not ``createIfNotExists``: a table another process
    made meanwhile is not ours)."""
    from delta.tables import DeltaTable

    schema = target_schema(table, config.changelog_mode == "upsert")
    builder = DeltaTable.create(spark).location(path).addColumns(commented(schema, table))
    if table.comments.table is not None:
        builder = builder.comment(table.comments.table)
    if table.partition_keys:
        builder = builder.partitionedBy(*table.partition_keys)
    clustering = cluster_columns(table, config)
    if clustering:
        builder = builder.clusterBy(*clustering)
    for key, value in table_properties(schema, config, pipeline_id).items():
        builder = builder.property(key, value)
    builder.execute()


def create_in_catalog(
    spark: Any,
    parts: tuple[str, str, str],
    table: SinkTable,
    config: DeltaSinkConfig,
    pipeline_id: str | None,
    external: str | None,
) -> None:
    """Creates the target as the catalog table ``parts``: managed, or at ``external``
    (sinks/delta/catalog.py)."""
    schema = target_schema(table, config.changelog_mode == "upsert")
    properties = table_properties(schema, config, pipeline_id)
    clustering = cluster_columns(table, config)
    catalog.create(
        spark,
        parts,
        commented(schema, table),
        table.partition_keys,
        properties,
        external,
        clustering,
        table.comments.table,
    )


def commented(schema: Any, table: SinkTable) -> Any:
    """``schema`` with ``table``'s column comments (``include-comments.enabled``) as Spark
    keeps them: the field's ``comment`` metadata, which Delta stores with the column."""
    if not table.comments.columns:
        return schema
    from pyspark.sql.types import StructField, StructType

    def field(f: Any) -> Any:
        text = table.comments.column(f.name)
        if text is None:
            return f
        return StructField(f.name, f.dataType, f.nullable, {**f.metadata, "comment": text})

    return StructType([field(f) for f in schema.fields])


def cluster_columns(table: SinkTable, config: DeltaSinkConfig) -> tuple[str, ...]:
    """The columns ``cluster.key`` clusters a new target of ``table`` by; refused with a
    transform's ``partition-keys`` (Delta takes one layout) or a column it lacks."""
    columns = config.cluster_columns(table.source.key)
    if not columns:
        return ()
    if table.partition_keys:
        raise SparkCdcError(
            f"the Delta sink's option 'cluster.key' clusters the target of {table.source}, "
            f"which a transform's partition-keys ({', '.join(table.partition_keys)}) "
            "partitions: Delta takes one of the two; remove one"
        )
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise SparkCdcError(
            f"the Delta sink's option 'cluster.key' clusters the target of {table.source} "
            f"by {', '.join(missing)}, which it does not have (columns: "
            f"{', '.join(table.columns)})"
        )
    return columns


def check_backticks(
    spark: Any, table: SinkTable, existing: str | None, config: DeltaSinkConfig
) -> None:
    """Delta's MERGE into a table with a change data feed cannot name a column that has
    a backtick (it fails with INVALID_ATTRIBUTE_NAME_SYNTAX); say so before the first
    batch, with the way out."""
    odd = [f.name for f in table.schema.fields if "`" in f.name]
    if not odd or config.changelog_mode != "upsert":
        return
    if existing is None:
        feed = config.change_data_feed
    else:
        detail = spark.sql(f"DESCRIBE DETAIL delta.{quoted(existing)}").first()
        feed = (detail["properties"] or {}).get("delta.enableChangeDataFeed") == "true"
    if feed:
        raise SparkCdcError(
            f"{table.source} has column(s) {', '.join(odd)} with a backtick, which Delta's "
            "MERGE cannot write into a table with a change data feed: set "
            "'change-data-feed: false' in the sink block (for a new target), or rename the "
            "column"
        )


def check_existing(spark: Any, table: SinkTable, path: str, schema: Any) -> None:
    """The existing target at ``path`` has every column of ``schema``, with its type."""
    existing = {f.name: f.dataType for f in spark.read.format("delta").load(path).schema}
    check_columns(table, path, existing, schema)


def check_columns(table: SinkTable, path: str, existing: Mapping[str, Any], schema: Any) -> None:
    """The target at ``path``, whose columns and their Spark types are ``existing``, has
    every column of ``schema``, with its type."""
    missing = [f.name for f in schema.fields if f.name not in existing]
    wrong = [
        f"{f.name} ({existing[f.name].simpleString()} instead of {f.dataType.simpleString()})"
        for f in schema.fields
        if f.name in existing and existing[f.name] != f.dataType
    ]
    if missing or wrong:
        problem = f"lacks columns {', '.join(missing)}" if missing else ""
        if wrong:
            problem += ("; " if problem else "") + f"has other types: {', '.join(wrong)}"
        raise SparkCdcError(
            f"the Delta table at {path} for {table.source} {problem}. Point 'table-name' "
            "somewhere else or drop that table so the sink creates it from the source schema"
        )

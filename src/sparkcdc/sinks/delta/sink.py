"""Delta Lake sink: each captured table into its own Delta table, exactly once.

``upsert`` mode (default) makes the target mirror the source: per batch and table the
changes are reduced to the last change per key, then applied with one MERGE. ``append``
mode keeps every change with its change type, version and timestamp (a queryable history).

Exactly once: every commit carries Delta's transaction identifier (``txnAppId`` = the
pipeline's checkpoint identity, ``txnVersion`` = the batch id). Delta skips a write whose
version is not above the last one recorded for that app id in that table, so a batch
Spark replays after a crash changes nothing, table by table. Each commit also stores the
batch's source offset as its ``userMetadata``, which is how ``verify`` knows which source
position a table version corresponds to.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sparkcdc.core.changes import CHANGE_COLUMNS, CHANGE_TYPE, COMMIT_TIMESTAMP, COMMIT_VERSION
from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import MicroBatch, Sink, SinkTable, TargetSnapshot, target_names
from sparkcdc.sinks.delta.config import DeltaSinkConfig
from sparkcdc.sinks.reduce import DELETED, last_change_per_key

_TXN_APP = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION = "spark.databricks.delta.write.txnVersion"
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"


class DeltaSink(Sink):
    def __init__(self, config: DeltaSinkConfig) -> None:
        self.config = config
        self.tables: dict[TableId, SinkTable] = {}
        self.paths: Mapping[TableId, str] = {}

    @property
    def upsert(self) -> bool:
        return self.config.changelog_mode == "upsert"

    def target_path(self, table: TableId) -> str:
        return self.paths[table]

    def target_of(self, table: SinkTable) -> str:
        (name,) = target_names([table], self.config.table_name).values()
        return str((self.config.path / name).resolve())

    def open(self, spark: Any, tables: Sequence[SinkTable]) -> None:
        from delta.tables import DeltaTable

        self.tables = {t.source: t for t in tables}
        names = target_names(tables, self.config.table_name)
        self.paths = {t: str(self.config.path / name) for t, name in names.items()}
        for table in tables:
            path = self.paths[table.source]
            schema = self._target_schema(table)
            if DeltaTable.isDeltaTable(spark, path):
                self._check_existing(spark, table, path, schema)
                continue
            builder = DeltaTable.createIfNotExists(spark).location(path).addColumns(schema)
            # an append target's own columns are the change feed's reserved names (and an
            # append-only history needs no feed of its own)
            if self.config.change_data_feed and self.upsert:
                builder = builder.property("delta.enableChangeDataFeed", "true")
            builder.execute()

    def _target_schema(self, table: SinkTable) -> Any:
        from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

        fields = list(table.schema.fields)
        if not self.upsert:
            fields += [
                StructField(CHANGE_TYPE, StringType(), False),
                StructField(COMMIT_VERSION, LongType(), False),
                StructField(COMMIT_TIMESTAMP, TimestampType(), True),
            ]
        return StructType(fields)

    def _check_existing(self, spark: Any, table: SinkTable, path: str, schema: Any) -> None:
        existing = {f.name: f.dataType for f in spark.read.format("delta").load(path).schema}
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

    def write(self, batch: MicroBatch) -> None:
        spark = None
        for table_id, changes in batch.changes.items():
            if not batch.has_changes(table_id):
                continue
            spark = changes.sparkSession
            table = self.tables[table_id]
            with _commit_options(spark, batch):
                if self.upsert:
                    self._merge(spark, table, changes)
                else:
                    self._append(table, changes)

    def _merge(self, spark: Any, table: SinkTable, changes: Any) -> None:
        from delta.tables import DeltaTable

        last = last_change_per_key(changes, table.key, table.columns)
        matches = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in table.key)
        values: dict[str, Any] = {f"`{c}`": f"s.`{c}`" for c in table.columns}
        target = DeltaTable.forPath(spark, self.target_path(table.source))
        (
            target.alias("t")
            .merge(last.alias("s"), matches)
            .whenMatchedDelete(condition=f"s.{DELETED}")
            .whenMatchedUpdate(condition=f"NOT s.{DELETED}", set=values)
            .whenNotMatchedInsert(condition=f"NOT s.{DELETED}", values=values)
            .execute()
        )

    def _append(self, table: SinkTable, changes: Any) -> None:
        rows = changes.select(*[f"`{c}`" for c in table.columns], *CHANGE_COLUMNS)
        rows.write.format("delta").mode("append").save(self.target_path(table.source))

    def snapshot(self, spark: Any, table: SinkTable) -> TargetSnapshot:
        if not self.upsert:
            raise SparkCdcError(
                "verify compares tables that mirror the source: the delta sink is in "
                "'changelog-mode: append' (a history of changes, not a copy)"
            )
        path = self.target_path(table.source)
        history = (
            spark.sql(f"DESCRIBE HISTORY delta.`{path}`")
            .select("version", "userMetadata")
            .orderBy("version", ascending=False)
            .limit(1000)
            .collect()
        )
        # the table as it is now (a write by anyone else after our last commit is a
        # difference verify must see), and the offset of the pipeline's last commit
        latest = history[0][0]
        ours = [json.loads(meta) for _, meta in history if meta and meta.startswith("{")]
        offset = ours[0].get("source_offset") if ours else None
        rows = spark.read.format("delta").option("versionAsOf", latest).load(path)
        return TargetSnapshot(rows.select(*[f"`{c}`" for c in table.columns]), offset)


@contextmanager
def _commit_options(spark: Any, batch: MicroBatch) -> Iterator[None]:
    """Session settings that make the next Delta commit idempotent and record the offset.

    Delta reads them for MERGE as well as for writes; they are unset right after, so no
    other commit picks them up by accident.
    """
    metadata = json.dumps(
        {
            "pipeline": batch.pipeline,
            "batch_id": batch.batch_id,
            "source_offset": batch.source_offset,
        }
    )
    spark.conf.set(_TXN_APP, batch.pipeline)
    spark.conf.set(_TXN_VERSION, str(batch.batch_id))
    spark.conf.set(_USER_METADATA, metadata)
    try:
        yield
    finally:
        for key in (_TXN_APP, _TXN_VERSION, _USER_METADATA):
            spark.conf.unset(key)

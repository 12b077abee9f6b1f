"""Delta Lake sink: each captured table into its own Delta table, exactly once.

``upsert`` mode (default) makes the target mirror the source: per batch and table the
changes are reduced to the last change per key, then applied with one MERGE. The batch's
snapshot rows (keys the pipeline never emitted) are appended instead, when the target holds
this pipeline's rows only: a MERGE joins with the whole target, so merging a snapshot batch
by batch costs the table's size squared. Such an append is made idempotent by the sink
itself (:mod:`sparkcdc.sinks.delta.appended`), not by Delta's transaction ids. The MERGE
is bounded by the batch's keys (:mod:`sparkcdc.sinks.delta.pruning`), so Delta skips the
files they cannot be in.
``append`` mode keeps every change with its change type, version and timestamp (a
queryable history).

Exactly once: every MERGE, DELETE and history append carries Delta's transaction
identifier (``txnAppId`` = the pipeline's checkpoint identity, ``txnVersion`` = the batch
id). Delta skips a write whose version is not above the last one recorded for that app id
in that table, so a batch Spark replays after a crash changes nothing, table by table. A
snapshot append is skipped when the pipeline's own newest commit there that carries
snapshot rows is of this batch or a later one. Each commit also stores the batch's source
offset as its ``userMetadata``, which is how ``verify`` knows which source position a
table version corresponds to.

``writer: native`` commits the same actions through delta-rs instead of Spark's Delta
writer (sinks/delta/native.py): the same reduction, appends and merges from the rows as
Arrow, the same transaction ids (checked by the sink before each write, as delta-rs does
not) and ``userMetadata``. Targets are still created, evolved and dropped with Spark; a
target that sparkcdc's own schema evolution gives a feature delta-rs cannot write (type
widening) is written with Spark's writer from then on.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sparkcdc.core.changes import CHANGE_COLUMNS, CHANGE_TYPE, COMMIT_TIMESTAMP, COMMIT_VERSION
from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.folders import ensure_writable, is_uri
from sparkcdc.core.identifiers import quoted, sql_string
from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import Sink, SinkTable, TargetSnapshot, target_names
from sparkcdc.sinks.capabilities import SinkCapabilities
from sparkcdc.sinks.delta import catalog, native
from sparkcdc.sinks.delta.appended import (
    HISTORY_ROWS,
    SNAPSHOT_ROWS,
    appended_through,
    snapshot_appended,
)
from sparkcdc.sinks.delta.columns import evolve_columns
from sparkcdc.sinks.delta.config import DeltaSinkConfig, location_join
from sparkcdc.sinks.delta.history import read_back
from sparkcdc.sinks.delta.pruning import key_bounds
from sparkcdc.sinks.reduce import DELETED, REREAD, last_change_per_key
from sparkcdc.sinks.write_plan import TargetWrite, WritePlan
from sparkcdc.snapshot.schema_change import ColumnMoves
from sparkcdc.spark.concurrent_writes import SessionClones, write_concurrently

log = logging.getLogger(__name__)

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


#: The table property naming the pipeline whose rows alone the table holds (appends safe).
APPENDS_FOR = "sparkcdc.appends-for"
#: The transaction app id suffix of a batch's truncate.
TRUNCATE_APP = ":truncate"
_TXN_APP = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION = "spark.databricks.delta.write.txnVersion"
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
_MERGE_DELETION_VECTORS = "spark.databricks.delta.merge.deletionVectors.persistent"
#: A target smaller than this is rewritten by a MERGE (copy-on-write) even where it has
#: deletion vectors: writing them costs a MERGE ~1.2 s more (four more SQL executions)
#: whatever the table's size, while rewriting every file of a table this small costs less
#: (benchmarks/delta_merge.py, docs/pipelines.md).
REWRITE_BELOW_BYTES = 4 * 1024 * 1024


class DeltaSink(Sink):
    def __init__(self, config: DeltaSinkConfig, pipeline_id: str | None = None) -> None:
        self.config = config
        #: The pipeline's identity when known at creation (``name:query id``): targets it
        #: creates are marked as its own at once (``APPENDS_FOR``), not at their first batch.
        self.pipeline_id = pipeline_id
        self._sessions = SessionClones()  #: the sessions of concurrent writes
        self.tables: dict[TableId, SinkTable] = {}
        #: Each target's Delta table: its folder, or where its catalog keeps it (a catalog
        #: table's once it exists: :meth:`_locate`).
        self.paths: dict[TableId, str] = {}
        #: Catalog targets (no ``path``): each target's name's parts (catalog, schema, table).
        self.names: dict[TableId, tuple[str, str, str]] = {}
        self._appends: dict[TableId, bool] = {}
        #: Per target, the last batch whose snapshot rows are known to be in it (-1: none),
        #: where this process created it or found out (sinks/delta/appended.py).
        self._appended: dict[TableId, int] = {}
        #: Targets of ``writer: native`` that Spark's writer writes all the same: sparkcdc's
        #: own schema evolution gave them a feature delta-rs cannot write.
        self._spark_written: set[TableId] = set()

    @property
    def capabilities(self) -> SinkCapabilities:
        from sparkcdc.sinks.delta import capabilities

        return capabilities(self.config)

    @property
    def upsert(self) -> bool:
        return self.config.changelog_mode == "upsert"

    def target_path(self, table: TableId) -> str:
        return self.paths[table]

    def target_of(self, table: SinkTable) -> str:
        if self.config.path is None:
            return catalog.sql_name(_catalog_names([table], self.config.table_name)[table.source])
        (name,) = target_names([table], self.config.table_name, folder_name).values()
        return location_join(self.config.path, name)

    def open(self, spark: Any, tables: Sequence[SinkTable]) -> None:
        if self.config.local_folder is not None:
            ensure_writable(self.config.local_folder, "sink.path")
        if self.config.writer == "native":
            native.require()

        self.tables = {t.source: t for t in tables}
        if self.config.path is None:
            self.names = _catalog_names(tables, self.config.table_name)
            self.paths = {}
            for parts in self.names.values():
                problem = catalog.forgets_on_restart(spark, parts, self.config.location is not None)
                if problem:
                    raise SparkCdcError(problem)
        else:
            names = target_names(tables, self.config.table_name, folder_name)
            self.paths = {
                t: _qualified(spark, location_join(self.config.path, name))
                for t, name in names.items()
            }
        # up to concurrent-writes at once: checking or creating one costs ~0.5 s
        write_concurrently(
            spark, list(tables), self.config.concurrent_writes, self._open_one, self._sessions
        )

    def _open_one(self, spark: Any, table: SinkTable) -> None:
        """Checks the table's existing target, or creates it."""
        from delta.tables import DeltaTable

        path = self._locate(spark, table.source)
        schema = self._target_schema(table)
        exists = path is not None and DeltaTable.isDeltaTable(spark, path)
        if exists:
            assert path is not None
            self._check_existing(spark, table, path, schema)
        self._check_backticks(spark, table, path if exists else None)
        if exists:
            self._check_native(table.source)
            return
        properties: dict[str, str] = {}
        # an append target's own columns are the change feed's reserved names (and an
        # append-only history needs no feed of its own)
        if self.config.change_data_feed and self.upsert:
            properties["delta.enableChangeDataFeed"] = "true"
        # a MERGE then marks the rows it replaces instead of copying their files' other
        # rows (benchmarks/delta_merge.py); append targets never replace rows
        if self.config.deletion_vectors and self.upsert:
            properties["delta.enableDeletionVectors"] = "true"
        if any(_UNSTORABLE & set(f.name) for f in schema.fields):
            properties.update(_COLUMN_MAPPING)
        properties.update(self.config.table_properties)  # the user's own win
        if self.pipeline_id is not None:
            # new, so this pipeline's rows alone: its snapshot rows (a history target's
            # every row) are appended without a Delta transaction id
            properties[APPENDS_FOR] = self.pipeline_id
        parts = self.names.get(table.source)
        if parts is not None:
            external = self._external(spark, parts)
            catalog.create(spark, parts, schema, table.partition_keys, properties, external)
            self._locate(spark, table.source)
        else:
            assert path is not None
            # create, not createIfNotExists: a table another process made meanwhile is
            # not ours
            builder = DeltaTable.create(spark).location(path).addColumns(schema)
            if table.partition_keys:
                builder = builder.partitionedBy(*table.partition_keys)
            for key, value in properties.items():
                builder = builder.property(key, value)
            builder.execute()
        if self.pipeline_id is not None:
            self._appends[table.source] = True
            self._appended[table.source] = -1
        self._check_native(table.source)

    def _locate(self, spark: Any, target: TableId) -> str | None:
        """Where the target's Delta table is, None when a catalog target does not exist yet.
        The one place a catalog name becomes a location (sinks/delta/catalog.py): every
        write, check and ``verify`` after it goes by that location, as for a folder. An
        external target the catalog forgot (an in-memory catalog after a restart) is
        registered again from its folder."""
        parts = self.names.get(target)
        if parts is None:
            return self.paths[target]
        location = catalog.location_of(spark, parts)
        if location is None and self.config.location is not None:
            from delta.tables import DeltaTable

            folder = self._external(spark, parts)
            if folder is not None and DeltaTable.isDeltaTable(spark, folder):
                catalog.register(spark, parts, folder)
                location = catalog.location_of(spark, parts)
        if location is not None:
            self.paths[target] = location
        return location

    def _external(self, spark: Any, parts: tuple[str, str, str]) -> str | None:
        """The folder of an external catalog target (``location``), None for managed."""
        if self.config.location is None:
            return None
        folder = location_join(
            self.config.location, f"{folder_name(parts[1])}/{folder_name(parts[2])}"
        )
        return _qualified(spark, folder)

    def _native(self, target: TableId) -> str | None:
        """The target's local folder when delta-rs writes it, else None (Spark's writer)."""
        if self.config.writer != "native" or target in self._spark_written:
            return None
        return native.local_path(self.paths[target])

    def _check_native(self, target: TableId) -> None:
        """Whether delta-rs can write the target (its table features): a feature sparkcdc's
        own schema evolution adds moves the target to Spark's writer, loudly; any other
        it cannot write is refused, naming it and the way out."""
        location = self._native(target)
        if location is None:
            return
        cannot = native.unsupported(native.table_features(location))
        if not cannot:
            return
        if set(cannot) <= native.SPARK_ONLY_AFTER_EVOLUTION:
            log.warning(
                "delta sink: %s has table feature(s) %s (a widened column type), which the "
                "native writer cannot write: Spark's Delta writer writes it from now on",
                location,
                ", ".join(cannot),
            )
            self._spark_written.add(target)
            return
        raise native.refusal(location, target, cannot)

    def evolve(
        self,
        spark: Any,
        table: SinkTable,
        previous: SinkTable | None = None,
        moves: ColumnMoves | None = None,
    ) -> None:
        """The target takes the table's new columns (sinks/delta/columns.py); compared
        with the table as it is, so a replay applies nothing twice."""
        from delta.tables import DeltaTable

        del previous
        if self.config.path is None:
            self.names.setdefault(
                table.source, _catalog_names([table], self.config.table_name)[table.source]
            )
            path = self.paths.get(table.source) or self._locate(spark, table.source)
        else:
            path = self.paths.get(table.source) or self.target_of(table)
        if table.source in self.tables:
            self.tables[table.source] = table
        if path is None or not DeltaTable.isDeltaTable(spark, path):
            return  # open() creates it with these columns
        evolve_columns(spark, path, table, self._target_schema(table), moves or ColumnMoves())
        if table.source in self.paths:
            self._check_native(table.source)

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

    def _check_backticks(self, spark: Any, table: SinkTable, existing: str | None) -> None:
        """Delta's MERGE into a table with a change data feed cannot name a column that has
        a backtick (it fails with INVALID_ATTRIBUTE_NAME_SYNTAX); say so before the first
        batch, with the way out."""
        odd = [f.name for f in table.schema.fields if "`" in f.name]
        if not odd or not self.upsert:
            return
        if existing is None:
            feed = self.config.change_data_feed
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

    def write(self, batch: WritePlan) -> None:
        """Each target with changes, up to ``concurrent-writes`` at once: every target's
        commits are idempotent on their own, so a batch cut short by one target's error
        is replayed, and each target skips what it committed."""
        pending = list(batch.with_changes())
        if not pending:
            return
        spark = pending[0].changes.sparkSession  # each target's rows made here, not in threads

        def write_table(session: Any, write: TargetWrite) -> None:
            table = self.tables[write.target]
            if self.upsert:
                self._upsert(session, table, write, batch)
            else:
                self._append(session, table, write.changes, batch)

        threads = self.config.concurrent_writes
        write_concurrently(spark, pending, threads, write_table, self._sessions, self.stopping)

    def truncate(self, spark: Any, table: SinkTable, batch: WritePlan) -> None:
        """``DELETE`` of every row, a commit of the truncate's batch (skipped on replay, and
        recording the batch's offset for ``verify``). Upsert targets only: an append-mode
        target is a history of changes, which a truncate does not rewrite."""
        if not self.upsert:
            raise SparkCdcError(
                f"the target of {table.source} is a history of changes ('changelog-mode: "
                "append'); a truncate is not applied to it"
            )
        location = self._native(table.source)
        if location is None:
            with _commit_options(spark, batch, table.source, app=TRUNCATE_APP):
                spark.sql(f"DELETE FROM delta.{quoted(self.target_path(table.source))}")
            return
        metadata = _metadata(batch, table.source, offset=True)
        native.delete_all(location, metadata, batch.pipeline + TRUNCATE_APP, batch.batch_id)

    def drop_table(self, spark: Any, table: SinkTable, batch: WritePlan) -> None:
        """Deletes the target's directory (a path-based table has no catalog entry to drop)
        through Hadoop's file system (any storage Spark writes to), and Delta's cached log
        of it, so a table created under the name again starts a new target."""
        del batch
        path = self.target_path(table.source)
        parts = self.names.get(table.source)
        if parts is not None:  # the name goes (and a managed table's files); then the folder
            catalog.drop(spark, parts)
            self.paths.pop(table.source, None)
        jvm = spark.sparkContext._jvm
        hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
        fs = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        if fs.exists(hadoop_path):
            fs.delete(hadoop_path, True)
        jvm.org.apache.spark.sql.delta.DeltaLog.invalidateCache(spark._jsparkSession, hadoop_path)
        self._appends.pop(table.source, None)
        self._appended.pop(table.source, None)
        self._spark_written.discard(table.source)

    def release(self, spark: Any, table: SinkTable) -> None:
        """Unsets the ``sparkcdc.appends-for`` mark: later snapshot rows are merged."""
        from delta.tables import DeltaTable

        path = self.target_path(table.source)
        self._appends.pop(table.source, None)
        self._appended.pop(table.source, None)
        if DeltaTable.isDeltaTable(spark, path):
            spark.sql(
                f"ALTER TABLE delta.{quoted(path)} UNSET TBLPROPERTIES IF EXISTS "
                f"({sql_string(APPENDS_FOR)})"
            )

    def writes_snapshot_once(self, spark: Any, table: SinkTable, pipeline: str) -> bool:
        """A history target appends every row; a mirror appends snapshot rows when it
        holds only this pipeline's rows (:meth:`_appendable`). Either is one write."""
        return not self.upsert or self._appendable(spark, self.tables[table.source], pipeline)

    def _upsert(self, spark: Any, table: SinkTable, write: TargetWrite, batch: WritePlan) -> None:
        """Snapshot rows are appended when the target holds only this pipeline's rows (their
        keys cannot be there yet), and so is a batch of the log's inserts alone
        (``TargetWrite.inserts_only``); other changes are merged. A MERGE costs a join with
        the target, so a snapshot merged batch by batch grows with the table squared, and
        a MERGE of a few inserts costs several times their append."""
        changes, uncounted = write.changes, write.read_once  # all snapshot rows, appendable
        inserted = not uncounted and write.inserts_only  # all new keys
        snapshot = None if uncounted else write.snapshot_rows
        if not uncounted and (
            not (snapshot or inserted) or not self._appendable(spark, table, batch.pipeline)
        ):
            self._merge(spark, table, changes, batch, write.kept_columns)
            return
        total = write.rows
        merged = (
            not uncounted
            and not inserted
            and (total is None or snapshot is None or total > snapshot)
        )
        # the append's commit names no source offset when a MERGE follows: verify reads the
        # offset of the table's last complete batch
        appended = changes if inserted else changes.where(batch.is_snapshot_row())
        rows = appended.select(*[quoted(c) for c in table.columns])
        if not self._append_once(spark, table, rows, batch, offset=not merged):
            # whether they are in already is not known: merged, which is idempotent, and
            # marked as carrying them
            log.warning(
                "delta sink: the history of %s does not say whether batch %d's new rows "
                "(snapshot rows, inserts) are in it; they are merged",
                self.target_path(table.source),
                batch.batch_id,
            )
            self._merge(spark, table, changes, batch, write.kept_columns, snapshot_rows=True)
            self._appended[table.source] = batch.batch_id
            return
        if merged:
            rest = changes.where(~batch.is_snapshot_row())
            self._merge(spark, table, rest, batch, write.kept_columns)

    def _append_once(
        self,
        spark: Any,
        table: SinkTable,
        rows: Any,
        batch: WritePlan,
        offset: bool,
        whole_history: bool = False,
    ) -> bool:
        """Appends ``rows`` (the batch's snapshot rows, or a history target's changes)
        unless the batch appended them already (a replay). False when that cannot be told
        from the newest commits, or the ``whole_history`` (sinks/delta/appended.py):
        nothing is written. No transaction id: Delta would compute the table's state to
        check it."""
        path = self.target_path(table.source)
        last = self._appended.pop(table.source, None)  # unknown while the write runs
        location = self._native(table.source)
        if last is None:
            if location is None:
                known = snapshot_appended(
                    spark, path, batch.pipeline, batch.batch_id, whole_history
                )
            else:
                commits = native.history(location, None if whole_history else HISTORY_ROWS)
                known = appended_through(commits, batch.pipeline, batch.batch_id)
            if known is None:
                return False
            last = batch.batch_id if known else batch.batch_id - 1
        if last >= batch.batch_id:
            log.info("delta sink: batch %d's rows are in %s already", batch.batch_id, path)
            self._appended[table.source] = last
            return True
        metadata = _metadata(batch, table.source, offset)
        if location is None:
            rows.write.format("delta").mode("append").option("userMetadata", metadata).save(path)
        else:
            native.append(location, rows.toArrow(), metadata)
        self._appended[table.source] = batch.batch_id
        return True

    def _appendable(self, spark: Any, table: SinkTable, pipeline: str) -> bool:
        """Whether the target holds this pipeline's rows only: marked for it (table property
        ``sparkcdc.appends-for``), or empty and marked now. Otherwise (a target written
        before this checkpoint was made) snapshot rows are merged, as their keys may be
        there, and a history target's appends carry Delta's transaction ids."""
        known = self._appends.get(table.source)
        if known is not None:
            return known
        path = self.target_path(table.source)
        # the table's properties alone come from its metadata; DESCRIBE DETAIL's file
        # count computes the table's state (3 Spark jobs), needed only when not marked
        properties = dict(spark.sql(f"SHOW TBLPROPERTIES delta.{quoted(path)}").collect())
        owner = properties.get(APPENDS_FOR)
        if owner == pipeline:
            self._appends[table.source] = True
            return True
        detail = spark.sql(f"DESCRIBE DETAIL delta.{quoted(path)}")
        ((files,),) = detail.select("numFiles").collect()
        if files == 0:
            spark.sql(
                f"ALTER TABLE delta.{quoted(path)} SET TBLPROPERTIES "
                f"({sql_string(APPENDS_FOR)} = {sql_string(pipeline)})"
            )
            owner = pipeline
        self._appends[table.source] = owner == pipeline
        return owner == pipeline

    def _merge(
        self,
        spark: Any,
        table: SinkTable,
        changes: Any,
        batch: WritePlan,
        kept: tuple[tuple[str, ...], ...],
        snapshot_rows: bool = False,
    ) -> None:
        """One MERGE of each key's last change, a commit of the batch (skipped on replay,
        recording its offset). A key whose last change is a row read again leaves the
        target's kept columns (``TargetWrite.kept_columns``) as they are."""
        last = last_change_per_key(changes, table.key, table.columns, kept, batch.is_reread_row())
        location = self._native(table.source)
        if location is None:
            with _commit_options(spark, batch, table.source, snapshot_rows=snapshot_rows):
                self._spark_merge(spark, table, changes, last, kept)
            return
        metadata = _metadata(batch, table.source, offset=True, snapshot_rows=snapshot_rows)
        native.merge(
            location,
            last.toArrow(),
            table.key,
            table.columns,
            kept,
            DELETED,
            REREAD,
            metadata,
            batch.pipeline,
            batch.batch_id,
        )

    def _spark_merge(
        self,
        spark: Any,
        table: SinkTable,
        changes: Any,
        last: Any,
        kept: tuple[tuple[str, ...], ...],
    ) -> None:
        """Spark's MERGE of ``last`` (each key's last change; ``changes`` bound the keys)."""
        from delta.tables import DeltaTable
        from pyspark.sql import functions as F

        matches = F.expr(" AND ".join(f"t.{quoted(k)} <=> s.{quoted(k)}" for k in table.key))
        path = self.target_path(table.source)
        small = _size_in_bytes(spark, path) < REWRITE_BELOW_BYTES
        if not small:  # a small target's few files are read whole: a bound spares nothing
            first = table.key[0]
            bounds = key_bounds(changes, first, table.schema[first].dataType)
            if bounds is not None:
                matches = matches & bounds
        values: dict[str, Any] = {quoted(c): f"s.{quoted(c)}" for c in table.columns}
        target = DeltaTable.forPath(spark, path)
        merge = target.alias("t").merge(last.alias("s"), matches)
        merge = merge.whenMatchedDelete(condition=f"s.{DELETED}")
        for kind, columns_kept in enumerate(kept):
            if columns_kept:
                reread: dict[str, Any] = {
                    quoted(c): f"s.{quoted(c)}" for c in table.columns if c not in columns_kept
                }
                merge = merge.whenMatchedUpdate(
                    condition=f"NOT s.{DELETED} AND s.{REREAD} = {kind}", set=reread
                )
        merge = merge.whenMatchedUpdate(condition=f"NOT s.{DELETED}", set=values)
        merge = merge.whenNotMatchedInsert(condition=f"NOT s.{DELETED}", values=values)
        with _session_setting(spark, _MERGE_DELETION_VECTORS, "false" if small else None):
            merge.execute()

    def _append(self, spark: Any, table: SinkTable, changes: Any, batch: WritePlan) -> None:
        """A history target's changes, appended. Into a target of this pipeline alone
        without a transaction id, a replay told by the pipeline's own commits, as for
        snapshot rows; into any other with Delta's ``txnAppId``/``txnVersion``. When the
        whole history cannot tell (cleaned up past the pipeline's last commit), the batch
        fails: appending could duplicate it, and the transaction id would not know about
        the appends made without one."""
        rows = changes.select(*[quoted(c) for c in table.columns], *CHANGE_COLUMNS)
        path = self.target_path(table.source)
        if not self._appendable(spark, table, batch.pipeline):
            location = self._native(table.source)
            if location is None:
                options = _write_options(batch, table.source)
                rows.write.format("delta").mode("append").options(**options).save(path)
            else:
                metadata = _metadata(batch, table.source, offset=True)
                native.append(location, rows.toArrow(), metadata, batch.pipeline, batch.batch_id)
            return
        if self._append_once(spark, table, rows, batch, offset=True):
            return
        if self._append_once(spark, table, rows, batch, offset=True, whole_history=True):
            return
        raise SparkCdcError(
            f"cannot tell whether batch {batch.batch_id}'s changes are in {path} already: its "
            f"history no longer shows a commit of pipeline '{batch.pipeline}' (cleaned up "
            "since its last one), and appending could write them twice. If the table holds "
            "none of them (their _commit_version values are those of the checkpoint's "
            f"offsets/{batch.batch_id}), run ALTER TABLE delta.{quoted(path)} UNSET "
            f"TBLPROPERTIES ('{APPENDS_FOR}') and run again: the batch is then appended "
            "under a Delta transaction id"
        )

    def snapshot(self, spark: Any, table: SinkTable) -> TargetSnapshot:
        """The target as of its newest version and the offset of the pipeline's last
        commit (sinks/delta/history.py)."""
        path = self.target_path(table.source)
        return read_back(spark, path, table, self.upsert, self.pipeline_id)


def _catalog_names(
    tables: Sequence[SinkTable], pattern: str
) -> dict[TableId, tuple[str, str, str]]:
    """Each table's catalog name (``table-name`` without ``path``), split as Spark SQL
    splits it: a route's ``sink-table: spark_catalog.lake.orders`` names a catalog."""
    names = target_names(tables, pattern)
    return {t: catalog.table_parts(name, f"the target of {t}") for t, name in names.items()}


def _qualified(spark: Any, location: str) -> str:
    """A URI location as Hadoop's file system names it (``file:///x`` is ``file:/x``):
    Delta refuses to create a table whose location it reads back spelled otherwise. Local
    folders stay as they are."""
    if not is_uri(location):
        return location
    path = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(location)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return str(fs.makeQualified(path).toString())


def _size_in_bytes(spark: Any, path: str) -> float:
    """The target's size as the checksum file of Delta's last known snapshot of it says
    (Delta writes one with each commit; read without a job, ~10 ms), else as that
    snapshot's state says, or infinity where this Delta's log is not reachable (another
    Delta build, e.g. Databricks'): then the MERGE keeps the table's own deletion-vector
    setting. Not ``Snapshot.sizeInBytes``, which computes the state (three jobs, ~1 s a
    MERGE on a warm 2-core machine) even when the checksum has the size."""
    from py4j.protocol import Py4JError

    try:
        jvm = spark.sparkContext._jvm
        delta_log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
        snapshot = delta_log.unsafeVolatileSnapshot()
        checksum = snapshot.checksumOpt()
        if checksum.isDefined():
            return float(checksum.get().tableSizeBytes())
        return float(snapshot.sizeInBytes())
    except (Py4JError, AttributeError) as exc:  # a class or method this Delta lacks
        log.debug("delta sink: no size of %s (%s); the MERGE keeps its setting", path, exc)
        return float("inf")


@contextmanager
def _session_setting(spark: Any, key: str, value: str | None) -> Iterator[None]:
    """``key`` set to ``value`` meanwhile (nothing when None), then back to what it was:
    a user's own setting of it in ``spark-conf`` outlives the write."""
    if value is None:
        yield
        return
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def _metadata(batch: WritePlan, target: TableId, offset: bool, snapshot_rows: bool = False) -> str:
    """A commit's ``userMetadata``: the pipeline, the batch and (``offset``) its source
    offset as ``target`` records it (:meth:`WritePlan.offset_of`), which ``verify``
    reads back; a MERGE that carries the batch's snapshot rows says so
    (sinks/delta/appended.py)."""
    metadata: dict[str, Any] = {
        "pipeline": batch.pipeline,
        "batch_id": batch.batch_id,
        "source_offset": batch.offset_of(target) if offset else None,
    }
    if snapshot_rows:
        metadata[SNAPSHOT_ROWS] = True
    return json.dumps(metadata)


def _write_options(batch: WritePlan, target: TableId) -> dict[str, str]:
    """A history append's writer options that make it idempotent and record the offset:
    what :func:`_commit_options` sets for a MERGE, as options of the one write (no session
    setting, which writes of other targets in other threads would see)."""
    return {
        "txnAppId": batch.pipeline,
        "txnVersion": str(batch.batch_id),
        "userMetadata": _metadata(batch, target, offset=True),
    }


@contextmanager
def _commit_options(
    spark: Any,
    batch: WritePlan,
    target: TableId,
    app: str = "",
    offset: bool = True,
    snapshot_rows: bool = False,
) -> Iterator[None]:
    """Session settings that make the next Delta commit idempotent and record the offset.

    Delta reads them for MERGE and DELETE, which take no writer options; they are unset
    right after, so no other commit picks them up by accident, and ``spark`` is the
    session of one thread's writes (spark/concurrent_writes.py). ``app`` suffixes the
    transaction's app id: a batch's truncate and its MERGE are two commits, each skipped
    on replay.
    """
    spark.conf.set(_TXN_APP, batch.pipeline + app)
    spark.conf.set(_TXN_VERSION, str(batch.batch_id))
    spark.conf.set(_USER_METADATA, _metadata(batch, target, offset, snapshot_rows))
    try:
        yield
    finally:
        for key in (_TXN_APP, _TXN_VERSION, _USER_METADATA):
            spark.conf.unset(key)

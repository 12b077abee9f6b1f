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

``writer: native`` commits through delta-rs instead (sinks/delta/native_batch.py): every
target's rows of a batch fetched in one Spark action, then one commit per target with the
same transaction ids (checked before each write, as delta-rs does not) and
``userMetadata``. Targets are still created (sinks/delta/targets.py), evolved and dropped
with Spark; a target that sparkcdc's own schema evolution gives a feature delta-rs cannot
write (type widening) is written with Spark's writer from then on.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from sparkcdc.core.changes import CHANGE_COLUMNS
from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.folders import ensure_writable, is_uri
from sparkcdc.core.identifiers import quoted, sql_string
from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import Sink, SinkTable, TargetSnapshot, target_names
from sparkcdc.sinks.capabilities import SinkCapabilities
from sparkcdc.sinks.delta import catalog, moved_folders, native, native_targets, targets
from sparkcdc.sinks.delta.appended import (
    snapshot_appended,
)
from sparkcdc.sinks.delta.columns import evolve_columns
from sparkcdc.sinks.delta.commits import (
    TRUNCATE_APP,
    commit_metadata,
    commit_options,
    write_options,
)
from sparkcdc.sinks.delta.config import DeltaSinkConfig, location_join
from sparkcdc.sinks.delta.history import read_back
from sparkcdc.sinks.delta.native_batch import write_batch
from sparkcdc.sinks.delta.spark_merge import spark_merge
from sparkcdc.sinks.delta.targets import APPENDS_FOR, folder_name
from sparkcdc.sinks.reduce import last_change_per_key
from sparkcdc.sinks.write_plan import TargetWrite, WritePlan
from sparkcdc.snapshot.schema_change import ColumnMoves
from sparkcdc.spark.concurrent_writes import SessionClones, write_concurrently

__all__ = ["APPENDS_FOR", "TRUNCATE_APP", "DeltaSink", "folder_name"]

log = logging.getLogger(__name__)


class DeltaSink(Sink):
    def __init__(self, config: DeltaSinkConfig, pipeline_id: str | None = None) -> None:
        self.config = config
        #: The pipeline's identity when known at creation (``name:query id``): targets it
        #: creates are marked as its own at once (``APPENDS_FOR``), not at their first batch.
        self.pipeline_id = pipeline_id
        self.sessions = SessionClones()  #: the sessions of concurrent writes
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
        self._session_defaults = False  #: the session sets Delta defaults for new tables

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

    def named_tables(self) -> Mapping[str, Mapping[TableId, str]]:
        return {"cluster.key": self.config.cluster_entries()} if self.config.cluster_keys else {}

    def open(self, spark: Any, tables: Sequence[SinkTable]) -> None:
        if self.config.local_folder is not None:
            ensure_writable(self.config.local_folder, "sink.path")
        if self.config.writer == "native":
            native.require()
            self._session_defaults = native_targets.has_session_defaults(spark)

        self.tables = {t.source: t for t in tables}
        if self.config.path is None:
            self.names = _catalog_names(tables, self.config.table_name)
            self.paths = {}
            _check_catalog_targets(spark, self.names, self.config.location)
        else:
            names = target_names(tables, self.config.table_name, folder_name)
            self.paths = {
                t: _qualified(spark, location_join(self.config.path, name))
                for t, name in names.items()
            }
        # up to concurrent-writes at once: checking or creating one costs ~0.5 s
        write_concurrently(
            spark, list(tables), self.config.concurrent_writes, self._open_one, self.sessions
        )

    def _open_one(self, spark: Any, table: SinkTable) -> None:
        """Checks the table's existing target, or creates it."""
        from delta.tables import DeltaTable

        if self._open_native(spark, table):
            return
        path = self._locate(spark, table.source)
        exists = path is not None and DeltaTable.isDeltaTable(spark, path)
        if exists:
            assert path is not None
            schema = targets.target_schema(table, self.upsert)
            targets.check_existing(spark, table, path, schema)
        targets.check_backticks(spark, table, path if exists else None, self.config)
        if not exists:
            parts = self.names.get(table.source)
            if parts is not None:
                external = _external_folder(spark, self.config.location, parts)
                targets.create_in_catalog(
                    spark, parts, table, self.config, self.pipeline_id, external
                )
                self._locate(spark, table.source)
            else:
                assert path is not None
                targets.create(spark, path, table, self.config, self.pipeline_id)
            self._created(table.source)
        self._check_native(table.source)

    def _open_native(self, spark: Any, table: SinkTable) -> bool:
        """A folder target of the native writer checked, or created, through delta-rs
        (sinks/delta/native_targets.py): no Spark call unless delta-rs cannot create it
        as Spark would. False for any other target."""
        location = None if self.names else self.native_location(table.source)
        if location is None:
            return False
        path, storage = self.paths[table.source], self.config.storage_options
        schema = targets.target_schema(table, self.upsert)
        found = native_targets.existing(location, storage)
        if found is not None:
            targets.check_columns(table, path, native_targets.columns(found), schema)
            targets.check_backticks(spark, table, path, self.config)
            owner = found.metadata().configuration.get(APPENDS_FOR)
            if owner is not None and owner == self.pipeline_id:
                self._appends[table.source] = True
            self._check_native(table.source, native.features_of(found))
            return True
        targets.check_backticks(spark, table, None, self.config)
        properties = targets.table_properties(schema, self.config, self.pipeline_id)
        if native_targets.creatable(location, schema, properties, self._session_defaults):
            commented = targets.commented(schema, table)
            native_targets.create(
                location, commented, table.partition_keys, properties, table.comments.table
            )
        else:
            targets.create(spark, path, table, self.config, self.pipeline_id)
            self._check_native(table.source)
        self._created(table.source)
        return True

    def _locate(self, spark: Any, target: TableId) -> str | None:
        """Where the target is (None: a catalog target not made yet), as writes, checks and
        ``verify`` use it: a catalog name's location (a forgotten one registered again)."""
        parts = self.names.get(target)
        if parts is None:
            return self.paths[target]
        found = _catalog_location(spark, parts, self.config.location, self.pipeline_id, self.names)
        if found is not None:
            self.paths[target] = found
        return found

    def native_location(self, target: TableId) -> str | None:
        """The target's location as delta-rs names it when delta-rs writes it, else None
        (Spark's writer)."""
        if self.config.writer != "native" or target in self._spark_written:
            return None
        return native.delta_rs_uri(self.paths[target])

    def forget_appended(self, target: TableId) -> None:
        """Forgets which batch's snapshot rows the target is known to hold: a native
        commit may carry some, and should Spark's writer take the target over (a widened
        column), its appends ask the target's history instead."""
        self._appended.pop(target, None)

    def _check_native(self, target: TableId, features: set[str] | None = None) -> None:
        """Whether delta-rs can write the target (:func:`_native_writable`)."""
        location = self.native_location(target)
        storage = self.config.storage_options
        if location is not None and not _native_writable(location, storage, target, features):
            self._spark_written.add(target)

    def _created(self, target: TableId) -> None:
        """A target this sink created is its pipeline's to append snapshot rows to."""
        if self.pipeline_id is not None:
            self._appends[target] = True
            self._appended[target] = -1

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
        schema = targets.target_schema(table, self.upsert)
        evolve_columns(spark, path, table, schema, moves or ColumnMoves())
        if table.source in self.paths:
            self._check_native(table.source)

    def write(self, batch: WritePlan) -> None:
        """Each target with changes: those delta-rs writes in one Spark action and a commit
        each (sinks/delta/native_batch.py), the others up to ``concurrent-writes`` at once.
        Every target's commits are idempotent on their own, so a batch cut short by one
        target's error is replayed, and each target skips what it committed."""
        pending = list(batch.with_changes())
        if not pending:
            return
        spark = _session(pending[0])
        natives = [w for w in pending if self.native_location(w.target) is not None]
        if natives:
            write_batch(self, spark, batch, natives)
        by_spark = [w for w in pending if self.native_location(w.target) is None]

        def write_table(session: Any, write: TargetWrite) -> None:
            table = self.tables[write.target]
            if self.upsert:
                self._upsert(session, table, write, batch)
            else:
                self._append(session, table, write.changes, batch)

        threads = self.config.concurrent_writes
        write_concurrently(spark, by_spark, threads, write_table, self.sessions, self.stopping)

    def truncate(self, spark: Any, table: SinkTable, batch: WritePlan) -> None:
        """``DELETE`` of every row, a commit of the truncate's batch (skipped on replay, and
        recording the batch's offset for ``verify``). Upsert targets only: an append-mode
        target is a history of changes, which a truncate does not rewrite."""
        if not self.upsert:
            raise SparkCdcError(
                f"the target of {table.source} is a history of changes ('changelog-mode: "
                "append'); a truncate is not applied to it"
            )
        location = self.native_location(table.source)
        if location is None:
            with commit_options(spark, batch, table.source, app=TRUNCATE_APP):
                spark.sql(f"DELETE FROM delta.{quoted(self.target_path(table.source))}")
            return
        metadata = commit_metadata(batch, table.source, offset=True)
        app = batch.pipeline + TRUNCATE_APP
        native.delete_all(location, metadata, app, batch.batch_id, self.config.storage_options)

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
        holds only this pipeline's rows (:meth:`appendable`). Either is one write."""
        return not self.upsert or self.appendable(spark, self.tables[table.source], pipeline)

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
            not (snapshot or inserted) or not self.appendable(spark, table, batch.pipeline)
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
        if last is None:
            known = snapshot_appended(spark, path, batch.pipeline, batch.batch_id, whole_history)
            if known is None:
                return False
            last = batch.batch_id if known else batch.batch_id - 1
        if last >= batch.batch_id:
            log.info("delta sink: batch %d's rows are in %s already", batch.batch_id, path)
            self._appended[table.source] = last
            return True
        metadata = commit_metadata(batch, table.source, offset)
        rows.write.format("delta").mode("append").option("userMetadata", metadata).save(path)
        self._appended[table.source] = batch.batch_id
        return True

    def appendable(self, spark: Any, table: SinkTable, pipeline: str) -> bool:
        """Whether the target holds this pipeline's rows only: marked for it (table property
        ``sparkcdc.appends-for``), or empty and marked now. Otherwise (a target written
        before this checkpoint was made) snapshot rows are merged, as their keys may be
        there, and a history target's appends carry Delta's transaction ids."""
        known = self._appends.get(table.source)
        if known is not None:
            return known
        self._appends[table.source] = _claimed(spark, self.target_path(table.source), pipeline)
        return self._appends[table.source]

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
        path = self.target_path(table.source)
        with commit_options(spark, batch, table.source, snapshot_rows=snapshot_rows):
            spark_merge(spark, path, table, changes, last, kept)

    def _append(self, spark: Any, table: SinkTable, changes: Any, batch: WritePlan) -> None:
        """A history target's changes, appended. Into a target of this pipeline alone
        without a transaction id, a replay told by the pipeline's own commits, as for
        snapshot rows; into any other with Delta's ``txnAppId``/``txnVersion``. When the
        whole history cannot tell (cleaned up past the pipeline's last commit), the batch
        fails: appending could duplicate it, and the transaction id would not know about
        the appends made without one."""
        rows = changes.select(*[quoted(c) for c in table.columns], *CHANGE_COLUMNS)
        path = self.target_path(table.source)
        if not self.appendable(spark, table, batch.pipeline):
            options = write_options(batch, table.source)
            rows.write.format("delta").mode("append").options(**options).save(path)
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


def _claimed(spark: Any, path: str, pipeline: str) -> bool:
    """Whether the target at ``path`` is ``pipeline``'s (marked for it), or empty and now
    marked for it (see :meth:`DeltaSink.appendable`)."""
    # the table's properties alone come from its metadata; DESCRIBE DETAIL's file
    # count computes the table's state (3 Spark jobs), needed only when not marked
    properties = dict(spark.sql(f"SHOW TBLPROPERTIES delta.{quoted(path)}").collect())
    owner = properties.get(APPENDS_FOR)
    if owner == pipeline:
        return True
    detail = spark.sql(f"DESCRIBE DETAIL delta.{quoted(path)}")
    ((files,),) = detail.select("numFiles").collect()
    if files == 0:
        spark.sql(
            f"ALTER TABLE delta.{quoted(path)} SET TBLPROPERTIES "
            f"({sql_string(APPENDS_FOR)} = {sql_string(pipeline)})"
        )
        owner = pipeline
    return owner == pipeline


def _native_writable(
    location: str, storage: Mapping[str, str] | None, target: TableId, features: set[str] | None
) -> bool:
    """Whether delta-rs can write the target at ``location`` (its table ``features``, read
    when not given): a feature sparkcdc's own schema evolution adds moves the target to
    Spark's writer, loudly (False); any other it cannot write is refused, naming it and the
    way out."""
    if features is None:
        features = native.table_features(location, storage)
    cannot = native.unsupported(features)
    if not cannot:
        return True
    if set(cannot) <= native.SPARK_ONLY_AFTER_EVOLUTION:
        log.warning(
            "delta sink: %s has table feature(s) %s (a widened column type), which the "
            "native writer cannot write: Spark's Delta writer writes it from now on",
            location,
            ", ".join(cannot),
        )
        return False
    raise native.refusal(location, target, cannot)


def _catalog_names(
    tables: Sequence[SinkTable], pattern: str
) -> dict[TableId, tuple[str, str, str]]:
    """Each table's catalog name (``table-name`` without ``path``), split as Spark SQL
    splits it: a route's ``sink-table: spark_catalog.lake.orders`` names a catalog."""
    return {
        t.source: catalog.table_parts(
            catalog.target_name(pattern, t.source), f"the target of {t.source}"
        )
        for t in tables
    }


def _qualified(spark: Any, location: str) -> str:
    """A URI location as Hadoop's file system names it (``file:///x`` is ``file:/x``):
    Delta refuses to create a table whose location it reads back spelled otherwise. Local
    folders stay as they are."""
    if not is_uri(location):
        return location
    path = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(location)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return str(fs.makeQualified(path).toString())


def _check_catalog_targets(
    spark: Any, names: dict[TableId, tuple[str, str, str]], location: str | None
) -> None:
    """Catalog targets that cannot work are refused before anything is written: a catalog
    the session lacks, a managed table an in-memory catalog would forget, two external
    targets in one folder."""
    catalog.check_catalogs(spark, names)
    for parts in names.values():
        problem = catalog.forgets_on_restart(spark, parts, location is not None)
        if problem:
            raise SparkCdcError(problem)
    if location is not None:
        problem = shared_folder({t: external_folder(location, p) for t, p in names.items()})
        if problem:
            raise SparkCdcError(problem)


def external_folder(location: str, parts: tuple[str, str, str]) -> str:
    """The folder of an external catalog target under the sink's ``location``:
    ``<schema>/<table>`` for the session catalog's tables, ``<catalog>/<schema>/<table>``
    for another catalog's (two catalogs' tables of one name are two tables)."""
    names = parts[1:] if parts[0] == catalog.SESSION_CATALOG else parts
    return location_join(location, "/".join(folder_name(n) for n in names))


def shared_folder(folders: dict[TableId, str]) -> str | None:
    """Why two external targets cannot have the folders ``folders`` gives them (one
    folder, or one inside the other: a name that becomes another's folder, a schema named
    like another catalog), or None."""
    owner: dict[str, TableId] = {}
    for table, folder in folders.items():
        other = owner.setdefault(folder.rstrip("/"), table)
        if other != table:
            return _shared(other, table, folder)
    for table, folder in folders.items():
        parent = folder.rstrip("/")
        while "/" in parent:
            parent = parent.rsplit("/", 1)[0]
            if parent in owner:
                return _shared(owner[parent], table, parent)
    return None


def _shared(a: TableId, b: TableId, folder: str) -> str:
    return (
        f"the Delta sink's targets of {a} and {b} would share the external folder {folder} "
        "('location'; one inside the other's is shared too): route one of them to another "
        "name, or give the tables of different catalogs sinks of their own"
    )


def _external_folder(spark: Any, location: str | None, parts: tuple[str, str, str]) -> str | None:
    """The folder of an external catalog target (the sink's ``location``), None for a
    managed one."""
    if location is None:
        return None
    return _qualified(spark, external_folder(location, parts))


def _registered(spark: Any, targets: list[tuple[str, str, str]]) -> set[str]:
    """The folders the catalogs keep ``targets`` in, as the catalog spells them and, for
    local ones, as plain paths (how :func:`external_folder` spells a local location)."""
    found = [f for f in (catalog.location_of(spark, p) for p in targets) if f is not None]
    local = [re.sub(r"^file:(//)?", "", f) for f in found if f.startswith("file:")]
    return {*found, *local}


def _catalog_location(
    spark: Any,
    parts: tuple[str, str, str],
    location: str | None,
    pipeline_id: str | None = None,
    names: Mapping[TableId, tuple[str, str, str]] | None = None,
) -> str | None:
    """Where the catalog keeps the table ``parts``, None when it does not exist; an
    external table (the sink's ``location``) the catalog forgot is registered again from
    its folder first; a table in the folder earlier versions gave it stops the run
    (sinks/delta/moved_folders.py; ``names``: the sink's targets)."""
    found = catalog.location_of(spark, parts)
    if found is None and location is not None:
        from delta.tables import DeltaTable

        folder: str | None = _external_folder(spark, location, parts)
        assert folder is not None
        if not DeltaTable.isDeltaTable(spark, folder):
            others = [p for p in (names or {}).values() if p != parts]
            taken = {external_folder(location, p) for p in others}
            # a same-named target of another catalog may be registered there (made so)
            taken |= _registered(spark, [p for p in others if p[1:] == parts[1:]])
            earlier = moved_folders.earlier_folder(location, parts, taken)
            if earlier is not None:
                earlier = _qualified(spark, earlier)
                moved_folders.refuse_earlier_target(spark, parts, earlier, folder, pipeline_id)
            folder = None
        if folder is not None:
            catalog.register(spark, parts, folder)
            found = catalog.location_of(spark, parts)
    return found


def _session(write: TargetWrite) -> Any:
    """The batch's Spark session, from the envelope where the write has it: making the
    target's rows (``write.changes``) to ask them costs a plan the native writer skips."""
    return (write.envelope.frame if write.envelope else write.changes).sparkSession

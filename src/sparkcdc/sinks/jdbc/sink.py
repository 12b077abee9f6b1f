"""The JDBC sink: PostgreSQL and MySQL/MariaDB targets, exactly once.

Each micro-batch is applied in ONE target transaction, for all tables at once:

1. lock this pipeline's row in the offsets table (``SELECT ... FOR UPDATE``); if it already
   records this batch id or a later one, the batch is a replay (Spark re-runs a batch
   after a crash): roll back and change nothing;
2. per table, reduce the changes to the last change per key
   (:func:`~sparkcdc.sinks.reduce.last_change_per_key`), stream the keys to delete and
   then the rows to upsert to the driver with ``toLocalIterator`` (a batch never has to fit
   in driver memory), and send them as multi-row deletes and upserts. The batch's
   snapshot rows (keys the pipeline never emitted) skip the reduction and are
   bulk-loaded as CSV blocks the executors write (:mod:`~sparkcdc.sinks.jdbc.csv_blocks`):
   on PostgreSQL with ``COPY`` when the target holds this pipeline's rows only (its
   comment names the pipeline, set when the sink found it empty); on MySQL/MariaDB with
   ``LOAD DATA LOCAL`` into any target, undone to a savepoint and upserted instead when
   the server skipped a row or warned. A batch of one table's snapshot rows only
   is read once, uncached (pipeline/one_pass.py): the blocks' DataFrame, read to its
   end, goes to ``WritePlan.read_through`` (the DataFrame's plan holds the batch's
   counts, which the pipeline checks there, before the commit);
3. record the batch id and the source offset in the offsets row, and commit.

A crash anywhere before the commit leaves the target as it was; a crash after it makes the
replay a no-op. Deletes go before upserts so an existing target whose key collation
folds case or trailing spaces (where the source's did not) cannot lose a moved key.

``snapshot()`` reads the offsets row and the rows inside one consistent read-only
transaction (PostgreSQL REPEATABLE READ, InnoDB CONSISTENT SNAPSHOT), so the rows are
exactly those of the recorded source offset, even while the pipeline keeps writing.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Sequence
from typing import Any

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import Sink, SinkTable, TargetSnapshot
from sparkcdc.sinks.capabilities import SinkCapabilities
from sparkcdc.sinks.jdbc.columns import alter_columns, move_columns
from sparkcdc.sinks.jdbc.config import JdbcSinkConfig
from sparkcdc.sinks.jdbc.dialects import SinkError, Target, TargetDialect, dialect_for
from sparkcdc.sinks.jdbc.read_back import read_offset, read_rows
from sparkcdc.sinks.jdbc.table_writes import TableWrites
from sparkcdc.sinks.jdbc.targets import check_columns, folded, prepare_target
from sparkcdc.sinks.write_plan import WritePlan
from sparkcdc.snapshot.schema_change import ColumnMoves

log = logging.getLogger(__name__)

#: The longest wait between retries of a batch whose connection was lost (seconds).
MAX_BACKOFF = 10.0

OFFSET_COLUMNS = ("pipeline", "batch_id", "source_offset", "updated_at")


class JdbcSink(Sink):
    """Writes each captured table into its own PostgreSQL or MySQL/MariaDB table.

    ``pipeline`` names the offsets row that :meth:`snapshot` reads when the sink has not
    written a batch in this process (``sparkcdc verify``); without it, the offsets table
    must hold exactly one pipeline.
    """

    def __init__(self, config: JdbcSinkConfig, pipeline: str | None = None) -> None:
        self.config = config
        self.dialect: TargetDialect = dialect_for(config)
        self.pipeline = pipeline
        self._conn: Any = None
        self._targets: dict[TableId, Target] = {}
        self._offsets_sql = ""
        #: Targets known to hold this pipeline's rows only (snapshot rows bulk-loaded).
        self._owned: dict[TableId, bool] = {}
        #: Targets to empty in the next batch's transaction (:meth:`truncate`).
        self._truncating: set[TableId] = set()
        #: Targets to drop (:meth:`drop_table`) and to unmark (:meth:`release`) in it.
        self._dropping: set[TableId] = set()
        self._releasing: set[TableId] = set()

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def capabilities(self) -> SinkCapabilities:
        from sparkcdc.sinks.jdbc import capabilities

        return capabilities(self.config)

    def open(self, spark: Any, tables: Sequence[SinkTable]) -> None:
        """Create the offsets table and missing targets; check existing targets have the
        columns, a unique key on the source key, and (MySQL) a transactional engine."""
        del spark
        conn = self._connection()
        try:
            with conn.cursor() as cur:
                default = self.dialect.default_qualifier(cur)
                self._offsets_sql = self._prepare_offsets(cur, default)
                targets: dict[TableId, Target] = {}
                seen: dict[tuple[str, str], TableId] = {}
                for table in tables:
                    target = self._resolve(table, default)
                    where = (target.qualifier or default, target.name)
                    if where in seen:
                        raise SinkError(
                            f"jdbc sink: source tables {seen[where]} and {table.source} both "
                            f"map to target {target}; make option 'table-name' tell them "
                            "apart, e.g. '{database}_{table}'"
                        )
                    seen[where] = table.source
                    self._prepare_target(cur, target)
                    targets[table.source] = target
            conn.commit()
        except BaseException:
            self._discard()
            raise
        self._targets = targets

    def close(self) -> None:
        self._discard()

    def evolve(
        self,
        spark: Any,
        table: SinkTable,
        previous: SinkTable | None = None,
        moves: ColumnMoves | None = None,
    ) -> None:
        """ALTER TABLE in a transaction of its own, before the batch that first has rows of
        the new shape: the columns ``moves`` names are renamed and dropped, columns the
        target lacks are added (nullable, at the end), and columns whose type widened
        since ``previous`` get the wider type (PostgreSQL ``ALTER COLUMN ... TYPE``, MySQL
        ``MODIFY``). Checked against the target's columns, so a replay changes nothing
        twice. Non-key columns the sink created are nullable already. On PostgreSQL a
        refused statement undoes the others; MySQL commits each one."""
        del spark
        conn = self._connection()
        try:
            with conn.cursor() as cur:
                target = self._resolve(table, self.dialect.default_qualifier(cur))
                qualifier = str(target.qualifier)
                existing = self.dialect.existing_columns(cur, qualifier, target.name)
                if existing is not None:
                    existing = move_columns(self.dialect, cur, target, existing, moves)
                    alter_columns(self.dialect, cur, target, existing, previous)
            conn.commit()
        except BaseException:
            self._discard()
            raise
        if table.source in self._targets:
            self._targets[table.source] = target

    # -- writing ---------------------------------------------------------------------------

    def write(self, batch: WritePlan) -> None:
        """Apply one micro-batch in one transaction; skip it when already applied. A lost
        or refused connection (the target restarting) is retried ``sink.max-retries``
        times with backoff: the transaction is all or nothing, and a retry whose first try
        did commit (the reply was lost) finds the batch applied and skips it."""
        if not self._offsets_sql:
            raise SinkError("jdbc sink: open() must be called before write()")
        missing = [str(t) for t in batch.targets if t not in self._targets]
        if missing:
            raise SinkError(
                f"jdbc sink: batch {batch.batch_id} has tables the sink was not opened with: "
                f"{', '.join(sorted(missing))}"
            )
        self.pipeline = self.pipeline or batch.pipeline
        try:
            for attempt in itertools.count():
                try:
                    counts = self._write_once(batch)
                    break
                except Exception as exc:
                    if not self.dialect.lost_connection(exc):
                        raise
                    reason = self._scrubbed(exc)
                    retries = self.config.max_retries
                    if attempt >= retries:
                        raise SinkError(
                            f"jdbc sink: batch {batch.batch_id}: the connection to "
                            f"{self.config.url} was lost or refused {attempt + 1} times (the "
                            f"last: {reason}); nothing of the batch was written. Run the "
                            "pipeline again once the target is back (it resumes from its "
                            "checkpoint), or raise 'sink.max-retries'"
                        ) from None
                    delay = min(MAX_BACKOFF, 2.0**attempt)
                    log.warning(
                        "jdbc sink: batch %d: the connection to %s was lost (%s); trying again "
                        "in %.0f s (retry %d of %d)",
                        batch.batch_id,
                        self.config.url,
                        reason,
                        delay,
                        attempt + 1,
                        retries,
                    )
                    if self.on_retry is not None:
                        self.on_retry()
                    time.sleep(delay)
        finally:
            # asked for this batch only (a replay of it asks again)
            self._truncating.clear()
            self._dropping.clear()
            self._releasing.clear()
        if counts is None:
            return
        log.info(
            "jdbc sink: pipeline %s batch %d applied (%s)",
            batch.pipeline,
            batch.batch_id,
            "; ".join(counts) or "no changes",
        )

    def _scrubbed(self, exc: BaseException) -> str:
        """The error's first line, without the password."""
        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        secret = self.config.password.reveal()
        return text.replace(secret, "******") if secret else text

    def _write_once(self, batch: WritePlan) -> list[str] | None:
        """One try at the batch's transaction: what it wrote per table, or None when the
        target had it already."""
        conn = self._connection()
        try:
            with conn.cursor() as cur:
                stored = self._lock_offsets(cur, batch.pipeline)
                if stored >= batch.batch_id:
                    if any(w.read_once for w in batch.targets.values()):
                        batch.read_through(None)  # nothing is read: counted again at once
                    log.info(
                        "jdbc sink: pipeline %s batch %d already applied (target is at batch "
                        "%d); skipping the replay",
                        batch.pipeline,
                        batch.batch_id,
                        stored,
                    )
                    conn.rollback()
                    return None
                counts = []
                writes = TableWrites(self.dialect, self._owned)
                for table_id in sorted(self._truncating):
                    target = self._targets[table_id]
                    table_sql = self.dialect.table_sql(target.qualifier, target.name)
                    cur.execute(f"DELETE FROM {table_sql}", ())  # () turns %% back into %
                    counts.append(f"{table_id}: emptied (TRUNCATE), {cur.rowcount} rows")
                for table_id in sorted(self._releasing):
                    self.dialect.unmark_owner(cur, self._targets[table_id])
                    self._owned.pop(table_id, None)
                for table_id in sorted(self._dropping):
                    target = self._targets[table_id]
                    table_sql = self.dialect.table_sql(target.qualifier, target.name)
                    cur.execute(f"DROP TABLE IF EXISTS {table_sql}", ())
                    self._owned.pop(table_id, None)
                    counts.append(f"{table_id}: dropped (DROP TABLE)")
                for write in batch.with_changes():
                    target = self._targets[write.target]
                    copied, deleted, upserted = writes.write(cur, target, write, batch)
                    if copied or deleted or upserted:
                        counts.append(
                            f"{write.target}: {copied} copied, {upserted} upserted, "
                            f"{deleted} deleted"
                        )
                cur.execute(
                    self.dialect.update_offsets_sql(self._offsets_sql),
                    (batch.batch_id, batch.source_offset, batch.pipeline),
                )
            conn.commit()
        except BaseException:
            self._discard()  # rolls back: nothing of this batch stays
            self._owned.clear()  # a mark set in this transaction is gone too
            raise
        return counts

    def truncate(self, spark: Any, table: SinkTable, batch: WritePlan) -> None:
        """The target is emptied (``DELETE``) in the transaction that writes ``batch``,
        with its offset: a replay the target already has skips both."""
        del spark, batch
        if table.source not in self._targets:
            raise SinkError(f"jdbc sink: {table.source} is not a target the sink was opened with")
        self._truncating.add(table.source)

    def drop_table(self, spark: Any, table: SinkTable, batch: WritePlan) -> None:
        """The target is dropped (``DROP TABLE IF EXISTS``) in the transaction that writes
        ``batch``, with its offset (PostgreSQL: one transaction; MySQL/MariaDB commit DDL
        at once, so a replay finds it dropped, which changes nothing)."""
        del spark, batch
        if table.source not in self._targets:
            raise SinkError(f"jdbc sink: {table.source} is not a target the sink was opened with")
        self._dropping.add(table.source)

    def release(self, spark: Any, table: SinkTable) -> None:
        """The target's mark as this pipeline's own goes, in the next batch's transaction."""
        del spark
        if table.source in self._targets:
            self._releasing.add(table.source)

    def _lock_offsets(self, cur: Any, pipeline: str) -> int:
        cur.execute(self.dialect.insert_offsets_row_sql(self._offsets_sql), (pipeline,))
        cur.execute(self.dialect.lock_offsets_sql(self._offsets_sql), (pipeline,))
        return int(cur.fetchone()[0])

    def writes_snapshot_once(self, spark: Any, table: SinkTable, pipeline: str) -> bool:
        """A target that takes the bulk load (:meth:`_loads`; on PostgreSQL one that holds
        ``pipeline``'s rows only or is empty, which the batch's transaction marks) takes a
        batch of snapshot rows as CSV blocks read once with ``toLocalIterator``."""
        del spark
        target = self._targets.get(table.source)
        if target is None or not self.dialect.copies_csv:
            return False
        if not self.dialect.loads_owned_only:
            return True
        known = self._owned.get(table.source)
        if known is not None:
            return known
        try:
            conn = self._connection()
            with conn.cursor() as cur:
                owner = self.dialect.owner(cur, target)
                once = owner == pipeline or (owner is None and self.dialect.is_empty(cur, target))
            conn.rollback()  # the batch's transaction starts afresh
        except Exception as exc:
            self._discard()  # no transaction left open, aborted or not
            if not self.dialect.lost_connection(exc):
                raise
            return False  # the batch is cached and counted; its write tries again
        return once

    # -- reading back ----------------------------------------------------------------------

    def snapshot(self, spark: Any, table: SinkTable) -> TargetSnapshot:
        """The target's rows and the source offset of the last batch applied, read in one
        consistent transaction (sinks/jdbc/read_back.py). The rows pass through the driver
        (as Arrow batches), so the table must fit in the driver's memory."""
        target = self._targets.get(table.source)
        conn = self.dialect.connect()
        try:
            with conn.cursor() as cur:
                default = self.dialect.default_qualifier(cur)
                target = target or self._resolve(table, default)
                offsets = self.config.offsets_table
                has_offsets = (
                    self.dialect.existing_columns(cur, offsets.qualifier or default, offsets.table)
                    is not None
                )
                self._offsets_sql = self._offsets_sql or self._offsets_table(default)
                if self.dialect.existing_columns(cur, str(target.qualifier), target.name) is None:
                    raise SinkError(
                        f"jdbc sink: target table {target} of {table.source} does not exist"
                    )
            conn.commit()
            self.dialect.begin_consistent_read(conn)
            offset = None
            if has_offsets:
                with conn.cursor() as cur:
                    offset = read_offset(cur, self._offsets_sql, offsets.table, self.pipeline)
            rows = read_rows(self.dialect, conn, target, table.schema)
            conn.rollback()
        finally:
            conn.close()
        frame = spark.createDataFrame(rows, schema=table.schema)  # naive Arrow -> NTZ
        return TargetSnapshot(rows=frame, source_offset=offset)

    # -- targets ---------------------------------------------------------------------------

    def target_of(self, table: SinkTable) -> str:
        qualifier, name = self.config.table_name.resolve(table.source.database, table.source.table)
        return self._fold(f"{qualifier or ''}.{name}")

    def _resolve(self, table: SinkTable, default: str) -> Target:
        if not table.key:
            raise SchemaError(
                f"jdbc sink: source table {table.source} has no primary key; upsert targets "
                "need one"
            )
        qualifier, name = self.config.table_name.resolve(table.source.database, table.source.table)
        self.dialect.check_identifier("target table", name)
        if qualifier is not None:
            self.dialect.check_identifier("target schema/database", qualifier)
        return Target(
            table.source, qualifier or default, name, table.schema, table.key, table.comments
        )

    def _offsets_table(self, default: str) -> str:
        offsets = self.config.offsets_table
        return self.dialect.table_sql(offsets.qualifier or default, offsets.table)

    def _prepare_offsets(self, cur: Any, default: str) -> str:
        offsets = self.config.offsets_table
        qualifier = offsets.qualifier or default
        self.dialect.check_identifier("offsets table", offsets.table)
        table_sql = self._offsets_table(default)
        existing = self.dialect.existing_columns(cur, qualifier, offsets.table)
        if existing is None:
            self.dialect.ensure_qualifier(cur, qualifier)
            cur.execute(self.dialect.create_offsets_sql(table_sql), ())
            return table_sql
        check_columns(
            self.dialect, f"offsets table {qualifier}.{offsets.table}", existing, OFFSET_COLUMNS
        )
        self.dialect.check_engine(cur, qualifier, offsets.table)
        return table_sql

    def _prepare_target(self, cur: Any, target: Target) -> None:
        prepare_target(self.dialect, cur, target, self.config.adopt_existing)

    def _fold(self, name: str) -> str:
        return folded(self.dialect, name)

    # -- connections -----------------------------------------------------------------------

    def _connection(self) -> Any:
        if self._conn is None:
            self._conn = self.dialect.connect()
        return self._conn

    def _discard(self) -> None:
        """Roll back and close the connection (the next write opens a fresh one)."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            conn.rollback()
        except Exception:  # a broken connection cannot roll back; closing drops the tx
            log.debug("jdbc sink: rollback failed on a broken connection", exc_info=True)
        try:
            conn.close()
        except Exception:
            log.debug("jdbc sink: close failed", exc_info=True)

"""One table's part of a JDBC batch, inside the batch's transaction (sinks/jdbc/sink.py):
its snapshot rows bulk-loaded where the target takes them, the rest reduced to the last
change per key and sent as deletes, then upserts."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sparkcdc.core.changes import UNCHANGED
from sparkcdc.core.table import TableId
from sparkcdc.sinks.jdbc.csv_blocks import csv_blocks
from sparkcdc.sinks.jdbc.dialects import Converter, Target, TargetDialect
from sparkcdc.sinks.reduce import DELETED, REREAD, last_change_per_key
from sparkcdc.sinks.write_plan import TargetWrite, WritePlan

#: An upsert statement is sent once its string and binary values pass this many bytes
#: (MySQL's max_allowed_packet is 16 MiB by default, and smaller is kinder to both sides).
MAX_STATEMENT_BYTES = 4 << 20


class TableWrites:
    """Writes targets' rows with one cursor of the batch's transaction. ``owned`` says,
    per target, whether it holds the pipeline's rows only (shared with the sink, which
    forgets a mark when the transaction that set it rolls back)."""

    def __init__(self, dialect: TargetDialect, owned: dict[TableId, bool]) -> None:
        self.dialect = dialect
        self._owned = owned

    def write(
        self, cur: Any, target: Target, write: TargetWrite, batch: WritePlan
    ) -> tuple[int, int, int]:
        """One table's batch: its snapshot rows bulk-loaded where the target takes them
        (:meth:`_loads`), the rest applied as deletes and upserts. A load the target
        refused (MySQL: a key already there, a value it warned about) left nothing, and
        the rows are upserted. Returns (copied, deleted, upserted)."""
        changes, kept = write.changes, write.kept_columns
        if write.read_once:  # snapshot rows only, read once (asked before)
            if self._loads(cur, target, batch.pipeline):
                copied = self._copy(cur, target, changes, batch, read_once=True)
                if copied is not None:
                    return copied, 0, 0
            # rows came in since, or the load was refused: merged, and counted again.
            # Recorded before _apply runs: its first action (isEmpty) completes the
            # observation with a part of the rows
            batch.read_through(None)
            return (0, *self._apply(cur, target, changes, batch, kept))
        snapshot = write.snapshot_rows
        if not snapshot or not self._loads(cur, target, batch.pipeline):
            return (0, *self._apply(cur, target, changes, batch, kept))
        copied = self._copy(cur, target, changes, batch)
        if copied is None:
            return (0, *self._apply(cur, target, changes, batch, kept))
        total = write.rows
        if total is not None and total <= snapshot:
            return copied, 0, 0
        rest = changes.where(~batch.is_snapshot_row())
        return (copied, *self._apply(cur, target, rest, batch, kept))

    def _copy(
        self, cur: Any, target: Target, changes: Any, batch: WritePlan, read_once: bool = False
    ) -> int | None:
        """The batch's snapshot rows of ``target`` bulk-loaded (``COPY``, ``LOAD DATA``);
        how many, or None when the target refused them (nothing of them stayed)."""
        rows = csv_blocks(
            changes.where(batch.is_snapshot_row()), target.schema.fields, self.dialect.csv_form
        )
        uncounted = read_once
        if uncounted:
            batch.read_through(None)  # stays last if the read is cut short
        # a task computes the next partition's blocks while the target takes this one's
        blocks = rows.toLocalIterator(prefetchPartitions=True)
        copied = self.dialect.copy_csv(cur, target, ((bytes(b), n) for b, n in blocks))
        if uncounted and copied is not None:
            batch.read_through(rows)  # checked here, before the commit
        return copied

    def _loads(self, cur: Any, target: Target, pipeline: str) -> bool:
        """Whether the batch's snapshot rows of ``target`` go in with the bulk load: where
        the dialect has one, into any target (MySQL/MariaDB, whose load finds keys already
        there itself) or into a target holding ``pipeline``'s rows only (PostgreSQL)."""
        if not self.dialect.copies_csv:
            return False
        return not self.dialect.loads_owned_only or self._owns(cur, target, pipeline)

    def _owns(self, cur: Any, target: Target, pipeline: str) -> bool:
        """Whether ``target`` holds ``pipeline``'s rows only: marked for it, or empty and
        marked now (inside the batch's transaction)."""
        known = self._owned.get(target.source)
        if known is None:
            owner = self.dialect.owner(cur, target)
            known = owner == pipeline or self.dialect.mark_owner(cur, target, pipeline)
            self._owned[target.source] = known
        return known

    def _apply(
        self,
        cur: Any,
        target: Target,
        changes: Any,
        batch: WritePlan,
        kept: tuple[tuple[str, ...], ...] = (),
    ) -> tuple[int, int]:
        """Deletes, then upserts, of one table's batch; returns their counts. A key whose
        last change is a row read again leaves the target's kept columns
        (``TargetWrite.kept_columns``) as they are."""
        from pyspark.sql import functions as F

        if changes.isEmpty():
            return 0, 0
        reduced = last_change_per_key(
            changes, target.key, target.columns, kept, batch.is_reread_row()
        ).persist()
        try:
            fields = list(target.schema.fields)
            key_fields = [f for f in fields if f.name in target.key]
            key_fields.sort(key=lambda f: target.key.index(f.name))
            gone = reduced.filter(F.col(DELETED)).select(
                *[self.dialect.select_for_write(f) for f in key_fields]
            )
            deleted = self._send(
                cur,
                gone.toLocalIterator(),
                [self.dialect.to_target(f) for f in key_fields],
                lambda n: self.dialect.delete_sql(target, n),
                check_bytes=False,
            )
            present = reduced.filter(~F.col(DELETED))
            groups: list[tuple[Any, tuple[str, ...]]] = [(present, ())]
            if any(kept):
                kind = F.col(REREAD)
                groups = [(present.filter(kind.isNull()), ())]
                groups += [(present.filter(kind == i), k) for i, k in enumerate(kept) if k]
            if batch.unchanged:  # rows read again are whole: only the first group lacks values
                groups[:1] = absent_groups(groups[0][0])
            upserted = 0
            written = [self.dialect.select_for_write(f) for f in fields]
            for rows, keep in groups:
                upserted += self._send(
                    cur,
                    rows.select(*written).toLocalIterator(),
                    [self.dialect.to_target(f) for f in fields],
                    lambda n, keep=keep: self.dialect.upsert_sql(target, n, keep),
                    check_bytes=True,
                )
        finally:
            reduced.unpersist()
        return deleted, upserted

    def _send(
        self,
        cur: Any,
        rows: Iterator[Any],
        converters: Sequence[Converter | None],
        statement: Any,
        *,
        check_bytes: bool,
    ) -> int:
        """Send ``rows`` as statements of up to the batch size (and byte budget) each."""
        per_statement = self.dialect.rows_per_statement(len(converters))
        full_sql = statement(per_statement)
        params: list[Any] = []
        pending = size = total = 0
        for row in rows:
            values = [v if c is None else c(v) for c, v in zip(converters, row, strict=True)]
            params.extend(values)
            pending += 1
            if check_bytes:
                size += sum(len(v) for v in values if isinstance(v, str | bytes))
            if pending == per_statement or size >= MAX_STATEMENT_BYTES:
                cur.execute(full_sql if pending == per_statement else statement(pending), params)
                total += pending
                params, pending, size = [], 0, 0
        if pending:
            cur.execute(statement(pending), params)
            total += pending
        return total


def absent_groups(rows: Any) -> list[tuple[Any, tuple[str, ...]]]:
    """``rows`` (reduced, with ``_unchanged``) as groups that each lack one set of columns'
    values (PostgreSQL's changelog-mode upsert: TOASTed values an UPDATE left unchanged),
    with that set: an upsert of a group leaves those columns as the target has them (an
    insert of a new key writes NULL there, docs/design.md). The sets are few (of the
    table's TOASTable columns); a batch without absent values is one group."""
    from pyspark.sql import functions as F

    names = F.array_sort(F.col(UNCHANGED))
    found = rows.where(names.isNotNull()).select(names.alias("n")).distinct().collect()
    groups: list[tuple[Any, tuple[str, ...]]] = [(rows.where(names.isNull()), ())]
    for (absent,) in found:
        wanted = F.array(*[F.lit(n) for n in absent])
        groups.append((rows.where(names == wanted), tuple(absent)))
    return groups

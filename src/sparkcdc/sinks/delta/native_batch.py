"""A batch through the native writer (``writer: native``): every target's rows in one or two
Spark actions, then one delta-rs commit per target.

Spark's part is getting the rows to the driver: the targets that mirror one table of a
many-table batch as it is (``TargetWrite.envelope``) get their rows decoded from the
batch's envelope rows on the executors, all in one plain plan (spark/envelope_fetch.py),
and no DataFrame of their own is made; each other target's changelog rows (a narrow plan
over the batch's cached rows) are fetched together as Arrow (spark/arrow_fetch.py). Both
in groups of at most ``ROWS_PER_FETCH`` counted rows, so the driver holds one group's rows
at a time and a batch of ordinary size is one or two Spark jobs whatever the number of
tables it changes. The rest is Python and delta-rs: the reduction to each key's last
change (sinks/reduce_arrow.py) and the commit.

One commit per target per batch, each carrying Delta's transaction id ``(pipeline,
batch)``, which is how a replayed batch is skipped (delta-rs records the id; the writer
checks it first, sinks/delta/native.py):

- an upsert target of this pipeline alone gets a batch of snapshot rows and new keys only
  (``TargetWrite.inserts_only``) as an append;
- a batch that mixes snapshot rows with log changes there is one merge of both, marked as
  carrying the snapshot rows (sinks/delta/appended.py), bounded by the log changes' first
  key where it is an integer: a snapshot row's key is not in the target, so it cannot
  match and needs no bound, and the merge reads the files the log changes can be in, not
  every file a growing snapshot wrote. Unless the pipeline's own commits say this batch's
  snapshot rows are in already (an older writer's append, then a crash): then the log
  changes alone are merged;
- any other batch is one merge; a history target's batch one append.

Rows read again that leave kept columns alone (``TargetWrite.kept_columns``) are reduced
by Spark in the same action (a shuffle: Spark adds a job for it).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparkcdc.core.changes import CHANGE_COLUMNS, UNCHANGED
from sparkcdc.core.identifiers import quoted
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.delta import native
from sparkcdc.sinks.delta.appended import HISTORY_ROWS, appended_through
from sparkcdc.sinks.delta.commits import commit_metadata
from sparkcdc.sinks.reduce import DELETED, REREAD, last_change_per_key
from sparkcdc.sinks.reduce_arrow import last_change_per_key as last_change_arrow
from sparkcdc.sinks.reduce_arrow import snapshot_rows
from sparkcdc.sinks.write_plan import TargetWrite, WritePlan
from sparkcdc.spark import envelope_fetch
from sparkcdc.spark.arrow_fetch import fetch_groups, to_arrow
from sparkcdc.spark.concurrent_writes import WritesStopped, write_concurrently

if TYPE_CHECKING:
    from sparkcdc.sinks.delta.sink import DeltaSink

log = logging.getLogger(__name__)


#: Whether targets whose rows are one table's envelope rows as they are (``EnvelopeRows``)
#: get them decoded on the executors in one plain Spark action (spark/envelope_fetch.py)
#: rather than through each target's DataFrame (``unpack_table``, unioned). An internal
#: switch, not an option: benchmarks/many_tables.py sets it off to print the old path's
#: figures beside the new in one run.
DECODE_ENVELOPE = True


def write_batch(
    sink: DeltaSink, spark: Any, batch: WritePlan, writes: Sequence[TargetWrite]
) -> None:
    """Every target of ``writes`` (each written by delta-rs), its rows fetched with the
    others' in one Spark action per group (two where some are decoded from the envelope
    and some not), then committed, up to ``concurrent-writes`` targets at once (delta-rs
    works outside Python's lock)."""
    counts = [None if w.read_once else w.rows for w in writes]
    for group in fetch_groups(counts):
        if sink.stopping is not None and sink.stopping():
            raise WritesStopped("the run is stopping: this batch's other targets are not written")
        chosen = [writes[i] for i in group]
        items = list(zip(chosen, _fetched(sink, batch, chosen), strict=True))

        def commit(session: Any, item: tuple[TargetWrite, Any]) -> None:
            write, rows = item
            _commit(sink, session, batch, write, rows)

        threads = sink.config.concurrent_writes
        write_concurrently(spark, items, threads, commit, sink.sessions, sink.stopping)


def decoded_from_envelope(write: TargetWrite) -> bool:
    """Whether ``write``'s rows are fetched from the envelope (spark/envelope_fetch.py)
    without its DataFrame being made: a target of one table's rows as they are, with no
    reduction for Spark (kept columns) and not read once."""
    return (
        DECODE_ENVELOPE
        and write.envelope is not None
        and not write.kept_columns
        and not write.read_once
    )


def _fetched(sink: DeltaSink, batch: WritePlan, writes: Sequence[TargetWrite]) -> list[Any]:
    """The rows of each of ``writes`` as Arrow: those :func:`decoded_from_envelope` in one
    action, the others' DataFrames (made here) in another."""
    direct = {i: w.envelope for i, w in enumerate(writes) if decoded_from_envelope(w)}
    others = [i for i in range(len(writes)) if i not in direct]
    tables: list[Any] = [None] * len(writes)
    fetched = to_arrow([_rows(sink, batch, writes[i]) for i in others])
    for i, rows in zip(others, fetched, strict=True):
        tables[i] = rows
    decoded = envelope_fetch.fetch([e for e in direct.values() if e is not None])
    for i, rows in zip(direct, decoded, strict=True):
        table = sink.tables[writes[i].target]
        absent = [UNCHANGED] if batch.unchanged else []
        tables[i] = rows.select([*table.columns, *CHANGE_COLUMNS, *absent])
    return tables


def _rows(sink: DeltaSink, batch: WritePlan, write: TargetWrite) -> Any:
    """The Spark DataFrame of the target's rows as the commit wants them: the changelog
    rows (the target's columns and the change columns), or, with kept columns, each key's
    last change reduced by Spark (sinks/reduce.py)."""
    table = sink.tables[write.target]
    if sink.upsert and write.kept_columns:
        reread = batch.is_reread_row()
        return last_change_per_key(
            write.changes, table.key, table.columns, write.kept_columns, reread
        )
    absent = [UNCHANGED] if batch.unchanged else []
    return write.changes.select(*[quoted(c) for c in table.columns], *CHANGE_COLUMNS, *absent)


def _commit(sink: DeltaSink, spark: Any, batch: WritePlan, write: TargetWrite, rows: Any) -> None:
    table = sink.tables[write.target]
    location = sink.native_location(write.target)
    assert location is not None  # the sink hands over native targets only
    storage = sink.config.storage_options
    sink.forget_appended(write.target)
    txn = (batch.pipeline, batch.batch_id)
    if not sink.upsert:
        metadata = commit_metadata(batch, write.target, offset=True)
        native.append(location, rows, metadata, *txn, storage)
        return
    target = _Target(location, table, storage)
    if write.kept_columns:
        marked = bool(write.snapshot_rows)
        _merge(target, rows, batch, write, snapshot=marked)
        return
    snapshot = snapshot_rows(rows, batch.snapshot_version)
    if write.read_once:  # one table's snapshot rows, uncounted (pipeline/one_pass.py)
        snapshot = _all(rows.num_rows)
    snapshot_count = _count(snapshot)
    inserted = write.inserts_only
    if not (snapshot_count or inserted) or not sink.appendable(spark, table, batch.pipeline):
        _merge(target, _reduced(table, rows), batch, write)
        return
    if inserted or snapshot_count == rows.num_rows:  # new keys only: an append
        metadata = commit_metadata(batch, write.target, offset=True)
        native.append(location, rows.select(list(table.columns)), metadata, *txn, storage)
        return
    import pyarrow.compute as pc

    log_changes = rows.filter(pc.invert(snapshot))
    history = native.history(location, HISTORY_ROWS, storage)
    appended = appended_through(history, batch.pipeline, batch.batch_id)
    if appended:
        log.info("delta sink: batch %d's snapshot rows are in %s already", batch.batch_id, location)
        _merge(target, _reduced(table, log_changes), batch, write)
        return
    # known not in: the snapshot rows are new keys and the merge is bounded by the log
    # changes'; unknown (a history longer than the look back): a whole, idempotent merge
    bound = _first_key_bound(table, log_changes) if appended is False else None
    _merge(target, _reduced(table, rows), batch, write, snapshot=True, bound=bound)


@dataclass(frozen=True)
class _Target:
    """Where a target is for delta-rs (its URI and ``storage-options``), and its table."""

    location: str
    table: SinkTable
    storage: Mapping[str, str]


def _merge(
    target: _Target,
    last: Any,
    batch: WritePlan,
    write: TargetWrite,
    snapshot: bool = False,
    bound: str | None = None,
) -> None:
    metadata = commit_metadata(batch, write.target, offset=True, snapshot_rows=snapshot)
    native.merge(
        target.location,
        last,
        target.table.key,
        target.table.columns,
        write.kept_columns,
        DELETED,
        REREAD,
        metadata,
        batch.pipeline,
        batch.batch_id,
        bound,
        target.storage,
    )


def _reduced(table: SinkTable, rows: Any) -> Any:
    return last_change_arrow(rows, table.key, table.columns)


def _all(count: int) -> Any:
    import pyarrow as pa

    return pa.array([True] * count, pa.bool_())


def _count(flags: Any) -> int:
    import pyarrow as pa
    import pyarrow.compute as pc

    return int(pc.sum(flags.cast(pa.int64())).as_py() or 0)


def _first_key_bound(table: SinkTable, changes: Any) -> str | None:
    """A predicate on the target's first key column that every row ``changes`` can match
    meets (their least and greatest value), where that column is an integer and none of
    ``changes`` has it NULL (a NULL key matches a NULL key, which a range excludes)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    first = table.key[0]
    column = changes.column(first)
    if changes.num_rows == 0 or column.null_count or not pa.types.is_integer(column.type):
        return None
    bounds = pc.min_max(column)
    low, high = int(bounds["min"].as_py()), int(bounds["max"].as_py())
    name = f"t.{native.sql_name(first)}"
    return f"{name} >= {low} AND {name} <= {high}"

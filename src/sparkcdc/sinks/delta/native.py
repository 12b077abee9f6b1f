"""The Delta sink's native writer (``writer: native``): a target's commits through delta-rs
(the ``deltalake`` package) from the batch's rows as Arrow, without a Spark job per commit.

Spark's MERGE plans and analyses a query and runs a dozen jobs for every target a batch
touches (~4 s a target on a loaded 2-core machine); delta-rs merges the same rows in
~10-25 ms, and Spark's ``readChangeFeed`` of its commit gives the same change rows as
Spark's MERGE (measured for issue 62). What this module knows of delta-rs 1.6.6:

- **Exactly once** is Delta's idempotent-writer ``txn`` action
  (``CommitProperties(app_transactions=[Transaction(app_id, version)])``), the one Spark's
  ``txnAppId``/``txnVersion`` write, under the same app id, so Spark and delta-rs honour
  each other's. delta-rs records it but does not compare it with the version recorded
  before: every write here that carries one checks the recorded version first.
- A merge that changes nothing makes **no commit**, so neither the txn nor the batch's
  offset (``userMetadata``, what ``verify`` reads) would land: :func:`merge` then commits
  an empty transaction carrying both.
- A merge **fails** ("rows failed validation check") when the target has a NOT NULL
  column and a change data feed and the batch inserts a row while it deletes a key the
  target does not hold (a delta-rs bug): such deletes change nothing, so they are dropped
  first, after one read of the target's key columns (bounded by the deleted keys' range
  where the first key is a number).
- delta-rs writes copy-on-write only (never deletion vectors; it does rewrite files that
  have them correctly), and refuses tables with features it cannot write:
  :data:`WRITABLE_FEATURES` is what was verified, anything else is :func:`unsupported`.
- It reaches local folders (and ``file:`` URIs), and S3, Azure and Google Cloud Storage
  with the sink's ``storage-options`` (delta-rs's own keys, passed through as they are:
  Spark's Hadoop settings do not reach it); other storage (``hdfs://``) is refused up
  front.

No pyspark here: rows arrive as Arrow, every target's of a batch from one Spark action
(sinks/delta/native_batch.py, spark/arrow_fetch.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlparse

from sparkcdc.core.changes import UNCHANGED
from sparkcdc.core.errors import SparkCdcError

log = logging.getLogger(__name__)

#: Table features delta-rs 1.6.6 was verified to read and write correctly on tables Spark's
#: Delta 4.4 created (appends, merges with the change feed, files with deletion vectors).
WRITABLE_FEATURES = frozenset(
    {
        "appendOnly",
        "invariants",
        "changeDataFeed",
        "deletionVectors",
        "columnMapping",
        "timestampNtz",
        "checkConstraints",
        "generatedColumns",
        "v2Checkpoint",
    }
)
#: Features sparkcdc's own schema evolution adds (``evolve`` widens a column's type; Delta's
#: DROP FEATURE leaves ``checkpointProtection`` behind): a target that has them is written
#: by Spark's writer from then on, instead of being refused.
SPARK_ONLY_AFTER_EVOLUTION = frozenset({"typeWidening", "checkpointProtection"})
#: A protocol without named features (writer version < 7) implies these by its version.
_LEGACY_WRITER = {2: {"appendOnly", "invariants"}, 3: {"checkConstraints"}}
_LEGACY_WRITER.update(
    {
        4: {"changeDataFeed", "generatedColumns"},
        5: {"columnMapping"},
        6: {"identityColumns"},
    }
)
#: A merge source's column: which set of absent columns a row has (:func:`_absent_sets`).
ABSENT_SET = "_sparkcdc_absent_set"
#: The delta-rs error text of its NOT NULL + change data feed merge bug.
VALIDATION_FAILED = "failed validation check"


#: URI schemes delta-rs reaches (with ``storage-options``, config.NATIVE_SCHEMES), as
#: Spark's names for them map to delta-rs's: Hadoop's ``s3a`` is delta-rs's ``s3``.
SCHEMES = {"s3a": "s3", "s3": "s3", "abfss": "abfss", "abfs": "abfs", "gs": "gs"}


def delta_rs_uri(location: str) -> str | None:
    """A target ``location`` as delta-rs names it: a local folder for a path or a ``file:``
    URI, the object store's URI for S3 (``s3a://`` becomes ``s3://``), Azure (``abfss://``)
    and Google Cloud Storage (``gs://``); None for storage delta-rs does not reach here
    (``hdfs://``, ...)."""
    if "://" not in location and not location.startswith("file:"):
        return location
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    scheme = SCHEMES.get(parsed.scheme.lower())
    if scheme is None:
        return None
    return f"{scheme}://{location.split('://', 1)[1]}"


def open_table(location: str, storage: Mapping[str, str] | None = None) -> Any:
    """The delta-rs table at ``location`` (:func:`delta_rs_uri`), reached with ``storage``
    (the sink's ``storage-options``: credentials, endpoint, region...)."""
    from deltalake import DeltaTable

    return DeltaTable(location, storage_options=dict(storage) if storage else None)


def require() -> None:
    """Fails with the fix when delta-rs is not installed (it comes with the ``delta`` extra)."""
    try:
        import deltalake  # noqa: F401
    except ImportError:
        raise SparkCdcError(
            "'writer: native' in the delta sink block needs the deltalake package: "
            "pip install 'sparkcdc[delta]' (or deltalake==1.6.6), or set 'writer: spark'"
        ) from None


def table_features(location: str, storage: Mapping[str, str] | None = None) -> set[str]:
    """The target's table features: the named ones of a version-7 writer protocol, else
    those its writer version implies."""
    return features_of(open_table(location, storage))


def features_of(target: Any) -> set[str]:
    """:func:`table_features` of ``target``, a delta-rs ``DeltaTable``."""
    protocol = target.protocol()
    named = set(protocol.writer_features or ()) | set(protocol.reader_features or ())
    if protocol.min_writer_version >= 7:
        return named
    implied: set[str] = set()
    for version, features in _LEGACY_WRITER.items():
        if protocol.min_writer_version >= version:
            implied |= features
    return implied | named


def unsupported(features: set[str]) -> list[str]:
    """The features of ``features`` delta-rs is not known to write correctly."""
    return sorted(features - WRITABLE_FEATURES)


def _recorded(target: Any, app_id: str) -> int | None:
    version = target.transaction_version(app_id)
    return None if version is None else int(version)


def _replayed(target: Any, app_id: str, version: int) -> bool:
    """Whether the target recorded ``version`` (or a later one) for ``app_id`` already:
    Delta's own check of a ``txn``, which delta-rs leaves to its caller."""
    done = _recorded(target, app_id)
    if done is None or done < version:
        return False
    log.info("delta native writer: batch %d is in %s already (txn %s)", version, target, app_id)
    return True


def history(
    location: str, limit: int | None, storage: Mapping[str, str] | None = None
) -> list[tuple[int, str | None, str | None]]:
    """``(version, operation, userMetadata)`` of the target's newest ``limit`` commits (all:
    None), newest first, as sinks/delta/appended.py reads them; no Spark job."""
    commits = open_table(location, storage).history(limit)
    rows = [(int(c["version"]), c.get("operation"), c.get("userMetadata")) for c in commits]
    return sorted(rows, key=lambda r: -r[0])


def _commit(metadata: str, app_id: str | None, version: int) -> Any:
    from deltalake import CommitProperties, Transaction

    transactions = [] if app_id is None else [Transaction(app_id, version)]
    return CommitProperties(
        custom_metadata={"userMetadata": metadata}, app_transactions=transactions
    )


def append(
    location: str,
    rows: Any,
    metadata: str,
    app_id: str | None = None,
    version: int = 0,
    storage: Mapping[str, str] | None = None,
) -> bool:
    """Appends ``rows`` (Arrow) in one commit carrying ``metadata`` and, with ``app_id``,
    the txn ``(app_id, version)``, unless the target recorded that already (False)."""
    from deltalake import write_deltalake

    target = open_table(location, storage)
    if app_id is not None and _replayed(target, app_id, version):
        return False
    write_deltalake(
        target, rows, mode="append", commit_properties=_commit(metadata, app_id, version)
    )
    return True


def commit_empty(target: Any, metadata: str, app_id: str, version: int) -> None:
    """A commit of no files into ``target`` (a delta-rs ``DeltaTable``) that records the
    txn and ``metadata`` (the batch's offset)."""
    properties = _commit(metadata, app_id, version)
    target.create_write_transaction(
        [], mode="append", schema=target.schema(), commit_properties=properties
    )


def delete_all(
    location: str,
    metadata: str,
    app_id: str,
    version: int,
    storage: Mapping[str, str] | None = None,
) -> bool:
    """Deletes every row in one commit with the txn, unless the target recorded it already
    (False); an empty target still gets the txn and ``metadata`` (an empty commit), as
    Spark's ``DELETE`` records them."""
    target = open_table(location, storage)
    if _replayed(target, app_id, version):
        return False
    before = target.version()
    target.delete(commit_properties=_commit(metadata, app_id, version))
    if target.version() == before:
        commit_empty(target, metadata, app_id, version)
    return True


def sql_name(name: str) -> str:
    """``name`` as a DataFusion SQL identifier (delta-rs's predicates): in double quotes."""
    return '"' + name.replace('"', '""') + '"'


def merge(
    location: str,
    last: Any,
    key: Sequence[str],
    columns: Sequence[str],
    kept: tuple[tuple[str, ...], ...],
    deleted: str,
    reread: str,
    metadata: str,
    app_id: str,
    version: int,
    bound: str | None = None,
    storage: Mapping[str, str] | None = None,
) -> bool:
    """One merge of each key's last change (``last``: Arrow, the target's columns plus
    ``deleted`` and, with ``kept``, ``reread``; sinks/reduce.py), as the Spark writer's
    MERGE: a deleted key's row goes, a row read again leaves its kind's kept columns as
    they are, other rows update or insert. One commit with the txn, even when nothing
    changes; none when the target recorded the txn already (False: a replay). ``bound``:
    a predicate on the target's columns alone (``t."k" >= 1 AND ...``) that every target
    row a change can match meets; delta-rs skips the files outside it. Absent values
    (``_unchanged`` in ``last``) are left as the target has them (:func:`_keeping_absent`)."""
    target = open_table(location, storage)
    if _replayed(target, app_id, version):
        return False
    last, absent_sets = _absent_sets(last)
    nullable = {f.name: f.nullable for f in target.schema().fields}
    last = _without_absent_deletes(target, last, key, deleted, nullable)
    if last.num_rows == 0:
        commit_empty(target, metadata, app_id, version)
        return True
    # "=" lets delta-rs prune the files the keys cannot be in (with streamed_exec off);
    # a nullable key (a unique key) needs the null-safe form
    equal = {k: "IS NOT DISTINCT FROM" if nullable.get(k, True) else "=" for k in key}
    matches = " AND ".join(f"(t.{sql_name(k)} {equal[k]} s.{sql_name(k)})" for k in key)
    if bound is not None:
        matches += f" AND ({bound})"
    values = {sql_name(c): f"s.{sql_name(c)}" for c in columns}
    before = target.version()
    merger = target.merge(
        last,
        matches,
        source_alias="s",
        target_alias="t",
        streamed_exec=False,
        commit_properties=_commit(metadata, app_id, version),
    ).when_matched_delete(predicate=f"s.{sql_name(deleted)}")
    for kind, columns_kept in enumerate(kept):
        if columns_kept:
            merger = merger.when_matched_update(
                {sql_name(c): f"s.{sql_name(c)}" for c in columns if c not in columns_kept},
                predicate=f"NOT s.{sql_name(deleted)} AND s.{sql_name(reread)} = {kind}",
            )
    merger = _keeping_absent(merger, columns, absent_sets, deleted)
    merger = merger.when_matched_update(values, predicate=f"NOT s.{sql_name(deleted)}")
    merger = merger.when_not_matched_insert(values, predicate=f"NOT s.{sql_name(deleted)}")
    merger.execute()  # updates ``target`` to the version it commits
    if target.version() == before:  # delta-rs made no commit: nothing changed
        commit_empty(target, metadata, app_id, version)
    return True


def _absent_sets(last: Any) -> tuple[Any, list[tuple[str, ...]]]:
    """``last`` without ``_unchanged`` and, when some row lacks values, with
    :data:`ABSENT_SET` (the index of the row's set of absent columns in the list also
    returned; NULL for a whole row)."""
    import pyarrow as pa

    if UNCHANGED not in last.column_names:
        return last, []
    lists = last.column(UNCHANGED)
    last = last.drop_columns([UNCHANGED])
    if lists.null_count == len(lists):
        return last, []
    sets: dict[tuple[str, ...], int] = {}
    index = [
        None if names is None else sets.setdefault(tuple(sorted(names)), len(sets))
        for names in lists.to_pylist()
    ]
    return last.append_column(ABSENT_SET, pa.array(index, pa.int32())), list(sets)


def _keeping_absent(
    merger: Any, columns: Sequence[str], absent_sets: Sequence[tuple[str, ...]], deleted: str
) -> Any:
    """``merger`` with a matched update per set of absent columns the batch has (values
    PostgreSQL's changelog-mode upsert lacks: :func:`_absent_sets`), setting the other
    columns only, so the target keeps its stored values; a batch without absent values
    merges as any other."""
    for i, names in enumerate(absent_sets):
        merger = merger.when_matched_update(
            {sql_name(c): f"s.{sql_name(c)}" for c in columns if c not in names},
            predicate=f"NOT s.{sql_name(deleted)} AND s.{sql_name(ABSENT_SET)} = {i}",
        )
    return merger


def _without_absent_deletes(
    target: Any, last: Any, key: Sequence[str], deleted: str, nullable: Mapping[str, bool]
) -> Any:
    """``last`` without its deletes of keys the target does not hold, where they would
    trip delta-rs's merge bug: a target with a change data feed and a NOT NULL column, and
    a batch that also inserts or updates. Such deletes change nothing."""
    import pyarrow as pa
    import pyarrow.compute as pc

    flags = last.column(deleted)
    deletes = int(pc.sum(flags.cast(pa.int64())).as_py() or 0)
    if deletes == 0 or deletes == last.num_rows or all(nullable.values()):
        return last
    if target.metadata().configuration.get("delta.enableChangeDataFeed") != "true":
        return last
    held = _held_keys(target, last.filter(flags), key)
    keep = pc.or_(pc.invert(flags), _holds(held, last, key, flags))
    dropped = last.num_rows - int(pc.sum(keep.cast(pa.int64())).as_py() or 0)
    if dropped:
        log.debug("delta native writer: %d delete(s) of keys the target lacks dropped", dropped)
    return last.filter(keep)


def _holds(held: Any, rows: Any, key: Sequence[str], among: Any) -> Any:
    """Whether ``held`` (the target's key columns) has each row's key, for the rows
    ``among`` marks (False elsewhere), as the merge matches keys: NULL matches NULL (a
    unique key may hold NULL, and the merge compares it null-safe). Arrow's join never
    matches NULL, so keys with a NULL part are looked up in Python: few rows, the
    target's keys with a NULL part only."""
    import pyarrow as pa
    import pyarrow.compute as pc

    marked = rows.append_column(_ROW, pa.array(range(rows.num_rows), pa.int64()))
    asked = marked.filter(among)
    found = asked.join(held, list(key), join_type="left semi").column(_ROW)
    holds = pc.is_in(marked.column(_ROW), value_set=found)
    nulls = asked.filter(_null_part(asked, key))
    if nulls.num_rows == 0:
        return holds
    partial = held.filter(_null_part(held, key))
    keys = set(zip(*(partial.column(k).to_pylist() for k in key), strict=True))
    rows_of = nulls.column(_ROW).to_pylist()
    asked_keys = zip(*(nulls.column(k).to_pylist() for k in key), strict=True)
    also = [row for row, value in zip(rows_of, asked_keys, strict=True) if value in keys]
    return pc.or_(holds, pc.is_in(marked.column(_ROW), value_set=pa.array(also, pa.int64())))


def _null_part(rows: Any, key: Sequence[str]) -> Any:
    """Whether each row's key has a NULL part."""
    import pyarrow as pa
    import pyarrow.compute as pc

    flags = pa.array([False] * rows.num_rows, pa.bool_())
    for name in key:
        flags = pc.or_(flags, pc.is_null(rows.column(name)))
    return flags


#: A column numbering a batch's rows while its keys are looked up.
_ROW = "_sparkcdc_row"


def _held_keys(target: Any, deletes: Any, key: Sequence[str]) -> Any:
    """The target's key columns (Arrow), read with delta-rs's query engine (it honours
    deletion vectors), bounded by the deleted keys' range (and NULL, where one of them
    has it) where the first key is an integer."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import QueryBuilder

    first = key[0]
    where = ""
    if pa.types.is_integer(deletes.schema.field(first).type):
        bounds = pc.min_max(deletes.column(first))
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if low is not None and high is not None:
            where = f" WHERE {sql_name(first)} BETWEEN {int(low)} AND {int(high)}"
            if deletes.column(first).null_count:  # a NULL part matches NULL
                where += f" OR {sql_name(first)} IS NULL"
    select = ", ".join(sql_name(k) for k in key)
    reader = QueryBuilder().register("t", target).execute(f"SELECT {select} FROM t{where}")
    held = pa.table(reader.read_all())
    return held.cast(pa.schema([deletes.schema.field(k) for k in key]))


def refusal(location: str, source: object, features: Sequence[str]) -> SparkCdcError:
    """The error of a target the native writer cannot write, with the way out."""
    return SparkCdcError(
        f"the Delta table at {location} for {source} has table feature(s) "
        f"{', '.join(features)}, which the native writer (delta-rs) cannot write: set "
        "'writer: spark' in the sink block to write it with Spark's Delta writer"
    )

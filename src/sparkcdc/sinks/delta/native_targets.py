"""The native writer's targets by folder (``writer: native`` with ``path``): checked
through delta-rs, and created by writing their first commit, without a Spark call per
target.

Creating a target with Spark's Delta API costs the driver ~0.1 s a table (a Spark
transaction, its log written, its snapshot loaded) and checking an existing one about as
much (``isDeltaTable``, its schema read through a Delta snapshot): a pipeline of 1000
tables paid ~120 s before its first batch, and ~45 s at every restart (issue 62). Opening
one with delta-rs takes milliseconds, outside Python's lock.

A target created here must be the one Spark would have made, so Spark, Databricks and
Spark's writer (which takes a widened target over) read and write it alike: the same
columns (the schema is Spark's own JSON, which is Delta's), partition columns, properties
and protocol (:func:`spark_features`, Delta 4's for those properties; a test compares
them with a target Spark created). delta-rs's own ``DeltaTable.create`` cannot give that
protocol: 1.6.6 adds ``variantType`` to every table-features protocol it creates (a
feature older readers refuse) and keeps ``delta.feature.*`` keys among the properties. So
the first commit (``commitInfo``, ``protocol``, ``metaData``: Delta's protocol
specification) is written here, into local folders only, the way Delta's local log store
commits (a whole file linked into place, failing where one is there). Targets on object
stores, and what was not verified (:func:`creatable` says False: column mapping for odd
column names, other protocol properties, types outside the common ones), are created
by Spark.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sparkcdc.core.crash_points import DELTA_COMMIT_STAGED, crash_point
from sparkcdc.core.errors import SparkCdcError

#: ``delta.`` properties a natively created target may carry, with the values it may
#: have: the two sparkcdc sets, in the spelling Spark would store. Any other (a user's
#: ``table.properties.delta.*``: Spark checks and normalises their values) leaves the
#: creation to Spark.
NATIVE_PROPERTIES = {
    "delta.enableChangeDataFeed": ("true", "false"),
    "delta.enableDeletionVectors": ("true", "false"),
}
#: Session settings whose values Spark's Delta gives every table it creates.
SESSION_DEFAULTS = "spark.databricks.delta.properties.defaults."
#: Spark type names (as its schema JSON spells them) a native target was verified with.
_SIMPLE_TYPES = frozenset(
    {
        "boolean",
        "byte",
        "short",
        "integer",
        "long",
        "float",
        "double",
        "string",
        "binary",
        "date",
        "timestamp",
        "timestamp_ntz",
    }
)
#: The first commit's file in a table's ``_delta_log``.
FIRST_COMMIT = "00000000000000000000.json"
#: The end of the name of the file :func:`create` stages the first commit in
#: (``.<uuid4>.json.tmp``: hidden, and no version's name, so Delta readers skip it).
STAGED = ".json.tmp"
_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_STAGED_NAME = re.compile(rf"\.{_UUID}\.json\.tmp")
#: ``engineInfo`` of the commit that creates a target (Spark's says ``Apache-Spark/...``).
ENGINE = "sparkcdc"
#: The features every table Spark's Delta 4 creates at writer version 7 lists, whatever
#: its properties (the legacy writer version 2's).
_BASE_WRITER_FEATURES = ("appendOnly", "invariants")


def creatable(
    location: str, schema: Any, properties: Mapping[str, str], session_defaults: bool = False
) -> bool:
    """Whether :func:`create` makes the target of ``schema`` (a Spark StructType) with
    ``properties`` at ``location`` (delta-rs's name for it) as Spark would: a local
    folder, every type among the verified ones, no ``delta.`` property (in any case)
    outside :data:`NATIVE_PROPERTIES` and its values, and no Delta default set in the
    session (``session_defaults``, :func:`has_session_defaults`)."""
    if "://" in location or session_defaults:
        return False
    for key, value in properties.items():
        if key.lower().startswith("delta.") and value not in NATIVE_PROPERTIES.get(key, ()):
            return False
    return all(_verified(f["type"]) for f in schema.jsonValue()["fields"])


def has_session_defaults(spark: Any) -> bool:
    """Whether the session sets Delta defaults for new tables (:data:`SESSION_DEFAULTS`:
    a column mapping, a protocol version, row tracking...), which Spark's create applies
    and :func:`create` does not: one call per sink, not per target."""
    return any(k.startswith(SESSION_DEFAULTS) for k in spark.conf.getAll)


def _verified(kind: Any) -> bool:
    if isinstance(kind, str):
        return kind in _SIMPLE_TYPES or kind.startswith("decimal(")
    if kind.get("type") == "struct":
        return all(_verified(f["type"]) for f in kind["fields"])
    if kind.get("type") == "array":
        return _verified(kind["elementType"])
    if kind.get("type") == "map":
        return _verified(kind["keyType"]) and _verified(kind["valueType"])
    return False


def spark_features(
    properties: Mapping[str, str], schema: Any
) -> tuple[int, int, set[str], set[str]]:
    """The protocol Spark's Delta 4 gives a new table of ``schema`` with ``properties``
    (those :func:`creatable` allows): reader and writer versions, reader and writer
    features (a ``timestamp_ntz`` column anywhere adds ``timestampNtz`` to both)."""
    reader: set[str] = set()
    writer: set[str] = set()
    if properties.get("delta.enableChangeDataFeed") == "true":
        writer.add("changeDataFeed")
    if properties.get("delta.enableDeletionVectors") == "true":
        reader.add("deletionVectors")
    if any(_has_ntz(f["type"]) for f in schema.jsonValue()["fields"]):
        reader.add("timestampNtz")
    writer |= reader
    if not writer:
        return 1, 2, set(), set()
    writer.update(_BASE_WRITER_FEATURES)
    return (3 if reader else 1), 7, reader, writer


def _has_ntz(kind: Any) -> bool:
    if isinstance(kind, str):
        return kind == "timestamp_ntz"
    if kind.get("type") == "struct":
        return any(_has_ntz(f["type"]) for f in kind["fields"])
    if kind.get("type") == "array":
        return _has_ntz(kind["elementType"])
    if kind.get("type") == "map":
        return _has_ntz(kind["keyType"]) or _has_ntz(kind["valueType"])
    return False


def create(
    folder: str,
    schema: Any,
    partition_keys: Sequence[str],
    properties: Mapping[str, str],
    description: str | None = None,
) -> None:
    """Creates the target in the local ``folder`` as Spark would (see the module): its
    first commit, written whole and then linked into place, so it appears complete or not
    at all, and fails where a commit 0 is there already (another process made the
    table: not ours), as Delta's own local log store does. Column comments travel in
    ``schema``'s field metadata, the table's as ``description``, where Spark keeps them.
    A process killed at any point leaves the commit whole or none of it, and a staged file
    left behind is removed by the next create (:func:`staged_files`). Nothing is fsynced:
    Delta's later commits (delta-rs's, Spark's local log store) are not either, so what a
    power loss keeps is the file system's, as for them; syncing only this one cost ~15 ms
    a target, +15 s for a 1000-table pipeline's first start (measured 2026-12-05)."""
    actions = first_commit(schema, partition_keys, properties, description)
    log_folder = Path(folder) / "_delta_log"
    log_folder.mkdir(parents=True, exist_ok=True)
    for leftover in staged_files(log_folder):  # a create a crash cut short
        leftover.unlink(missing_ok=True)
    staged = log_folder / f".{uuid.uuid4()}{STAGED}"
    with staged.open("x", encoding="utf-8") as out:
        out.write("".join(json.dumps(action) + "\n" for action in actions))
    crash_point(DELTA_COMMIT_STAGED)  # the tests' kill (core/crash_points.py)
    try:
        os.link(staged, log_folder / FIRST_COMMIT)
    except (FileExistsError, FileNotFoundError):  # its commit 0, or it removed our file
        raise SparkCdcError(
            f"a Delta table appeared at {folder} while the sink created it there: another "
            "process writes that folder; give each pipeline its own targets"
        ) from None
    finally:
        staged.unlink(missing_ok=True)


def staged_files(log_folder: Path) -> list[Path]:
    """The first commits :func:`create` staged in ``log_folder`` and a crash left there
    (never linked, or linked and not yet removed: commit 0 is its own file then). Delta
    readers skip them (hidden, no version's name); the next create of the folder removes
    them (one left beside a commit 0 stays: the table exists, no create comes again)."""
    return [p for p in log_folder.iterdir() if _STAGED_NAME.fullmatch(p.name)]


def first_commit(
    schema: Any,
    partition_keys: Sequence[str],
    properties: Mapping[str, str],
    description: str | None,
) -> list[dict[str, Any]]:
    """The actions of a new target's first commit (``commitInfo``, ``protocol``,
    ``metaData``), as Spark's Delta 4 writes them for a ``CREATE TABLE``."""
    reader_version, writer_version, reader, writer = spark_features(properties, schema)
    protocol: dict[str, Any] = {
        "minReaderVersion": reader_version,
        "minWriterVersion": writer_version,
    }
    if reader_version >= 3:
        protocol["readerFeatures"] = sorted(reader)
    if writer_version >= 7:
        protocol["writerFeatures"] = sorted(writer)
    now = int(time.time() * 1000)
    parameters = {
        "partitionBy": json.dumps(list(partition_keys)),
        "clusterBy": "[]",
        "description": description,
        "isManaged": "false",
        "properties": json.dumps(dict(properties)),
    }
    info = {
        "timestamp": now,
        "operation": "CREATE TABLE",
        "operationParameters": parameters,
        "isolationLevel": "Serializable",
        "isBlindAppend": True,
        "operationMetrics": {},
        "engineInfo": ENGINE,
        "txnId": str(uuid.uuid4()),
    }
    metadata = {
        "id": str(uuid.uuid4()),
        "format": {"provider": "parquet", "options": {}},
        **({"description": description} if description is not None else {}),
        "schemaString": schema.json(),
        "partitionColumns": list(partition_keys),
        "configuration": dict(properties),
        "createdTime": now,
    }
    return [{"commitInfo": info}, {"protocol": protocol}, {"metaData": metadata}]


def existing(location: str, storage: Mapping[str, str] | None = None) -> Any | None:
    """The delta-rs table at ``location``, None when there is none."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(location, storage_options=dict(storage) if storage else None)
    except TableNotFoundError:
        return None


def columns(target: Any) -> dict[str, Any]:
    """The target's columns and their Spark types, from its Delta schema (Spark's JSON)."""
    from pyspark.sql.types import StructType

    schema = StructType.fromJson(json.loads(target.schema().to_json()))
    return {f.name: f.dataType for f in schema.fields}

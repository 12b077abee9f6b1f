"""Every type through Spark: the same rows read by the snapshot and from the binlog come out
of the typed stream identical, equal to what was written, and the multi-table envelope
round-trips them losslessly back to the same typed values."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from sparkcdc.embedded import EmbeddedMariaDB
from tests.integration.test_mysql_types_roundtrip import DDL, INSERTS, insert
from tests.support.changelog import ChangelogReplayer
from tests.support.streams import run_available_now

SHIFT = 100  # binlog copies of the snapshot rows get id + SHIFT


def spark_value(value: Any) -> Any:
    """A canonical Python value as Spark hands it back (session time zone is UTC)."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def plain(row: dict[str, Any]) -> dict[str, Any]:
    return {k: bytes(v) if isinstance(v, bytearray) else v for k, v in row.items()}


def test_all_types_same_in_snapshot_binlog_and_envelope(
    spark: Any, mariadb: EmbeddedMariaDB, mysql_db: str, scratch: Path
) -> None:
    from sparkcdc.spark.envelope import table_schema, unpack_table

    mariadb.execute(DDL, database=mysql_db)
    mariadb.execute("CREATE TABLE other (id INT PRIMARY KEY)", database=mysql_db)
    for written, _ in INSERTS.values():
        insert(mariadb, mysql_db, written)
    base = {**mariadb.source_options(), "database-name": mysql_db}
    typed_options = {**base, "table-name": "all_types"}
    envelope_options = {**base, "table-name": "all_types|other"}
    schema = table_schema(spark, envelope_options, mysql_db, "all_types")
    columns = [f.name for f in schema.fields]
    typed = ChangelogReplayer(lambda r: r["id"], columns)
    unpacked = ChangelogReplayer(lambda r: r["id"], columns)

    def each_typed(batch: Any, _: int) -> None:
        typed.apply_batch(plain(r.asDict()) for r in batch.collect())

    def each_envelope(batch: Any, _: int) -> None:
        rows = unpack_table(batch, mysql_db, "all_types", schema).collect()
        unpacked.apply_batch(plain(r.asDict()) for r in rows)

    run_available_now(spark, typed_options, scratch / "typed", each_typed)
    run_available_now(spark, envelope_options, scratch / "envelope", each_envelope)
    for written, _ in INSERTS.values():  # the same rows again, through the binlog
        insert(mariadb, mysql_db, {**written, "id": written["id"] + SHIFT})
    run_available_now(spark, typed_options, scratch / "typed", each_typed)
    run_available_now(spark, envelope_options, scratch / "envelope", each_envelope)

    for replayer in (typed, unpacked):
        got = {k: dict(zip(columns, v, strict=True)) for k, v in replayer.state.items()}
        for key, (_, expected) in INSERTS.items():
            want = {c: spark_value(v) for c, v in expected.items()}
            assert got[key] == want, f"snapshot row {key}"
            assert got[key + SHIFT] == {**want, "id": key + SHIFT}, f"binlog row {key}"

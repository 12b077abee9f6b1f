"""What is particular to the PostgreSQL source (the conformance suite covers the rest):
set-up checks naming the fix, TOASTed values, the slot's life, and changes it refuses."""

from __future__ import annotations

import json
import logging
import pickle
import time
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.connectors.postgres.server.types import PgValueError
from sparkcdc.connectors.postgres.wal.pgoutput import lsn_from_text
from sparkcdc.connectors.registry import connector
from sparkcdc.core.errors import (
    PositionLostError,
    RestartForSchemaError,
    SchemaError,
    SourceConfigurationError,
)
from sparkcdc.core.table import TableId
from sparkcdc.embedded import EmbeddedPostgres
from sparkcdc.snapshot.driver import IncrementalSource
from tests.support.changelog import ChangelogReplayer
from tests.support.inprocess import run_batches


class Database:
    """One test database on the harness's server, with a slot named after it."""

    def __init__(self, server: EmbeddedPostgres, name: str) -> None:
        self.server, self.name = server, name
        self.slot = f"s_{name[-6:]}"

    def execute(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        return self.server.execute(sql, args, dbname=self.name)

    def options(self, **extra: str) -> dict[str, str]:
        return {
            "hostname": self.server.host,
            "port": str(self.server.port),
            "username": self.server.user,
            "password": self.server.password,
            "database-name": self.name,
            "schema-name": "public",
            "table-name": "t",
            "slot.name": self.slot,
            **extra,
        }

    def source(self, **extra: str) -> IncrementalSource[Any, Any]:
        found = connector("postgres")
        created: IncrementalSource[Any, Any] = found.source(
            found.parse_config(self.options(**extra))
        )
        return created

    def slot_confirmed(self) -> int:
        ((lsn,),) = self.execute(
            "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
            (self.slot,),
        )
        return lsn_from_text(str(lsn))


@pytest.fixture
def db(postgres: EmbeddedPostgres, pg_db: str) -> Iterator[Database]:
    database = Database(postgres, pg_db)
    yield database
    database.execute(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
        (database.slot,),
    )


def table(db: Database, columns: str = "id INT PRIMARY KEY, v TEXT", full: bool = True) -> None:
    db.execute(f"CREATE TABLE t ({columns})")
    if full:
        db.execute("ALTER TABLE t REPLICA IDENTITY FULL")


def test_set_up_problems_name_the_fix(db: Database) -> None:
    table(db, full=False)
    with pytest.raises(SchemaError, match=r'ALTER TABLE "public"\."t" REPLICA IDENTITY FULL'):
        db.source().tables  # noqa: B018
    db.execute("ALTER TABLE t REPLICA IDENTITY FULL")
    db.execute("CREATE TABLE nokey (v INT)")
    with pytest.raises(SchemaError, match="matches only tables without a primary key"):
        db.source(**{"table-name": "nokey"}).tables  # noqa: B018
    with pytest.raises(SourceConfigurationError, match=r"no table .* matches"):
        db.source(**{"table-name": "missing"}).tables  # noqa: B018
    with pytest.raises(SourceConfigurationError, match=r"CREATE PUBLICATION .* FOR TABLE"):
        db.source(**{"publication.autocreate.mode": "disabled"}).tables  # noqa: B018

    db.execute("CREATE ROLE reader LOGIN PASSWORD 'reader-pw'")
    reader = {"username": "reader", "password": "reader-pw"}
    try:
        with pytest.raises(SourceConfigurationError, match=r'ALTER ROLE "reader" REPLICATION'):
            db.source(**reader).tables  # noqa: B018
        db.execute("ALTER ROLE reader REPLICATION")
        with pytest.raises(SourceConfigurationError, match=r'GRANT SELECT ON "public"\."t"'):
            db.source(**reader).tables  # noqa: B018
        db.execute("GRANT SELECT ON t TO reader")
        with pytest.raises(SourceConfigurationError, match="must be owned") as refused:
            db.source(**reader).tables  # noqa: B018
        assert f'CREATE PUBLICATION "{db.slot}" FOR TABLE "public"."t"' in str(refused.value)
        db.execute(f'CREATE PUBLICATION "{db.slot}" FOR TABLE t')  # an owner does it
        assert list(db.source(**reader).tables) != []  # a read-only user captures now
    finally:
        db.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            "WHERE slot_name = %s",
            (db.slot,),
        )
        db.execute("DROP OWNED BY reader")
        db.execute("DROP ROLE reader")


def test_a_keyless_table_in_a_pattern_is_left_out_and_chunk_keys_go_per_table(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    """The keyed tables are captured (each chunked on the column the per-table form names,
    or its primary key), the keyless one is left out with a warning naming it and stays out
    of the publication: a publication holding a table without a replica identity would make
    the server refuse that table's UPDATEs and DELETEs."""
    table(db, "id INT PRIMARY KEY, k INT NOT NULL, v TEXT")
    db.execute("CREATE TABLE t2 (id INT PRIMARY KEY, k INT NOT NULL)")
    db.execute("ALTER TABLE t2 REPLICA IDENTITY FULL")
    db.execute("CREATE TABLE nokey (v INT)")
    db.execute("INSERT INTO nokey VALUES (1), (1)")
    with caplog.at_level(logging.WARNING, logger="sparkcdc.snapshot.keyless"):
        found = db.source(
            **{
                "table-name": "t|t2|nokey",
                "scan.incremental.snapshot.chunk.key-column": "public.t:k;other.t2:k",
            }
        ).tables
    assert {str(t): v.chunk_key for t, v in found.items()} == {"public.t": "k", "public.t2": "id"}
    warned = [r.getMessage() for r in caplog.records if r.name == "sparkcdc.snapshot.keyless"]
    assert len(warned) == 1
    assert "table public.nokey has no primary key: not captured" in warned[0]
    published = db.execute("SELECT tablename FROM pg_publication_tables ORDER BY tablename")
    assert [name for (name,) in published] == ["t", "t2"]
    db.execute("UPDATE nokey SET v = 2")  # the server still takes the keyless table's updates


def test_a_captured_table_that_lost_its_primary_key_fails_the_restart(db: Database) -> None:
    """Left out at the restart it would lose its changes since the checkpoint: the restart
    fails naming the table and the reason."""
    table(db, "id INT PRIMARY KEY, v INT")
    db.execute("CREATE TABLE u (id INT PRIMARY KEY)")
    db.execute("ALTER TABLE u REPLICA IDENTITY FULL")
    db.execute("INSERT INTO t VALUES (1, 1)")
    offset = run_batches(db.source(**{"table-name": "t|u"}), None, lambda rows: None)
    db.execute("ALTER TABLE t DROP CONSTRAINT t_pkey")
    db.execute("INSERT INTO t VALUES (1, 1)")
    restarted = db.source(**{"table-name": "t|u"})
    with pytest.raises(
        SchemaError, match=r"table public\.t is captured by the checkpoint, but it has no primary"
    ):
        run_batches(restarted, offset, lambda rows: None)


def test_a_created_table_waits_until_ready_and_a_publication_it_cannot_extend_names_the_fix(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 64: a one-table pattern stream watching for created tables. A matching table
    that is not REPLICA IDENTITY FULL waits (warned with the fix, not captured); one the
    stream's user cannot add to the owner's publication stops it with the statement an
    owner must run."""
    table(db)
    db.execute("INSERT INTO t VALUES (1, 'one')")
    db.execute("CREATE ROLE watcher LOGIN REPLICATION PASSWORD 'watcher-pw'")
    try:
        db.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO watcher")
        db.execute("ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO watcher")
        db.execute(f'CREATE PUBLICATION "{db.slot}" FOR TABLE t')  # the owner's
        source = db.source(
            **{
                "username": "watcher",
                "password": "watcher-pw",
                "table-name": "t.*",
                "scan.newly-added-table.enabled": "true",
                "heartbeat.interval": "0s",
            }
        )
        rows: list[dict[str, Any]] = []
        start = run_batches(source, None, rows.extend)
        assert source.catalog.envelope, "a pattern watched for created tables may grow"
        db.execute("CREATE TABLE t_waits (id INT PRIMARY KEY)")  # REPLICA IDENTITY DEFAULT
        db.execute("CREATE TABLE t_keyless (v INT)")  # left out: the stream still moves on
        db.execute("INSERT INTO t_keyless VALUES (1)")
        db.execute("INSERT INTO t_waits VALUES (1)")
        db.execute("UPDATE t SET v = 'uno' WHERE id = 1")
        with caplog.at_level(logging.WARNING):
            start = run_batches(source, start, rows.extend)
        # the messages, not caplog.text: a JSON log format set up earlier in the same
        # process escapes the quotes there
        said = "\n".join(r.getMessage() for r in caplog.records)
        assert 'ALTER TABLE "public"."t_waits" REPLICA IDENTITY FULL;' in said
        assert "public.t_keyless was created" in said
        assert [r["_change_type"] for r in rows] == ["insert", "update"]  # the stream moved on
        assert {r["table_name"] for r in rows} == {"t"}
        table_names = [TableId("public", "t")]
        assert list(source.catalog.tables) == table_names
        db.execute("CREATE TABLE t_new (id INT PRIMARY KEY)")
        db.execute("ALTER TABLE t_new REPLICA IDENTITY FULL")
        with pytest.raises(SourceConfigurationError, match="must be owned") as refused:
            run_batches(source, start, rows.extend)
        assert f'ALTER PUBLICATION "{db.slot}" ADD TABLE "public"."t_new";' in str(refused.value)
    finally:
        db.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            "WHERE slot_name = %s",
            (db.slot,),
        )
        db.execute("DROP OWNED BY watcher")
        db.execute("DROP ROLE watcher")


def test_a_server_without_logical_decoding_is_refused() -> None:
    with EmbeddedPostgres(settings={"wal_level": "replica"}) as server:
        server.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        found = connector("postgres")
        options = Database(server, "postgres").options()
        with pytest.raises(SourceConfigurationError, match="ALTER SYSTEM SET wal_level = logical"):
            found.source(found.parse_config(options)).tables  # noqa: B018


def test_unchanged_toasted_values_come_from_the_old_row(db: Database) -> None:
    table(db, "id INT PRIMARY KEY, big TEXT, n INT")
    db.execute("ALTER TABLE t ALTER COLUMN big SET STORAGE EXTERNAL")  # out of line, uncompressed
    big = "x" * 20_000 + "end"
    db.execute("INSERT INTO t VALUES (1, %s, 0)", (big,))
    source = db.source(**{"scan.startup.mode": "latest-offset"})
    start = source.initial_offset()
    db.execute("UPDATE t SET n = 1")  # pgoutput does not resend the TOASTed value
    rows: list[dict[str, Any]] = []
    run_batches(source, start, rows.extend)
    assert [(r["_change_type"], r["n"], r["big"] == big) for r in rows] == [
        ("update_preimage", 0, True),
        ("update_postimage", 1, True),
    ]


def test_changelog_mode_upsert_captures_default_and_key_index_identities(db: Database) -> None:
    """DEFAULT and USING INDEX on the key are captured in upsert mode (and refused in
    ``all`` naming both ways out); another index and NOTHING are refused naming DEFAULT.
    Updates are post-images alone, deletes and moved keys carry the key only."""
    table(db, "id INT PRIMARY KEY, v TEXT, u INT NOT NULL UNIQUE", full=False)
    with pytest.raises(SchemaError, match=r"REPLICA IDENTITY FULL;.*changelog-mode: upsert"):
        db.source().tables  # noqa: B018
    upsert = {"changelog-mode": "upsert"}
    db.execute("ALTER TABLE t REPLICA IDENTITY USING INDEX t_u_key")
    with pytest.raises(SchemaError, match=r"USING INDEX on \(u\), not the primary key"):
        db.source(**upsert).tables  # noqa: B018
    db.execute("ALTER TABLE t REPLICA IDENTITY NOTHING")
    with pytest.raises(SchemaError, match=r'IDENTITY NOTHING.*"t" REPLICA IDENTITY DEFAULT;'):
        db.source(**upsert).tables  # noqa: B018
    for identity in ("USING INDEX t_pkey", "DEFAULT"):
        db.execute(f"ALTER TABLE t REPLICA IDENTITY {identity}")
        db.execute("TRUNCATE t")
        db.execute("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)")
        source = db.source(**upsert, **{"scan.startup.mode": "latest-offset"})
        start = source.initial_offset()
        db.execute("UPDATE t SET v = 'A' WHERE id = 1")
        db.execute("UPDATE t SET id = 3 WHERE id = 2")
        db.execute("DELETE FROM t WHERE id = 1")
        rows: list[dict[str, Any]] = []
        run_batches(source, start, rows.extend)
        assert [(r["_change_type"], r["id"], r["v"], r["u"]) for r in rows] == [
            ("update_postimage", 1, "A", 1),
            ("update_preimage", 2, None, None),  # the moved key's old key only
            ("update_postimage", 3, "b", 2),
            ("delete", 1, None, None),
        ], identity
        replayer = ChangelogReplayer(lambda r: r["id"], ["id", "v", "u"], by_key=True)
        replayer.state = {1: (1, "a", 1), 2: (2, "b", 2)}
        replayer.apply_batch(rows)
        assert replayer.state == {r[0]: tuple(r) for r in db.execute("SELECT * FROM t")}
        db.execute("SELECT pg_drop_replication_slot(%s)", (db.slot,))


def test_changelog_mode_upsert_gives_an_unchanged_toasted_value_as_absent(db: Database) -> None:
    """An UPDATE that leaves a TOASTed value of a DEFAULT table unchanged: the value is
    absent (NULL, named by ``_unchanged``), never a placeholder; a key move that leaves one
    fails the read with the fix; a FULL table in upsert mode takes it from the old row."""
    table(db, "id INT PRIMARY KEY, big TEXT, n INT", full=False)
    db.execute("ALTER TABLE t ALTER COLUMN big SET STORAGE EXTERNAL")
    big = "x" * 20_000 + "end"
    db.execute("INSERT INTO t VALUES (1, %s, 0)", (big,))
    upsert = {"changelog-mode": "upsert", "scan.startup.mode": "latest-offset"}
    source = db.source(**upsert)
    start = source.initial_offset()
    db.execute("UPDATE t SET n = 1")
    db.execute("UPDATE t SET n = 2, big = 'small'")
    rows: list[dict[str, Any]] = []
    run_batches(source, start, rows.extend)
    assert [(r["_change_type"], r["n"], r["big"], r["_unchanged"]) for r in rows] == [
        ("update_postimage", 1, None, ["big"]),
        ("update_postimage", 2, "small", None),
    ]
    db.execute("SELECT pg_drop_replication_slot(%s)", (db.slot,))
    db.execute("UPDATE t SET big = %s", (big,))
    source = db.source(**upsert)
    start = source.initial_offset()
    db.execute("UPDATE t SET id = 2")
    with pytest.raises(SchemaError, match=r"changed the primary key and left the TOASTed"):
        run_batches(source, start, lambda rows: None)
    db.execute("SELECT pg_drop_replication_slot(%s)", (db.slot,))
    db.execute("ALTER TABLE t REPLICA IDENTITY FULL")
    source = db.source(**upsert)
    start = source.initial_offset()
    db.execute("UPDATE t SET n = 3")
    rows = []
    run_batches(source, start, rows.extend)
    assert [(r["_change_type"], r["n"], r["big"] == big, r["_unchanged"]) for r in rows] == [
        ("update_postimage", 3, True, None)
    ]


def test_a_truncate_fails_loudly_and_a_column_change_restarts_a_one_table_stream(
    db: Database,
) -> None:
    table(db)
    db.execute("INSERT INTO t VALUES (1, 'a')")
    source = db.source(**{"scan.startup.mode": "latest-offset"})
    start = source.initial_offset()
    db.execute("TRUNCATE t")
    with pytest.raises(SchemaError, match=r"TRUNCATE of public\.t .*truncate\.handling\.mode"):
        run_batches(source, start, lambda rows: None)

    db.execute("INSERT INTO t VALUES (2, 'b')")
    later = db.source(**{"scan.startup.mode": "latest-offset"})
    start = later.initial_offset()
    db.execute("ALTER TABLE t ADD COLUMN w INT")
    db.execute("ALTER TABLE t RENAME COLUMN v TO u")
    db.execute("INSERT INTO t VALUES (3, 'c', 3)")
    ends: list[Any] = []
    with pytest.raises(RestartForSchemaError, match=r"the columns of public\.t changed"):
        run_batches(later, start, lambda rows: None, ends=ends)
    stored = ends[-1]["tables"]["public.t"]["schema"]
    assert stored["renamed"] == {"v": "u"} and "add column w" in stored["change"]
    restarted = db.source(**{"scan.startup.mode": "latest-offset"})
    rows: list[dict[str, Any]] = []
    run_batches(restarted, ends[-1], rows.extend)
    assert [(r["id"], r["u"], r["w"]) for r in rows] == [(3, "c", 3)]


def test_a_column_added_with_a_default_has_the_rows_there_read_again(db: Database) -> None:
    """PostgreSQL gives the rows there an added column's default without a row change in
    the WAL: the stream reads them again after the change; a plain column needs no read."""
    table(db)
    db.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    stream = db.source()  # a one-table stream: it stops at a change, for a new one
    offset = run_batches(stream, None, lambda rows: None)  # the snapshot
    rows: list[dict[str, Any]] = []
    try:
        for ddl, inserted, again in [
            ("ADD COLUMN plain INT", "(3, 'c', 3)", []),
            ("ADD COLUMN w INT NOT NULL DEFAULT 7", "(4, 'd', 4, 8)", [1, 2, 3, 4]),
        ]:
            db.execute(f"ALTER TABLE t {ddl}")
            db.execute(f"INSERT INTO t VALUES {inserted}")
            ends: list[Any] = []
            with pytest.raises(RestartForSchemaError):
                run_batches(stream, offset, lambda rows: None, ends=ends)
            stream.close()
            stream = db.source()
            rows.clear()
            offset = run_batches(stream, ends[-1], rows.extend)
            assert [r["id"] for r in rows] == [int(inserted[1]), *again]
        assert [r["w"] for r in rows] == [8, 7, 7, 7, 8]
    finally:
        stream.close()


def test_a_column_change_then_a_truncate_are_followed_in_their_order(db: Database) -> None:
    """pgoutput describes a table before truncating it too: an ALTER TABLE then a TRUNCATE
    with no row change between are the column change's batch, then the truncate's."""
    table(db)
    db.execute("INSERT INTO t VALUES (1, 'a')")
    options = {"truncate.handling.mode": "skip", "scan.startup.mode": "latest-offset"}
    source = db.source(**options)
    start = source.initial_offset()
    db.execute("ALTER TABLE t ADD COLUMN w INT")
    db.execute("TRUNCATE t")
    db.execute("INSERT INTO t VALUES (2, 'b', 2)")
    ends: list[Any] = []
    with pytest.raises(RestartForSchemaError):
        run_batches(source, start, lambda rows: None, ends=ends)
    schema = ends[-1]["tables"]["public.t"]["schema"]
    assert "add column w" in schema["change"] and "truncated" not in schema
    rows: list[dict[str, Any]] = []
    restarted = db.source(**options)
    try:
        run_batches(restarted, ends[-1], rows.extend, ends=ends)
    finally:
        restarted.close()
    assert "truncated" in ends[-1]["tables"]["public.t"]["schema"]
    assert [(r["id"], r["v"], r["w"]) for r in rows] == [(2, "b", 2)]


def test_column_changes_during_the_snapshot_are_followed_at_the_next_row_change(
    db: Database,
) -> None:
    """A rename and an add while the snapshot's first chunks wait to be read: the WAL says
    nothing until the table's next row change, so those chunks cannot be read (the SELECT
    names a column that is gone: they emit nothing) and the table's chunks wait. The next
    row change brings the change (a one-table stream restarts at it), the crossed chunks
    are read again in the new shape, and a drop while streaming is followed too: replayed,
    the rows equal the table."""
    table(db)
    db.execute("INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 300) g")
    options = {
        "scan.incremental.snapshot.chunk.size": "50",
        "scan.incremental.snapshot.rows-per-partition": "100",
        "heartbeat.interval": "0s",  # an idle log moves on at once: spans are cleared then
    }
    state: dict[int, dict[str, Any]] = {}

    def replay(rows: list[dict[str, Any]]) -> None:
        for r in sorted(rows, key=lambda r: r["_commit_version"]):
            if r["_change_type"] == "delete":
                state.pop(r["id"], None)
            elif r["_change_type"] != "update_preimage":
                state[r["id"]] = {k: v for k, v in r.items() if not k.startswith("_")}

    def until_restart(source: Any, offset: Any) -> Any:
        ends: list[Any] = [offset]
        with pytest.raises(RestartForSchemaError):
            run_batches(source, offset, replay, ends=ends)
        source.close()
        return ends[-1]

    source = db.source(**options)
    offset = source.initial_offset()
    end = source.latest_offset(offset, 100)  # the first chunks, planned...
    db.execute("ALTER TABLE t RENAME COLUMN v TO u")  # ...and read after this
    db.execute("ALTER TABLE t ADD COLUMN w INT")
    rows: list[dict[str, Any]] = []
    shipped = pickle.dumps(source)
    for spec in source.partitions(offset, end):
        for batch in pickle.loads(shipped).read(spec):
            rows.extend(pa.Table.from_batches([batch]).to_pylist())
    assert rows == []  # crossed: read again after the change
    waited = run_batches(source, end, replay)  # nothing in the WAL yet: the chunks wait
    db.execute("UPDATE t SET u = 'x', w = 7 WHERE id = 7")
    offset = until_restart(source, waited)
    source = db.source(**options)
    offset = run_batches(source, offset, replay)
    db.execute("ALTER TABLE t DROP COLUMN w")
    db.execute("INSERT INTO t VALUES (400, 'new')")
    db.execute("DELETE FROM t WHERE id = 3")
    offset = until_restart(source, offset)
    source = db.source(**options)
    try:
        run_batches(source, offset, replay)
    finally:
        source.close()
    table_rows = {i: {"id": i, "u": u} for i, u in db.execute("SELECT id, u FROM t")}
    assert {i: {"id": r["id"], "u": r["u"]} for i, r in state.items()} == table_rows
    assert state[7]["u"] == "x" and len(state) == 300


def test_a_truncate_is_a_batch_of_its_own_even_when_chunks_are_read_across_it(
    db: Database,
) -> None:
    """``truncate.handling.mode: skip``: each TRUNCATE of the table is a batch of its own,
    recorded in the offset (``truncated``), rows around it flow. A chunk whose read comes
    after a truncate committed after its batch's end cannot be normalised across it (the
    removed rows are not in the WAL): it emits nothing and the truncate's batch reads its
    range again. Replayed with each truncate applied, the rows equal the table. A truncate
    sharing its transaction with row changes cannot be a batch of its own: it stops."""
    table(db)
    db.execute("INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 300) g")
    source = db.source(
        **{
            "truncate.handling.mode": "skip",
            "scan.incremental.snapshot.chunk.size": "50",
            "scan.incremental.snapshot.rows-per-partition": "100",
        }
    )
    state: dict[int, Any] = {}
    marks: list[Any] = [None]

    def replay(end: Any, rows: list[dict[str, Any]]) -> None:
        mark = end["tables"]["public.t"].get("schema", {}).get("truncated")
        if mark != marks[-1]:
            state.clear()  # the batch of the truncate: it has no rows
            assert not rows
            marks.append(mark)
        for r in sorted(rows, key=lambda r: r["_commit_version"]):
            if r["_change_type"] == "delete":
                state.pop(r["id"])
            elif r["_change_type"] != "update_preimage":
                state[r["id"]] = r["v"]

    def read(start: Any, end: Any) -> None:
        rows: list[dict[str, Any]] = []
        shipped = pickle.dumps(source)
        for spec in source.partitions(start, end):
            for batch in pickle.loads(shipped).read(spec):
                rows.extend(pa.Table.from_batches([batch]).to_pylist())
        replay(end, rows)

    try:
        offset = source.initial_offset()
        end = source.latest_offset(offset, 100)  # the snapshot's first chunks, planned...
        db.execute("UPDATE t SET v = 'x' WHERE id = 7")
        db.execute("TRUNCATE t")  # ...and read after this
        db.execute("INSERT INTO t VALUES (1, 'again'), (400, 'new')")
        read(offset, end)
        offset = end
        for _ in range(30):
            end = source.latest_offset(offset, 100)
            if end == offset:
                break
            read(offset, end)
            offset = end
        db.execute("INSERT INTO t VALUES (2, 'two')")
        db.execute("TRUNCATE t")
        db.execute("INSERT INTO t VALUES (3, 'three')")
        while (end := source.latest_offset(offset, 100)) != offset:
            read(offset, end)
            offset = end
        assert len(marks) == 3  # two truncates, each with its own position
        assert state == dict(db.execute("SELECT id, v FROM t")) == {3: "three"}

        db.execute("BEGIN; INSERT INTO t VALUES (4, 'four'); TRUNCATE t; COMMIT")
        with pytest.raises(SchemaError, match=r"also has 1 row change\(s\)"):
            source.latest_offset(offset, 100)
    finally:
        source.close()


def test_a_dropped_table_is_a_batch_of_its_own_and_one_created_again_is_new(
    db: Database,
) -> None:
    """The WAL has no DROP TABLE: a captured table gone from the catalog is a batch of its
    own (its entry marks ``table_dropped``) once the stream has read past every change it
    had, and the next batch forgets it while the others go on; one of its chunks read
    after the drop emits nothing. A table created again under the name while the stream
    was stopped is a new table: after a restart, the old one's changes up to its drop,
    the drop, then the new one's snapshot (``scan.newly-added-table.enabled``)."""
    for name in ("t", "u", "v"):
        db.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, v TEXT)")
        db.execute(f"ALTER TABLE {name} REPLICA IDENTITY FULL")
        db.execute(f"INSERT INTO {name} SELECT g, '{name}' || g FROM generate_series(1, 200) g")
    options = {
        "table-name": "t|u|v",
        "scan.envelope.enabled": "true",
        "truncate.handling.mode": "skip",
        "scan.newly-added-table.enabled": "true",
        "scan.incremental.snapshot.chunk.size": "50",
        "heartbeat.interval": "0s",
    }
    ends: list[Any] = []
    state: dict[str, dict[int, Any]] = {"t": {}, "u": {}, "v": {}}
    source = db.source(**options)

    def dropped(end: Any, table: str = "public.u") -> bool:
        return "table_dropped" in (end["tables"].get(table, {}).get("schema") or {})

    def apply(rows: list[dict[str, Any]]) -> None:
        replay(state, rows)

    try:
        start = source.initial_offset()
        first = source.latest_offset(start, 2000)  # chunks of t, u and v planned...
        assert first["tables"]["public.v"].get("done")
        db.execute("DROP TABLE v")  # ...and v's read after its drop: they emit nothing
        shipped = pickle.dumps(source)
        rows: list[dict[str, Any]] = []
        for spec in source.partitions(start, first):
            for batch in pickle.loads(shipped).read(spec):
                rows.extend(pa.Table.from_batches([batch]).to_pylist())
        assert {r["table_name"] for r in rows} == {"t", "u"}
        apply(rows)
        ends.append(first)
        offset = run_batches(source, first, apply, max_rows=100, ends=ends)
        db.execute("INSERT INTO u VALUES (1000, 'last')")
        db.execute("DROP TABLE u")
        db.execute("INSERT INTO t VALUES (-1, 'after the drop')")
        # the WAL's insert position now past the new segment's header, where no flush
        # goes on an idle server: the drop's batch must not wait for a later commit
        db.execute("SELECT pg_switch_wal()")
        offset = run_batches(source, offset, apply, max_rows=100, ends=ends)
    finally:
        source.close()
    assert any(dropped(e) for e in ends), "no batch of u's drop"
    changes = {e["tables"]["public.u"]["schema"]["change"] for e in ends if dropped(e)}
    assert changes == {"DROP TABLE public.u"}
    assert any(dropped(e, "public.v") for e in ends), "no batch of v's drop"
    assert not {"public.u", "public.v"} & set(ends[-1]["tables"])
    assert state["t"] == dict(db.execute("SELECT id, v FROM t")), "t goes on as before"
    assert state["u"].get(1000) == "last", "u's last change before its drop"

    # while stopped: u created again with other columns, with rows; a restart
    db.execute("CREATE TABLE u (id INT PRIMARY KEY, w TEXT)")
    db.execute("ALTER TABLE u REPLICA IDENTITY FULL")
    db.execute("INSERT INTO u VALUES (1, 'new one'), (2, 'new two')")
    state = {"t": {}, "u": {}, "v": {}}
    restarted = db.source(**options)
    try:
        offset = run_batches(restarted, offset, apply, ends=ends)
        db.execute("INSERT INTO u VALUES (3, 'new three')")
        run_batches(restarted, offset, apply, ends=ends)
    finally:
        restarted.close()
    assert state["u"] == {1: "new one", 2: "new two", 3: "new three"}


def test_a_table_renamed_away_is_a_drop_of_its_name_after_its_last_change(
    db: Database,
) -> None:
    """The WAL shows no rename either: a captured table renamed away is gone from the
    catalog under its name, so it is a drop of that name, once the stream has read its
    changes up to the rename. Its OID is still there and the rename's commit need not be
    flushed (``synchronous_commit = off``), so the bound is the WAL's insert position, moved
    back over a page header that nothing follows: the batch comes on an idle server too,
    once the WAL writer has flushed what is written. The table under its new name is not
    captured. A table dropped in the same transaction is gone in the same batch, and
    each entry tells its own statement."""
    for name in ("t", "u", "w"):
        db.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, v TEXT)")
        db.execute(f"ALTER TABLE {name} REPLICA IDENTITY FULL")
        db.execute(f"INSERT INTO {name} SELECT g, '{name}' || g FROM generate_series(1, 50) g")
    options = {
        "table-name": "t|u|w",
        "scan.envelope.enabled": "true",
        "truncate.handling.mode": "skip",
        "heartbeat.interval": "0s",
    }
    ends: list[Any] = []
    state: dict[str, dict[int, Any]] = {"t": {}, "u": {}, "w": {}}

    def apply(rows: list[dict[str, Any]]) -> None:
        replay(state, rows)

    def renamed(end: Any) -> bool:
        return "table_dropped" in (end["tables"].get("public.u", {}).get("schema") or {})

    source = db.source(**options)
    try:
        offset = run_batches(source, None, apply, ends=ends)
        db.execute("INSERT INTO u VALUES (1000, 'last')")
        db.execute("BEGIN; ALTER TABLE u RENAME TO u_old; DROP TABLE w; COMMIT")
        db.execute("SELECT pg_switch_wal()")  # the insert position past a header, idle
        for _ in range(10):  # no commit meanwhile: the WAL writer's flush, then the batch
            offset = run_batches(source, offset, apply, ends=ends)
            if any(renamed(e) for e in ends):
                break
            time.sleep(0.5)
        assert any(renamed(e) for e in ends), "the rename's batch waits for a later commit"
        db.execute("INSERT INTO u_old VALUES (2000, 'under its new name')")
        db.execute("INSERT INTO t VALUES (-2, 'later')")
        run_batches(source, offset, apply, ends=ends)
    finally:
        source.close()
    drops = [e for e in ends if renamed(e)]
    assert len(drops) == 1, "one batch of the rename away"
    gone = drops[0]["tables"]
    assert gone["public.u"]["schema"]["change"] == "ALTER TABLE public.u RENAME TO u_old"
    assert gone["public.w"]["schema"]["change"] == "DROP TABLE public.w"
    assert "table_dropped" in gone["public.w"]["schema"]
    assert not {"public.u", "public.u_old", "public.w"} & set(ends[-1]["tables"])
    assert state["u"] == {**{i: f"u{i}" for i in range(1, 51)}, 1000: "last"}
    assert state["t"] == dict(db.execute("SELECT id, v FROM t"))


def replay(state: dict[str, dict[int, Any]], rows: list[dict[str, Any]]) -> None:
    """Apply one batch of envelope rows to ``state`` (table -> id -> second column)."""
    order = {"update_preimage": 0, "delete": 0, "insert": 1, "update_postimage": 1}
    for r in sorted(rows, key=lambda r: (r["_commit_version"], order[r["_change_type"]])):
        key = json.loads(r["key"])["id"]
        if r["_change_type"] == "delete":
            state[r["table_name"]].pop(key)
        elif r["_change_type"] != "update_preimage":
            state[r["table_name"]][key] = list(json.loads(r["after"]).values())[1]


def test_the_slot_moves_only_after_commits_and_a_lost_position_names_the_slot(
    db: Database,
) -> None:
    table(db)
    db.execute("INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 100) g")
    source = db.source(**{"scan.lsn-commit.checkpoints-num-delay": "1"})
    replayer = ChangelogReplayer(lambda r: r["id"], ["id", "v"])
    offsets = [source.initial_offset()]
    created = db.slot_confirmed()
    for i in range(3):
        db.execute("UPDATE t SET v = v || 'x' WHERE id = %s", (i + 1,))
        offsets.append(run_batches(source, offsets[-1], replayer.apply_batch))
    assert db.slot_confirmed() == created  # reads never move it
    source.commit(offsets[1])
    assert db.slot_confirmed() == created  # one batch late
    source.commit(offsets[2])
    assert db.slot_confirmed() == lsn_from_text(offsets[1]["log"]["lsn"])
    assert replayer.state == {r[0]: r for r in db.execute("SELECT id, v FROM t")}

    # a restart from a checkpoint older than the slot: the WAL in between is gone
    restarted = db.source()
    with pytest.raises(PositionLostError, match=f"replication slot '{db.slot}' has moved"):
        restarted.latest_offset(offsets[0], None)


def test_domains_enums_and_unrepresentable_dates_read_alike_from_snapshot_and_log(
    db: Database,
) -> None:
    db.execute("CREATE DOMAIN money2 AS NUMERIC(10, 2) CHECK (VALUE >= 0)")
    db.execute("CREATE TYPE mood AS ENUM ('sad', 'ok')")
    db.execute("CREATE TYPE pair AS (a INT, b TEXT)")
    table(db, "id INT PRIMARY KEY, m money2, f mood, p pair, fs mood[], d DATE")
    row = (1, "1.50", "ok", '(1,"x y")', "{sad,ok}", "2024-02-29")
    db.execute("INSERT INTO t VALUES (%s, %s, %s, %s, %s, %s)", row)
    snapshot = db.source()
    from_snapshot = [
        r
        for spec in snapshot.snapshot_partitions()
        for b in snapshot.read(spec)
        for r in b.to_pylist()
    ]
    stream = db.source(**{"scan.startup.mode": "latest-offset"})
    start = stream.initial_offset()
    db.execute("INSERT INTO t VALUES (2, %s, %s, %s, %s, %s)", row[1:])
    from_log: list[dict[str, Any]] = []
    after = run_batches(stream, start, from_log.extend)
    names = ["m", "f", "p", "fs", "d"]
    assert [[r[n] for n in names] for r in from_snapshot] == [
        [r[n] for n in names] for r in from_log
    ]
    assert [from_log[0][n] for n in names][:4] == [
        Decimal("1.50"),
        "ok",
        '(1,"x y")',
        ["sad", "ok"],
    ]

    # a date Spark cannot hold fails on both paths, naming the column
    db.execute("UPDATE t SET d = '0044-03-15 BC' WHERE id = 1")
    bc = db.source()
    with pytest.raises(PgValueError, match="'d'"):
        [b for spec in bc.snapshot_partitions() for b in bc.read(spec)]
    with pytest.raises(PgValueError, match="'d'"):
        run_batches(stream, after, lambda rows: None)


def test_no_free_slot_for_a_read_names_the_setting() -> None:
    with EmbeddedPostgres(settings={"max_replication_slots": "2"}) as server:
        server.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
        server.execute("ALTER TABLE t REPLICA IDENTITY FULL")
        db = Database(server, "postgres")
        source = db.source(**{"scan.startup.mode": "latest-offset"})
        start = source.initial_offset()  # the stream's slot: one of two
        server.execute("SELECT pg_create_logical_replication_slot('other', 'pgoutput')")
        server.execute("INSERT INTO t VALUES (1, 'a')")
        with pytest.raises(SourceConfigurationError, match="max_replication_slots"):
            run_batches(source, start, lambda rows: None)


def test_committed_offset_starts_at_the_slot_and_metadata_names_database_and_schema(
    db: Database,
) -> None:
    table(db)
    db.execute("INSERT INTO t VALUES (1, 'a')")
    metadata = {"metadata.list": "database_name,schema_name,table_name,op_ts,row_kind"}
    no_delay = {"scan.lsn-commit.checkpoints-num-delay": "0"}
    first = db.source(**{"scan.startup.mode": "latest-offset", **no_delay})
    start = first.initial_offset()
    db.execute("INSERT INTO t VALUES (2, 'b')")
    first.commit(run_batches(first, start, lambda rows: None))  # as Spark does
    db.execute("UPDATE t SET v = 'c' WHERE id = 2")
    resumed = db.source(**{"scan.startup.mode": "committed-offset", **metadata})
    rows: list[dict[str, Any]] = []
    run_batches(resumed, resumed.initial_offset(), rows.extend)
    assert [(r["_change_type"], r["id"], r["v"]) for r in rows] == [
        ("update_preimage", 2, "b"),
        ("update_postimage", 2, "c"),
    ]
    assert {(r["database_name"], r["schema_name"], r["table_name"]) for r in rows} == {
        (db.name, "public", "t")
    }
    assert [r["row_kind"] for r in rows] == ["-U", "+U"] and all(r["op_ts"] for r in rows)


def test_a_keyless_table_created_while_a_stream_runs_is_captured_as_a_multiset(
    db: Database,
) -> None:
    """Issue 64: a one-table pattern stream watching for created tables captures a created
    keyless table that has a chunk key column and REPLICA IDENTITY FULL: its snapshot and
    its log (duplicates, one of two identical rows deleted by ``ctid``) replay to it."""
    table(db)
    db.execute("INSERT INTO t VALUES (1, 'one')")
    source = db.source(
        **{
            "table-name": "t.*",
            "scan.newly-added-table.enabled": "true",
            "scan.incremental.snapshot.chunk.key-column": "public.t_log:k",
            "heartbeat.interval": "0s",
        }
    )
    replayed: Counter[tuple[Any, ...]] = Counter()

    def replay(rows: list[dict[str, Any]]) -> None:
        for row in sorted(rows, key=lambda r: r["_commit_version"]):
            if row["table_name"] != "t_log":
                continue
            # a stream that may grow writes each row's images as JSON (the envelope)
            for image, sign in ((row["before"], -1), (row["after"], 1)):
                if image is not None:
                    values = json.loads(image)
                    replayed[(values["k"], values["w"])] += sign

    try:
        start = run_batches(source, None, replay)
        db.execute("CREATE TABLE t_log (k INT NOT NULL, w TEXT)")
        db.execute("ALTER TABLE t_log REPLICA IDENTITY FULL")
        db.execute("INSERT INTO t_log SELECT g % 5, 'w' || g % 2 FROM generate_series(1, 40) g")
        start = run_batches(source, start, replay)
        assert TableId("public", "t_log") in source.catalog.tables
        one = "ctid = (SELECT ctid FROM t_log WHERE k = 1 AND w = 'w1' LIMIT 1)"
        db.execute(f"DELETE FROM t_log WHERE {one}")
        db.execute("INSERT INTO t_log VALUES (9, 'new'), (9, 'new')")
        db.execute("UPDATE t_log SET w = 'moved' WHERE k = 2")
        run_batches(source, start, replay)
        table_rows = Counter(db.execute("SELECT k, w FROM t_log"))
        assert max(table_rows.values()) > 1, "the table should hold duplicate rows"
        assert +replayed == table_rows
    finally:
        db.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            "WHERE slot_name = %s",
            (db.slot,),
        )

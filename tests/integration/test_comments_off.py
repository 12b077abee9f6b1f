"""Without ``include-comments.enabled`` (the default) no source comment reaches a target:
neither the table's and columns' comments discovery sees nor the ``COMMENT`` of a column
a later ALTER adds, from a real MariaDB into a MariaDB JDBC target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import prepare
from sparkcdc.sinks.jdbc.dialects import TARGET_MARK
from tests.support.pipelines import mariadb_sink_block, pipeline_file, run_until_caught_up


def test_without_the_option_no_comment_reaches_the_target(
    spark: Any, mariadb: EmbeddedMariaDB, mysql_db: str, scratch: Path, monkeypatch: Any
) -> None:
    mariadb.execute(
        "CREATE TABLE noted (id INT PRIMARY KEY COMMENT 'the key', note TEXT COMMENT 'a note') "
        "COMMENT 'noted things'",
        database=mysql_db,
    )
    mariadb.execute("INSERT INTO noted VALUES (1, 'a'), (2, 'b')", database=mysql_db)
    target = mariadb.create_database(f"{mysql_db[:50]}_t")
    sink = mariadb_sink_block(mariadb, target, monkeypatch)
    path = pipeline_file(scratch, mariadb, f"{mysql_db}.noted", sink)
    run = prepare(load_pipeline(path), spark=spark)

    def then() -> None:
        mariadb.execute(
            "ALTER TABLE noted ADD COLUMN later INT COMMENT 'added later'", database=mysql_db
        )
        mariadb.execute("INSERT INTO noted VALUES (3, 'c', 7)", database=mysql_db)

    run_until_caught_up(run, mariadb, then)
    columns = mariadb.execute(
        "SELECT COLUMN_NAME, COLUMN_COMMENT FROM information_schema.COLUMNS WHERE "
        "TABLE_SCHEMA = %s AND TABLE_NAME = 'noted'",
        (target,),
    )
    assert {str(n): str(c) for n, c in columns} == {"id": "", "note": "", "later": ""}
    (table,) = mariadb.execute(
        "SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND "
        "TABLE_NAME = 'noted'",
        (target,),
    )
    assert table[0] == TARGET_MARK  # the sink's mark, not the source's comment
    assert sorted(mariadb.execute("SELECT * FROM noted", database=target)) == [
        (1, "a", None),
        (2, "b", None),
        (3, "c", 7),
    ]

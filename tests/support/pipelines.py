"""Writing pipeline files for tests and watching a pipeline's checkpoint."""

from __future__ import annotations

import dataclasses
import json
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import prepare


def pipeline_file(
    folder: Path,
    mariadb: EmbeddedMariaDB,
    tables: str,
    sink: str,
    *,
    trigger: str = "300ms",
    max_rows: int = 500,
    extra_source: str = "",
    blocks: str = "",
) -> Path:
    """A pipeline file capturing ``tables`` (``db.regex``) into ``sink`` (a YAML block body),
    with ``blocks`` (more top-level blocks: transform, route) at its end."""
    source = mariadb.pipeline_source(tables)
    text = f"""\
{source}  server-id: 5500-5531
  scan.incremental.snapshot.chunk.size: 97
  scan.incremental.snapshot.rows-per-partition: 300
{textwrap.indent(extra_source, "  ")}
sink:
{textwrap.indent(sink.strip(), "  ")}
pipeline:
  name: test-pipeline
  checkpoint: checkpoint
  trigger-interval: {trigger}
  max-rows-per-trigger: {max_rows}
{blocks}"""
    path = folder / "pipeline.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def postgres_sink_block(postgres: Any, database: str, monkeypatch: Any) -> str:
    """A ``jdbc`` sink block into ``database`` on the harness's PostgreSQL, one schema per
    source database (the password through the environment, as users are told to)."""
    monkeypatch.setenv("TARGET_PASSWORD", postgres.password)
    return (
        f"type: jdbc\nurl: postgresql://{postgres.host}:{postgres.port}/{database}\n"
        f"username: {postgres.user}\npassword: ${{TARGET_PASSWORD}}\n"
        'table-name: "{database}.{table}"'
    )


def mariadb_sink_block(mariadb: Any, database: str, monkeypatch: Any) -> str:
    """A ``jdbc`` sink block into ``database`` on the harness's MariaDB, as a user of its
    own (the password through the environment, as users are told to)."""
    mariadb.execute("CREATE OR REPLACE USER 'mariadb_sink'@'%%' IDENTIFIED BY %s", ("sink-pw",))
    quoted = database.replace("`", "``")
    mariadb.execute(f"GRANT ALL ON `{quoted}`.* TO 'mariadb_sink'@'%'")
    monkeypatch.setenv("TARGET_PASSWORD", "sink-pw")
    return (
        f"type: jdbc\nurl: mariadb://{mariadb.host}:{mariadb.port}/{database}\n"
        "username: mariadb_sink\npassword: ${TARGET_PASSWORD}\n"
        'table-name: "{table}"'
    )


def sink_block(sink: str, postgres: Any, pg_db: str, monkeypatch: Any) -> str:
    """The sink block of tests run into either target: ``delta`` (a lake beside the
    pipeline file; ``delta-native`` through delta-rs) or, for any other name, PostgreSQL
    (:func:`postgres_sink_block`)."""
    if sink == "delta":
        return "type: delta\npath: lake"
    if sink == "delta-native":  # written through delta-rs (sinks/delta/native.py)
        return "type: delta\npath: lake\nwriter: native"
    return postgres_sink_block(postgres, pg_db, monkeypatch)


def committed_offsets(checkpoint: Path) -> list[dict[str, Any]]:
    """The source offsets of the batches Spark has committed, oldest first: of the last
    100 only, as Spark deletes older ones (``spark.sql.streaming.minBatchesToRetain``),
    maybe while this reads them."""
    commits = sorted(int(p.name) for p in (checkpoint / "commits").glob("[0-9]*"))
    offsets = []
    for batch in commits:
        try:
            lines = (checkpoint / "offsets" / str(batch)).read_text().splitlines()
        except FileNotFoundError:  # deleted by Spark since it was listed
            continue
        offsets.append(json.loads(lines[2]))
    return offsets


def committed_batches(checkpoint: Path) -> int:
    """How many batches Spark has committed: its batch ids count from 0, and the newest
    commit's file stays when older ones are deleted (unlike a count of the files)."""
    ids = [int(p.name) for p in (checkpoint / "commits").glob("[0-9]*")]
    return max(ids) + 1 if ids else 0


def snapshot_done(offset: dict[str, Any]) -> bool:
    return all(state.get("done") for state in offset["tables"].values())


def reads_done(offset: dict[str, Any]) -> bool:
    """Every table's snapshot is done and no re-read of one runs (a re-read that a signal
    or a column's server-filled values started: ``again``, done in the batch that reads its
    last chunk): the target has every row the table had at the offset's position."""
    return snapshot_done(offset) and all(
        state.get("again", {"done": True}).get("done") for state in offset["tables"].values()
    )


def at_or_after(offset: dict[str, Any], file: str, pos: int) -> bool:
    log = offset["log"]
    return (log["file"], int(log["pos"])) >= (file, pos)


def master_position(mariadb: EmbeddedMariaDB) -> tuple[str, int]:
    row = mariadb.execute("SHOW MASTER STATUS")[0]
    return str(row[0]), int(row[1])


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


#: Rows per batch of the catch-up that ends a fault test (see :func:`run_available_now`).
CATCH_UP_ROWS = 20_000


def run_available_now(spark: Any, pipeline: Path) -> None:
    """What ``sparkcdc run PIPELINE --available-now`` does, in this session's (warm) JVM:
    fault tests end with it, after their killed runs, and a cold process would add ~15 s.
    Its batches take up to :data:`CATCH_UP_ROWS` rows, as an operator raises
    ``max-rows-per-trigger`` to catch up on a backlog: the small batches that made the
    killed runs' batch boundaries many would make the catch-up many batches of seconds
    each (a batch Spark planned before a kill is replayed as planned, whatever the limit)."""
    definition = load_pipeline(pipeline)
    settings = dataclasses.replace(
        definition.settings, trigger_seconds=None, max_rows_per_trigger=CATCH_UP_ROWS
    )
    run = prepare(dataclasses.replace(definition, settings=settings), spark=spark)
    run.start()
    run.wait()


def run_until_caught_up(
    run: Any,
    mariadb: EmbeddedMariaDB,
    after_snapshot: Callable[[], object],
) -> None:
    """Start the pipeline; once the snapshot is committed call ``after_snapshot``, wait
    until a committed offset is at or past the binlog's end then, and stop the pipeline."""
    checkpoint = run.definition.settings.checkpoint

    def committed(reached: Callable[[dict[str, Any]], bool]) -> Callable[[], bool]:
        def check() -> bool:
            if not run.active:  # failed: say why instead of timing out
                raise AssertionError(f"the pipeline stopped: {run.query.exception()}")
            return any(reached(o) for o in committed_offsets(checkpoint))

        return check

    run.start()
    try:
        wait_until(committed(snapshot_done), "the snapshot")
        after_snapshot()
        file, pos = master_position(mariadb)
        wait_until(committed(lambda o: at_or_after(o, file, pos)), "the pipeline to catch up")
    finally:
        run.stop()


def run_while_writing(
    run: Any, mariadb: EmbeddedMariaDB, writer: Any, after_snapshot: Callable[[], None]
) -> None:
    """Start ``writer`` and the pipeline; once the snapshot is committed stop the writer,
    call ``after_snapshot``, and wait until the pipeline has caught up with the binlog."""

    def then() -> None:
        writer.stop()
        after_snapshot()

    writer.start()
    try:
        run_until_caught_up(run, mariadb, then)
    finally:
        writer.stop()


def wait_read_again(run: Any, mariadb: EmbeddedMariaDB, writer: Any = None) -> None:
    """Wait until a committed offset has read the whole signal file, ended its re-reads and
    passed the binlog's end (after stopping ``writer``, if any)."""
    checkpoint = run.definition.settings.checkpoint
    signals = run.definition.signal_file.stat().st_size

    def read_again(offset: dict[str, Any]) -> bool:
        consumed = offset.get("signals", {}).get("file") == signals
        return consumed and not any("again" in t for t in offset["tables"].values())

    def committed(check: Any) -> Any:
        def done() -> bool:
            assert run.active, f"the pipeline stopped: {run.query.exception()}"
            return any(check(o) for o in committed_offsets(checkpoint))

        return done

    wait_until(committed(read_again), "the re-read")
    if writer is not None:
        writer.stop()
    file, pos = master_position(mariadb)
    wait_until(
        committed(lambda o: (o["log"]["file"], int(o["log"]["pos"])) >= (file, pos)),
        "the pipeline to catch up",
    )

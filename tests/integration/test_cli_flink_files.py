"""The command line as a user meets it, each command a process of its own: a pipeline file
from Flink CDC's documentation runs against MariaDB into Delta as it is written (its sink
block aside), every command says each step as it begins, a Ctrl-C is acknowledged at once,
and ``validate`` refuses what would fail later before it connects to anything.

No timings are asserted: the order and presence of the output lines, the exit codes and
what is (not) left on disk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from sparkcdc.embedded import EmbeddedMariaDB
from tests.integration.test_mysql_source import orders
from tests.support.mariadb_writes import table_state

__all__ = ["orders"]  # the fixture, re-used

ROOT = Path(__file__).resolve().parents[2]
FLINK_EXAMPLE = ROOT / "tests" / "data" / "flink_cdc" / "mysql-to-doris.yaml"
#: The first output line of every command that takes a while (cli/main.py).
HEADER = "sparkcdc "


def flink_pipeline(
    folder: Path, mariadb: EmbeddedMariaDB, database: str, sink: dict[str, Any]
) -> Path:
    """Flink CDC's documented MySQL example, pointed at the harness's MariaDB: its source
    block's keys as written (name, server-id, ...) but the server and tables, its pipeline
    block as written (name, parallelism; no checkpoint), ``sink`` for Doris."""
    data = yaml.safe_load(FLINK_EXAMPLE.read_text(encoding="utf-8"))
    options = mariadb.source_options()
    data["source"].update(
        hostname=options["hostname"],
        port=int(options["port"]),
        username=options["username"],
        password="${CDC_PASSWORD}",
        tables=f"{database}.\\.*",
    )
    data["source"]["tables.exclude"] = f"{database}.audit"
    data["source"]["scan.incremental.close-idle-reader.enabled"] = True
    data["sink"] = sink
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def sparkcdc(
    *args: str, cwd: Path, env: dict[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparkcdc.cli.main", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def in_order(output: str, *fragments: str) -> None:
    """Each fragment appears on a line of its own, after the one before."""
    lines = output.splitlines()
    at = -1
    for fragment in fragments:
        found = [i for i, line in enumerate(lines) if fragment in line and i > at]
        assert found, f"{fragment!r} not after line {at}:\n{output}"
        at = found[0]


def test_a_flink_cdc_example_runs_into_delta_and_verifies(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    lake = scratch / "lake"
    pipeline = flink_pipeline(scratch, mariadb, orders, {"type": "delta", "path": str(lake)})
    work = scratch / "work"  # the shell's folder: nothing may appear in it
    work.mkdir()
    env = {
        "CDC_PASSWORD": mariadb.source_options()["password"],
        "SPARKCDC_STATE_DIR": str(scratch / "state"),
    }
    done = sparkcdc("run", str(pipeline), "--available-now", cwd=work, env=env)
    assert done.returncode == 0, done.stderr
    in_order(
        done.stderr,
        HEADER,
        f"reading {pipeline}",
        "pipeline 'MySQL to Doris Pipeline': mysql 'MySQL Source' -> delta",
        "note: scan.incremental.close-idle-reader.enabled",
        "folders ok: checkpoint " + str(scratch / "state" / "pipelines"),
        "jars",
        "source: connecting to mysql",
        f"source: 1 table match: {orders}.orders",  # audit: tables.exclude
        "starting Spark (local[4]",
        "sink: opening 1 target (delta)",
        "pipeline stopped",
    )
    assert list(work.iterdir()) == []  # no spark-warehouse/, no metastore, no log
    checkpoints = list((scratch / "state" / "pipelines").iterdir())
    assert any(p.name.startswith("mysql-to-doris-pipeline-") for p in checkpoints)
    targets = sorted(p.parent.relative_to(lake) for p in lake.glob("**/_delta_log"))
    assert targets == [Path(orders) / "orders"]
    rows = spark.read.format("delta").load(str(lake / orders / "orders")).collect()
    assert {r[0]: tuple(r) for r in rows} == table_state(mariadb, orders, "orders")

    verified = sparkcdc("verify", str(pipeline), cwd=work, env=env)
    assert verified.returncode == 0, verified.stderr + verified.stdout
    in_order(
        verified.stderr,
        HEADER,
        "verifying pipeline 'MySQL to Doris Pipeline'",
        "starting Spark",
        f"verify: {orders}.orders (1/1): reading the target",
        f"verify: {orders}.orders: reading the source at",
        f"verify: {orders}.orders: source: ",  # partitions of chunks read, of how many
        f"verify: {orders}.orders: target: ",
        f"verify: {orders}.orders: equal, 2000 source rows",
    )
    assert list(work.iterdir()) == []


def test_ctrl_c_while_starting_is_acknowledged_and_ends_the_start_up(
    mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) once Spark starts: the
    run says so at once, ends its start-up at the next step and exits 0; nothing ran."""
    pipeline = flink_pipeline(scratch, mariadb, orders, {"type": "console"})
    env = {
        **os.environ,
        "CDC_PASSWORD": mariadb.source_options()["password"],
        "SPARKCDC_STATE_DIR": str(scratch / "state"),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "sparkcdc.cli.main", "run", str(pipeline)],
        cwd=scratch,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        seen = []
        for line in process.stderr:
            seen.append(line)
            if "starting Spark" in line:
                os.killpg(process.pid, signal.SIGINT)
                break
        rest = process.stderr.read()
        assert process.wait(300) == 0, "".join(seen) + rest
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)
    output = "".join(seen) + rest
    in_order(
        output,
        "starting Spark",
        "SIGINT: stopping; start-up ends at its next step",
        "pipeline stopped before it started",
    )
    assert "Traceback" not in output
    assert "batch" not in rest  # no batch ran


def test_validate_refuses_an_unwritable_sink_before_connecting(
    mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    pipeline = flink_pipeline(
        scratch, mariadb, orders, {"type": "delta", "path": "/proc/lakehouse"}
    )
    env = {"CDC_PASSWORD": "unused", "SPARKCDC_STATE_DIR": str(scratch / "state")}
    done = sparkcdc("validate", str(pipeline), cwd=scratch, env=env, timeout=120)
    assert done.returncode == 2
    assert "sink.path: cannot write to /proc/lakehouse" in done.stderr
    assert "source: connecting" not in done.stdout  # refused before the source is asked
    assert not (scratch / "state").exists()  # validate writes nothing


def test_a_shell_glob_in_tables_gets_flinks_syntax_as_a_hint(scratch: Path) -> None:
    pipeline = scratch / "pipeline.yaml"
    pipeline.write_text(
        "source:\n  type: mysql\n  hostname: 127.0.0.1\n  username: cdc\n  tables: app_db.*\n"
        "sink:\n  type: console\n",
        encoding="utf-8",
    )
    done = sparkcdc("validate", "--offline", str(pipeline), cwd=scratch, env={}, timeout=120)
    assert done.returncode == 2
    assert "looks like a shell glob" in done.stderr
    assert "app_db.\\.*" in done.stderr

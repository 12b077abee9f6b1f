"""The properties every registered connector must have, on its real server.

Written only against the fixture interface (tests/conformance/connector.py) and the
connector's public surface, and run once per connector (tests/conformance/conftest.py):
snapshot + stream under random concurrent writes replays to the source; SIGKILL and restart
resume exactly once; a value reads the same through the snapshot and the log; startup modes;
lost connections lose and repeat nothing; bad options fail up front and never show secrets.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkcdc.connectors.registry import SOURCE_TYPES
from sparkcdc.core.comments import NO_COMMENTS
from sparkcdc.core.errors import OptionError
from sparkcdc.snapshot.driver import IncrementalSource
from sparkcdc.snapshot.offset import SourceOffset
from sparkcdc.snapshot.signal_file import append_signal
from tests.conformance.conftest import FIXTURES
from tests.conformance.connector import NOTED_COMMENTS, ConnectorUnderTest, TypeCase
from tests.support.cdc_driver import drive
from tests.support.changelog import ChangelogReplayer
from tests.support.inprocess import run_batches
from tests.support.pipelines import committed_offsets, snapshot_done
from tests.support.streams import run_available_now
from tests.support.tcp_proxy import CuttableProxy

ROOT = Path(__file__).resolve().parents[2]
ORDER_COLUMNS = ["id", "name", "qty"]
T = TypeVar("T")


def source(db: ConnectorUnderTest, options: dict[str, str]) -> IncrementalSource[Any, Any]:
    found = db.connector
    created: IncrementalSource[Any, Any] = found.source(found.parse_config(options))
    return created


def orders_options(db: ConnectorUnderTest, namespace: str, **extra: str) -> dict[str, str]:
    return {
        **db.options(namespace, "orders"),
        "scan.incremental.snapshot.chunk.size": "97",
        "scan.incremental.snapshot.rows-per-partition": "300",
        **extra,
    }


def test_every_registered_connector_has_a_fixture() -> None:
    """A connector cannot skip the suite: registering one without a fixture fails here."""
    assert sorted(FIXTURES) == sorted(SOURCE_TYPES)


def test_snapshot_and_stream_under_concurrent_writes_replay_to_the_source(
    spark: Any, db: ConnectorUnderTest, namespace: str, scratch: Path
) -> None:
    db.create_orders(namespace, 2000)
    replayer = ChangelogReplayer(lambda r: r["id"], ORDER_COLUMNS, db.by_key)
    options = orders_options(db, namespace, maxRowsPerTrigger="500")
    sizes: list[int] = []

    def each(batch: Any, _: int) -> None:
        rows = [r.asDict() for r in batch.collect()]
        replayer.apply_batch(rows)
        sizes.append(len(rows))

    def run() -> None:
        run_available_now(spark, options, scratch / "ckpt", each, db.connector.format)

    with db.writing(namespace, seed=7, key_space=7000) as writer:
        run()
        assert len(sizes) >= 4  # the snapshot spans several micro-batches
        run()  # more changes while nothing ran: resume from the checkpoint
    assert writer.transactions > 50
    run()
    assert replayer.state == db.table_state(namespace, "orders")


def test_a_signalled_re_read_under_concurrent_writes_repairs_a_damaged_copy(
    db: ConnectorUnderTest, namespace: str, scratch: Path
) -> None:
    """An ``execute-snapshot`` signal (docs/signals.md) on every connector: a copy that
    lost and garbled rows is repaired by the re-read while random writes go on, each
    re-read row is an upsert at its batch's end, and a later run does not read again."""
    db.create_orders(namespace, 600)
    signals = scratch / "signals.jsonl"
    options = orders_options(db, namespace, **{"signal.file": str(signals)})
    copy: dict[Any, tuple[Any, ...]] = {}
    re_read: list[Any] = []

    def upsert(rows: list[dict[str, Any]]) -> None:
        """Apply a batch as an upsert target does; collect the re-read rows (post-images
        at a version without pre-images: a key move's images have different keys)."""
        sets = ("insert", "update_postimage")
        for r in sorted(rows, key=lambda r: (r["_commit_version"], r["_change_type"] in sets)):
            if r["_change_type"] in sets:
                copy[r["id"]] = tuple(r[c] for c in ORDER_COLUMNS)
            else:
                copy.pop(r["id"], None)
        paired = {r["_commit_version"] for r in rows if r["_change_type"] == "update_preimage"}
        re_read.extend(
            r["id"]
            for r in rows
            if r["_change_type"] == "update_postimage" and r["_commit_version"] not in paired
        )

    offset = run_batches(source(db, options), None, upsert)
    assert copy == db.table_state(namespace, "orders") and not re_read
    for n, key in enumerate(sorted(copy)[:300]):  # the copy loses and garbles rows
        if n % 3 == 0:
            del copy[key]
        elif n % 3 == 1:
            copy[key] = (key, "garbled", -1)
    body = {"data-collections": [f"{namespace}.orders"], "type": "incremental"}
    append_signal(signals, {"id": "repair", "type": "execute-snapshot", "data": body})
    with db.writing(namespace, seed=5, key_space=2000) as writer:

        def between(n: int) -> None:
            """Writes go on through the first 25 batches (the re-read's among them) and
            stop after them: the source must then catch up, which a writer faster than
            200-row batches on a loaded machine would never let it."""
            if n < 24:
                time.sleep(0.1)
            else:
                writer.stop()

        offset = run_batches(source(db, options), offset, upsert, max_rows=200, between=between)
    assert writer.transactions > 0 and len(set(re_read)) > 300
    if not db.by_key:  # by key every update is a post-image alone: re-read rows look alike
        assert len(re_read) == len(set(re_read))  # once each
    after = source(db, options)
    run_batches(after, offset, upsert)
    assert copy == db.table_state(namespace, "orders")
    last = after.parse_offset(after.latest_offset(offset, None))
    assert all(p.again is None for p in last.tables.values())


def start_driver(
    db: ConnectorUnderTest, options: dict[str, str], checkpoint: Path, out: Path, mode: str
) -> Any:
    """tests/support/cdc_driver.py in its own process group (so SIGKILL takes the JVM)."""
    argv = [db.connector.format, json.dumps(options), str(checkpoint), str(out), mode]
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.cdc_driver", *argv],
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=open(out.parent / f"driver-{mode}-{time.monotonic_ns()}.log", "wb"),
    )


def batches(out: Path) -> list[Path]:
    return sorted(out.glob("batch_*.parquet"))


def kill_when(process: Any, ready: Callable[[], bool], timeout: float = 300) -> None:
    """SIGKILL the driver's whole process group once ``ready()``."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert process.poll() is None, f"driver exited early with {process.returncode}"
        assert time.monotonic() < deadline, "driver made no progress"
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)


def test_sigkill_mid_snapshot_and_mid_stream_then_resume_exactly_once(
    spark: Any, db: ConnectorUnderTest, namespace: str, tmp_path: Path
) -> None:
    db.create_orders(namespace, 6000)
    options = {
        **db.options(namespace, "orders"),
        "scan.incremental.snapshot.chunk.size": "150",
        "scan.incremental.snapshot.rows-per-partition": "300",
        "maxRowsPerTrigger": "450",
    }
    checkpoint, out = tmp_path / "ckpt", tmp_path / "out"
    out.mkdir()
    with db.writing(namespace, seed=3, key_space=18000) as writer:
        writer.limit = 100_000
        writer.pause = 0.02  # writes go on until the last kill; a backlog only adds catch-up
        first = start_driver(db, options, checkpoint, out, "stream")
        kill_when(first, lambda: len(batches(out)) >= 3)  # mid-snapshot: 6000 rows
        first_batches = len(batches(out))
        second = start_driver(db, options, checkpoint, out, "stream")

        def streaming() -> bool:  # two batches past the snapshot's end
            done = [snapshot_done(o) for o in committed_offsets(checkpoint)]
            return True in done and len(done) - done.index(True) > 2

        kill_when(second, streaming)
        assert len(batches(out)) > first_batches
    # the last run catches up in this session's (warm) JVM: a cold one costs ~15 s more
    drive(spark, db.connector.format, options, str(checkpoint), out, "available-now")

    replayer = ChangelogReplayer(lambda r: r["id"], ORDER_COLUMNS, db.by_key)
    for path in batches(out):  # a replayed batch replaced its file: each batch id once
        replayer.apply_batch(pq.read_table(path).to_pylist())
    assert writer.transactions > 100
    assert replayer.state == db.table_state(namespace, "orders")


def read_all(source: IncrementalSource[Any, Any], specs: list[Any]) -> list[dict[str, Any]]:
    """Every row of ``specs`` as an executor reads them (a pickled copy of the source)."""
    executor = pickle.loads(pickle.dumps(source))
    return [
        r for s in specs for b in executor.read(s) for r in pa.Table.from_batches([b]).to_pylist()
    ]


def test_every_type_reads_the_same_from_snapshot_and_log(
    db: ConnectorUnderTest, namespace: str
) -> None:
    same_from_snapshot_and_log(db, namespace, "types", db.type_cases(), {})


def test_options_that_change_types_read_the_same_from_snapshot_and_log(
    db: ConnectorUnderTest, namespace: str
) -> None:
    """Each option case: both paths give the values as written, under the option."""
    variants = db.option_type_cases()
    if not variants:
        pytest.skip(f"{db.name} has no options that change how types are read")
    for i, (extra, cases) in enumerate(variants):
        rows = same_from_snapshot_and_log(db, namespace, f"typed{i}", cases, extra)
        width = max(len(c.values) for c in cases)
        expected = {n: tuple(c.values[n % len(c.values)] for c in cases) for n in range(width)}
        assert {n: v for n, v in rows.items() if n in expected} == expected, extra


def same_from_snapshot_and_log(
    db: ConnectorUnderTest,
    namespace: str,
    table: str,
    cases: list[TypeCase],
    extra: dict[str, str],
) -> dict[int, tuple[Any, ...]]:
    """Rows of ``cases`` (and one of NULLs) read by a snapshot
    and by the log under ``extra`` options: the values must be equal; returns them by row."""
    columns = ", ".join(f"{c.name} {c.definition}" for c in cases)
    db.create_table(namespace, f"{table} (id INT PRIMARY KEY, {columns})")
    width = max(len(c.values) for c in cases)
    rows = [tuple(c.values[i % len(c.values)] for c in cases) for i in range(width)]
    rows.append(tuple(None for _ in cases))
    insert = f"INSERT INTO {table} VALUES (%s{', %s' * len(cases)})"
    for i, row in enumerate(rows):
        db.execute(namespace, insert, (i, *row))
    options = {**db.options(namespace, table), **extra}
    snapshot = source(db, options)
    from_snapshot = read_all(snapshot, snapshot.snapshot_partitions())
    stream = source(db, {**options, "scan.startup.mode": "latest-offset"})
    start = stream.initial_offset()
    for i, row in enumerate(rows):
        db.execute(namespace, insert, (1000 + i, *row))
    from_log: list[dict[str, Any]] = []
    run_batches(stream, start, from_log.extend)
    names = [c.name for c in cases]

    def values(out: list[dict[str, Any]]) -> dict[int, tuple[Any, ...]]:
        return {r["id"] % 1000: tuple(comparable(r[n]) for n in names) for r in out}

    assert [r["_change_type"] for r in from_log] == ["insert"] * len(rows)
    logged, snapshotted = values(from_log), values(from_snapshot)
    differing = [
        (i, name, a, b)
        for i in logged
        for name, a, b in zip(names, logged[i], snapshotted.get(i, ()), strict=False)
        if a != b
    ]
    assert not differing, f"(row, column, log, snapshot): {differing}"
    assert logged == snapshotted
    assert len(values(from_snapshot)) == len(rows)
    assert all(v is not None for v in values(from_snapshot)[0])
    return snapshotted


def test_comments_are_read_for_the_targets_when_asked(
    db: ConnectorUnderTest, namespace: str
) -> None:
    """``include-comments.enabled``: the table's and its columns' comments reach the
    tables sinks see (none without it), also a column a later ALTER adds with one; without
    it that ALTER's comment is not read into the offset either (a restart with the option
    on would otherwise find it there)."""
    db.create_commented_table(namespace)
    options = db.options(namespace, "noted")
    found = db.connector
    (plain,) = found.handle(found.parse_config(options)).inspect()
    assert plain.comments == NO_COMMENTS
    asked = {**options, "include-comments.enabled": "true"}
    (noted,) = found.handle(found.parse_config(asked)).inspect()
    assert noted.comments == NOTED_COMMENTS
    if not db.logs_comments:
        return
    # the envelope schema: rows may change columns without a restart, as in a pipeline
    envelope = {"scan.startup.mode": "latest-offset", "scan.envelope.enabled": "true"}
    stream, plain_stream = source(db, {**asked, **envelope}), source(db, {**options, **envelope})
    start, plain_start = stream.initial_offset(), plain_stream.initial_offset()
    db.add_commented_column(namespace)
    db.execute(namespace, "INSERT INTO noted (id, later) VALUES (1, 2)")
    for read, since, asks in ((stream, start, True), (plain_stream, plain_start, False)):
        parsed = SourceOffset.parse(json.dumps(run_batches(read, since, lambda rows: None)))
        (table_id,) = parsed.tables
        schema = parsed.schema_of(table_id)
        assert schema is not None
        after = found.handle(found.parse_config(asked)).columns(schema.table)
        assert after.comments.column("later") == ("added later" if asks else None)
        kept = after.comments.only(("id", "note"))
        assert kept == (NOTED_COMMENTS if asks else NO_COMMENTS)


def comparable(value: Any) -> Any:
    """NaN as a marker: two NaN floats are the same value here, though never ``==``."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN-float"
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def test_startup_modes(db: ConnectorUnderTest, namespace: str) -> None:
    db.create_orders(namespace, 30)
    before = db.table_state(namespace, "orders")
    options = orders_options(db, namespace)
    started = {
        mode: (s, s.initial_offset())
        for mode in ("initial", "snapshot", "latest-offset")
        for s in [source(db, {**options, "scan.startup.mode": mode})]
    }
    db.execute(namespace, "INSERT INTO orders VALUES (1000, 'new', 1)")
    db.execute(namespace, "UPDATE orders SET qty = 77 WHERE id = 0")
    db.execute(namespace, "DELETE FROM orders WHERE id = 3")
    emitted: dict[str, list[dict[str, Any]]] = {}
    for mode, (s, offset) in started.items():
        out: list[dict[str, Any]] = []
        run_batches(s, offset, out.extend)
        emitted[mode] = out

    def replayed(rows: list[dict[str, Any]]) -> dict[Any, tuple[Any, ...]]:
        replayer = ChangelogReplayer(lambda r: r["id"], ORDER_COLUMNS, db.by_key)
        replayer.apply_batch(rows)
        return replayer.state

    assert replayed(emitted["initial"]) == db.table_state(namespace, "orders")
    # the snapshot only, as of the start; by key (no old rows to undo later changes with)
    # each chunk as of its read, here after the changes
    only = db.table_state(namespace, "orders") if db.by_key else before
    assert replayed(emitted["snapshot"]) == only
    changes = [(r["_change_type"], r["id"]) for r in emitted["latest-offset"]]
    assert changes == [
        ("insert", 1000),
        *([] if db.by_key else [("update_preimage", 0)]),
        ("update_postimage", 0),
        ("delete", 3),
    ]


def retried(action: Callable[[], T], failures: list[BaseException], limit: int = 40) -> T:
    """``action`` again after a failure, as Spark retries a batch (a lost connection fails
    a read; it must never shorten one)."""
    while True:
        try:
            return action()
        except Exception as exc:
            failures.append(exc)
            assert len(failures) < limit, f"no progress: {failures[-3:]}"
            time.sleep(0.1)


def through(proxied: IncrementalSource[Any, Any], planner: IncrementalSource[Any, Any]) -> Any:
    """An executor's copy of ``planner`` whose reads go through ``proxied``'s connection
    options (the tables are the planner's, as Spark ships them)."""
    executor: IncrementalSource[Any, Any] = pickle.loads(pickle.dumps(planner))
    executor.__setstate__({"dialect": proxied.dialect, "_tables": planner.tables})
    return executor


def test_lost_connections_lose_and_repeat_nothing(db: ConnectorUnderTest, namespace: str) -> None:
    """Executors' connections (log and chunk reads) cut again and again: every read either
    completes with the right rows or fails, and its batch is read again as Spark would after
    a failed task; never a short read, never a repeat.

    The driver's planning connection is not cut: a failed plan fails the query, which the
    next run resumes (the SIGKILL test covers that)."""
    db.create_orders(namespace, 3000)
    proxy = CuttableProxy(int(db.options(namespace, "orders")["port"]), chunk=1024)
    options = orders_options(db, namespace, **{"connect.max-retries": "10"})
    replayer = ChangelogReplayer(lambda r: r["id"], ORDER_COLUMNS, db.by_key)
    failures: list[BaseException] = []
    done = threading.Event()

    def cut_repeatedly() -> None:
        """Ten cuts, 0.15 s apart, then the network heals (reads must finish some time)."""
        for _ in range(10):
            if done.wait(0.15):
                return
            proxy.cut()

    cutter = threading.Thread(target=cut_repeatedly, daemon=True)
    planner = source(db, options)
    executor = through(source(db, db.proxied(options, proxy.port)), planner)

    def read(specs: list[Any]) -> list[dict[str, Any]]:
        return retried(lambda: read_all(executor, specs), failures)

    try:
        with db.writing(namespace, seed=11, key_space=9000) as writer:
            writer.limit = 600
            cutter.start()
            offset = planner.initial_offset()
            for _ in range(200):
                end = planner.latest_offset(offset, 600)
                if end == offset and writer.transactions >= writer.limit:
                    break
                replayer.apply_batch(read(planner.partitions(offset, end)))
                offset = end
        end = planner.latest_offset(offset, None)
        replayer.apply_batch(read(planner.partitions(offset, end)))
    finally:
        done.set()
        proxy.close()
        planner.close()
    assert proxy.cuts >= 3
    assert replayer.state == db.table_state(namespace, "orders")


def test_bad_options_fail_up_front_naming_the_option(
    db: ConnectorUnderTest, namespace: str
) -> None:
    for bad in db.bad_options():
        with pytest.raises(OptionError, match=bad.message):
            db.connector.parse_config({**db.options(namespace, "orders"), **bad.options})


def test_a_wrong_password_is_never_shown(db: ConnectorUnderTest, namespace: str) -> None:
    db.create_orders(namespace, 1)
    secret = "Wr0ng-s3cret-never-shown"
    s = source(db, db.wrong_password(db.options(namespace, "orders"), secret))
    with pytest.raises(Exception) as failure:
        s.tables  # noqa: B018  (connects, validates, discovers)
    assert secret not in str(failure.value) and secret not in repr(failure.value)
    assert secret not in repr(s.dialect) and secret not in repr(s.settings)

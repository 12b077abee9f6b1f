"""The disk of a pipeline's folder (its checkpoint and its Delta target) fills up while it
streams random writes: the run stops with a message that says so, nothing half-written is
taken for done, and once space is freed the next run resumes; the target equals the
source, ``verify`` agreeing.

The disk is a small tmpfs mounted for the test (root can mount here; elsewhere the test
says why it cannot run)."""

from __future__ import annotations

import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.cli.commands import verify_pipeline
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.failure import failure_text
from sparkcdc.pipeline.runner import PipelineRun, prepare
from tests.integration.test_mysql_source import orders
from tests.integration.test_pipeline_delta import delta_rows
from tests.support.mariadb_writes import mariadb_writer, table_state
from tests.support.pipelines import (
    committed_offsets,
    pipeline_file,
    run_available_now,
    snapshot_done,
    wait_until,
)

__all__ = ["orders"]  # the fixture, re-used


@pytest.fixture
def small_disk(scratch: Path) -> Iterator[Path]:
    """A 48 MiB file system of its own."""
    mount = scratch / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """A file that takes every free byte of ``disk``."""
    filler = disk / "filler"
    block = b"\0" * (1 << 20)
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(block)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    with open(filler, "ab", buffering=0) as out:  # the last partial megabyte too
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


@pytest.mark.faults
@pytest.mark.timeout(600)
def test_a_full_disk_stops_the_run_saying_so_and_the_next_run_resumes(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, small_disk: Path
) -> None:
    pipeline = pipeline_file(
        small_disk, mariadb, f"{orders}.(orders|audit)", "type: delta\npath: lake", max_rows=600
    )
    checkpoint = small_disk / "checkpoint"
    writer = mariadb_writer(mariadb, orders, seed=21, key_space=7000)
    writer.limit, writer.pause = 1500, 0.02  # enough to span the fill
    run: PipelineRun = prepare(load_pipeline(pipeline), spark=spark)
    run.start()
    writer.start()
    try:
        wait_until(lambda: len(committed_offsets(checkpoint)) >= 2, "two batches")
        assert not snapshot_done(committed_offsets(checkpoint)[-1])
        filler = fill(small_disk)
        wait_until(lambda: not run.active, "the run to stop", timeout=240)
        stopped = failure_text(str(run.query.exception()))
    finally:
        writer.stop()
        run.stop()
    assert "No space left on device" in stopped and "free space" in stopped, stopped
    filler.unlink()
    # the next run, with room again: it resumes (a run that cannot fails here, saying why)
    # and catches up with every write, the ones made while the disk was full too
    run_available_now(spark, pipeline)
    lake = small_disk / "lake" / orders
    for table in ("orders", "audit"):
        assert delta_rows(spark, lake / table) == table_state(mariadb, orders, table), table
    verdicts = verify_pipeline(load_pipeline(pipeline), spark)
    assert [v.status for v in verdicts] == ["equal", "equal"]
    print(f"\ndisk full: the run stopped with: {stopped}")

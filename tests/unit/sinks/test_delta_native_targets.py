"""A native target's first commit written crash-safe (sinks/delta/native_targets.py), on
real folders read by delta-rs: a create killed (SIGKILL) between staging the commit and
linking it into place (``SPARKCDC_CRASH_AT=delta-commit-staged``) leaves no table, only
the staged file, which delta-rs skips and the next create removes; a commit 0 another
process wrote is never replaced."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from sparkcdc.core.crash_points import CRASH_AT, DELTA_COMMIT_STAGED
from sparkcdc.core.errors import SparkCdcError
from sparkcdc.sinks.delta import native_targets
from sparkcdc.sinks.delta.native_targets import FIRST_COMMIT, staged_files

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = StructType([StructField("id", LongType(), False), StructField("v", StringType())])
PROPERTIES = {"delta.enableChangeDataFeed": "true"}
#: Creates the target in the folder ``argv[1]`` in a process of its own.
CREATE = """
import sys
from tests.unit.sinks.test_delta_native_targets import PROPERTIES, SCHEMA
from sparkcdc.sinks.delta import native_targets
native_targets.create(sys.argv[1], SCHEMA, (), PROPERTIES)
"""


def test_a_create_killed_before_its_link_leaves_no_table_and_the_next_one_cleans_up(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "lake" / "db" / "t"
    done = subprocess.run(
        [sys.executable, "-c", CREATE, str(folder)],
        cwd=ROOT,
        env={**os.environ, CRASH_AT: DELTA_COMMIT_STAGED},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]
    log = folder / "_delta_log"
    (staged,) = staged_files(log)
    assert [p.name for p in log.iterdir()] == [staged.name]  # no commit 0
    assert staged.read_text(encoding="utf-8").count("\n") == 3  # written whole: 3 actions
    assert native_targets.existing(str(folder)) is None  # no table: created again

    native_targets.create(str(folder), SCHEMA, (), PROPERTIES)
    assert [p.name for p in log.iterdir()] == [FIRST_COMMIT]  # the leftover removed
    found = native_targets.existing(str(folder))
    assert found is not None
    assert native_targets.columns(found) == {"id": LongType(), "v": StringType()}
    assert found.metadata().configuration == PROPERTIES


def test_a_commit_0_someone_else_wrote_is_never_replaced(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    native_targets.create(str(folder), SCHEMA, (), PROPERTIES)
    first = (folder / "_delta_log" / FIRST_COMMIT).read_bytes()
    with pytest.raises(SparkCdcError, match="another process writes that folder"):
        native_targets.create(str(folder), SCHEMA, ("id",), {})
    assert (folder / "_delta_log" / FIRST_COMMIT).read_bytes() == first
    assert staged_files(folder / "_delta_log") == []


def test_a_staged_file_left_beside_commit_0_is_skipped_by_readers(tmp_path: Path) -> None:
    """A crash after the link and before the staged file's removal: the table is whole,
    and delta-rs does not take the staged file for a version."""
    folder = tmp_path / "t"
    native_targets.create(str(folder), SCHEMA, (), PROPERTIES)
    commit = folder / "_delta_log" / FIRST_COMMIT
    leftover = folder / "_delta_log" / ".0f0e0d0c-0b0a-4908-8706-050403020100.json.tmp"
    leftover.write_bytes(commit.read_bytes())
    assert staged_files(folder / "_delta_log") == [leftover]
    found = native_targets.existing(str(folder))
    assert found is not None and found.version() == 0

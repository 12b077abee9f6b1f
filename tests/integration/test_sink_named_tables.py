"""A sink option naming target tables (the Delta sink's ``cluster.key``) with an entry
that names none: ``sparkcdc validate`` and a run's start refuse it against a real
MariaDB's tables, before anything is written, naming the entry and the target it meant
(pipeline/named_tables.py); a table that a watched pattern may capture later is accepted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkcdc.cli.main import main
from sparkcdc.core.errors import OptionError
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import prepare
from tests.support.pipelines import pipeline_file


def test_a_cluster_key_entry_naming_no_target_is_refused_up_front(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    mysql_db: str,
    scratch: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("orders", "users"):
        mariadb.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, region INT)", database=mysql_db)
    sink = f"type: delta\npath: lake\ncluster.key: {mysql_db}.orders:region;{mysql_db}.ordrs:id"
    path = pipeline_file(scratch, mariadb, f"{mysql_db}.(orders|users)", sink)

    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"option 'cluster.key' has entry '{mysql_db}.ordrs:id'" in " ".join(err.split())
    assert f"did you mean {mysql_db}.orders?" in " ".join(err.split())
    with pytest.raises(OptionError, match=rf"'{mysql_db}\.ordrs:id'"):
        prepare(load_pipeline(path), spark=spark)
    assert not (scratch / "lake").exists()  # no target made

    # a table the watched pattern may capture later: its entry waits for it
    later = f"{mysql_db}.orders:region;{mysql_db}.orders_2026:id"
    watched = pipeline_file(
        scratch,
        mariadb,
        f"{mysql_db}.orders.*",
        f"type: delta\npath: lake\ncluster.key: {later}",
        extra_source="scan.newly-added-table.enabled: true",
    )
    assert main(["validate", str(watched)]) == 0, capsys.readouterr().err

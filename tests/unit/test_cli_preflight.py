"""What validate and run check before Spark starts, without writing: folders, jars and the
sink's servers."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from sparkcdc.cli.preflight import PreflightError, jar_report, reachable, unwritable


def test_a_folder_is_judged_by_its_nearest_existing_parent(tmp_path: Path) -> None:
    assert unwritable(tmp_path / "new" / "deeper") is None
    assert not (tmp_path / "new").exists()  # nothing was made
    (tmp_path / "file").write_text("x")
    assert "is a file" in str(unwritable(tmp_path / "file" / "below"))
    assert "virtual file system" in str(unwritable(Path("/proc/lakehouse")))
    assert "virtual file system" in str(unwritable(Path("/sys/x/y")))


def test_an_empty_folder_of_jars_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPARKCDC_JARS_DIR", str(tmp_path))
    with pytest.raises(PreflightError, match="no JVM jars in"):
        jar_report({})
    (tmp_path / "spark").mkdir()
    (tmp_path / "spark" / "delta-spark_2.13-4.4.0.jar").write_bytes(b"")
    assert jar_report({}) == [f"jars ok: {tmp_path / 'spark'}"]


def test_a_closed_port_is_refused_with_the_server_named() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        listener.listen()
        reachable("127.0.0.1", port, "Kafka broker")  # accepts
    with pytest.raises(PreflightError, match=f"Kafka broker 127.0.0.1:{port} is not reachable"):
        reachable("127.0.0.1", port, "Kafka broker")


def test_a_catalog_sinks_external_location_is_checked_like_a_path(tmp_path: Path) -> None:
    from sparkcdc.cli.preflight import preflight
    from sparkcdc.pipeline.definition import load_pipeline

    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(
        "source:\n  type: mysql\n  hostname: 127.0.0.1\n  username: cdc\n"
        "  tables: app_db.orders\n"
        "sink:\n  type: delta\n  table-name: lake.{table}\n  location: /proc/lakehouse\n"
        "pipeline:\n  name: p\n  checkpoint: checkpoint\n",
        encoding="utf-8",
    )
    with pytest.raises(PreflightError, match=r"sink\.location: cannot write to /proc/lakehouse"):
        preflight(load_pipeline(pipeline), None, lambda line: None, servers=False)

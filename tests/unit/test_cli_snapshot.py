"""``sparkcdc snapshot`` checks the tables it names before writing a signal: against the
pipeline's table options and, once the pipeline has committed a batch, against the tables
of its checkpoint (a signal the pipeline would skip must not look like it worked)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkcdc.cli.main import main
from sparkcdc.pipeline.definition import load_pipeline

PIPELINE = """\
source:
  type: mysql
  hostname: 127.0.0.1
  port: 3306
  username: cdc
  password: secret
  tables: shop.(orders|items|new_.*)
sink:
  type: console
pipeline:
  name: p
  checkpoint: checkpoint
"""


def committed(checkpoint: Path, tables: list[str]) -> None:
    """A checkpoint as Spark leaves it after batch 0: its offset, then its commit."""
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "commits").mkdir()
    offset = {"log": {}, "tables": {t: {"done": True} for t in tables}}
    (checkpoint / "offsets" / "0").write_text(
        f'v1\n{{"batchWatermarkMs":0}}\n{json.dumps(offset)}\n'
    )
    (checkpoint / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}\n')


def signals(path: Path) -> list[dict[str, object]]:
    file = load_pipeline(path).signal_file
    return [json.loads(line) for line in file.read_text().splitlines() if line.strip()]


def test_tables_are_checked_before_the_signal_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE)
    # no batch yet: the table options decide
    assert main(["snapshot", str(path), "--table", "shop.new_one", "--id", "a"]) == 0
    assert main(["snapshot", str(path), "--table", "shop.users"]) == 2
    assert "is not captured by this pipeline" in capsys.readouterr().err

    committed(tmp_path / "checkpoint", ["shop.orders", "shop.items"])
    assert main(["snapshot", str(path), "--table", "shop.orders", "--id", "b"]) == 0
    assert main(["snapshot", str(path), "--table", "shop.new_two", "--id", "c"]) == 2
    err = capsys.readouterr().err
    assert "'shop.new_two', which is not a captured table" in err
    assert "captured: shop.items, shop.orders" in err and "no re-read needed" in err
    assert main(["snapshot", str(path), "--stop", "--table", "shop.ordrs"]) == 2
    assert [s["id"] for s in signals(path)] == ["a", "b"]


def test_recover_needs_a_committed_batch_and_writes_nothing_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``sparkcdc recover`` on a pipeline that has committed nothing has no position to
    lose: it says so, before connecting anywhere, and writes no signal."""
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE)
    assert main(["recover", str(path)]) == 2
    assert "has committed no batch" in capsys.readouterr().err
    assert not load_pipeline(path).signal_file.exists()

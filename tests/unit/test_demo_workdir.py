"""``sparkcdc demo --workdir DIR`` empties only a folder the demo made (#63): it used to
remove DIR recursively, whatever it held."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.cli.demo import MARKER, fresh_workdir
from sparkcdc.cli.main import main
from sparkcdc.core.errors import SparkCdcError


def test_a_folder_the_demo_did_not_make_is_never_emptied(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("years of work")
    with pytest.raises(SparkCdcError, match="was not made by sparkcdc demo"):
        fresh_workdir(home)
    assert (home / "thesis.tex").read_text() == "years of work"
    file = tmp_path / "notes.txt"
    file.write_text("x")
    with pytest.raises(SparkCdcError, match="was not made by sparkcdc demo"):
        fresh_workdir(file)
    assert file.read_text() == "x"


def test_the_command_stops_before_touching_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["demo", "--workdir", str(tmp_path), "--rows", "0"]) == 2
    assert "was not made by sparkcdc demo" in capsys.readouterr().err
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_the_demos_own_folder_starts_afresh(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    fresh_workdir(folder)  # new
    assert (folder / MARKER).is_file()
    (folder / "checkpoint").mkdir()
    (folder / "checkpoint" / "old").write_text("old run")
    fresh_workdir(folder)  # the demo's own: emptied
    assert sorted(p.name for p in folder.iterdir()) == [MARKER]
    empty = tmp_path / "empty"
    empty.mkdir()
    fresh_workdir(empty)  # an empty folder is taken
    assert (empty / MARKER).is_file()

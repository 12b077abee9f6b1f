"""The checkpoint folder is its owner's only (0700), new or found with the umask's mode
(#63): it holds the source's positions, and its signal and pause files steer the run."""

from __future__ import annotations

import stat
from pathlib import Path

from sparkcdc.pipeline.checkpoint import ensure_query_id, private_folder


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_checkpoint_is_private(tmp_path: Path) -> None:
    checkpoint = tmp_path / "pipelines" / "orders" / "checkpoint"
    ensure_query_id(checkpoint)
    assert mode(checkpoint) == 0o700


def test_an_existing_one_is_made_private(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir(mode=0o755)
    checkpoint.chmod(0o755)
    private_folder(checkpoint)
    assert mode(checkpoint) == 0o700

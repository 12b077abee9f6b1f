"""Replaying a sparkcdc changelog and checking the invariant of docs/design.md on the way."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

_ORDER = {"update_preimage": 0, "delete": 0, "insert": 1, "update_postimage": 1}


class ChangelogReplayer:
    """Applies changelog rows; fails on a duplicate insert or a mismatching pre-image/delete.

    ``by_key``: the changelog of PostgreSQL's ``changelog-mode: upsert``, replayed as an
    upsert target applies it: inserts and post-images set the key's row, deletes and the
    pre-images of moved keys (the key only) remove it; a value ``_unchanged`` names is the
    key's stored one. A chunk there may be ahead of its
    batch and the log then replays changes it already holds, so rows are not checked
    against what was emitted; only the end state and the version order are."""

    def __init__(
        self,
        key: Callable[[dict[str, Any]], Any],
        data_columns: Sequence[str],
        by_key: bool = False,
    ) -> None:
        self.key = key
        self.by_key = by_key
        self.columns = list(data_columns)
        self.state: dict[Any, tuple[Any, ...]] = {}
        self.last_version: dict[Any, int] = {}

    def apply_batch(self, rows: Iterable[dict[str, Any]]) -> None:
        ordered = sorted(rows, key=lambda r: (r["_commit_version"], _ORDER[r["_change_type"]]))
        for row in ordered:
            self.apply(row)

    def apply(self, row: dict[str, Any]) -> None:
        key = self.key(row)
        values = tuple(row[c] for c in self.columns)
        kind = row["_change_type"]
        version = row["_commit_version"]
        previous = self.last_version.get(key)
        if previous is not None and kind != "update_postimage":
            assert version > previous, f"version {version} of {key} not after {previous}"
        self.last_version[key] = version
        if self.by_key:
            absent = row.get("_unchanged") or ()
            if absent and key in self.state:  # values the WAL lacks: the stored ones stay
                stored = dict(zip(self.columns, self.state[key], strict=True))
                values = tuple(stored[c] if c in absent else row[c] for c in self.columns)
            if kind in ("insert", "update_postimage"):
                self.state[key] = values
            else:
                self.state.pop(key, None)
            return
        if kind in ("insert", "update_postimage"):
            assert key not in self.state, f"duplicate {kind} of key {key}: {row}"
            self.state[key] = values
        else:
            assert key in self.state, f"{kind} of key {key} that was never emitted: {row}"
            assert self.state[key] == values, f"{kind} {values} != emitted {self.state[key]}"
            del self.state[key]

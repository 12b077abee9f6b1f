"""Table-level changes the source records in a batch's end offset (a TRUNCATE's
``"truncated"``, a DROP's ``"table_dropped"``: the position after the statement, in the
table's ``schema`` entry), and which of them are new in a batch: no row says so, so the
runner compares the batch's end offset with the previous batch's."""

from __future__ import annotations

import functools
import json
from typing import Any

from sparkcdc.core.table import TableId


def new_marks(previous: str | None, offset: str, key: str) -> dict[TableId, str]:
    """The tables whose ``key`` mark is new in the batch that ends at ``offset`` (JSON
    text) and starts at ``previous`` (None: the stream's first batch, whose start records
    none), each with the statement that made it."""
    before = marks(previous, key) if previous is not None else {}
    return {
        table: statement
        for table, (marker, statement) in marks(offset, key).items()
        if before.get(table, (None, ""))[0] != marker
    }


def marks(offset: str, key: str) -> dict[TableId, tuple[str, str]]:
    """Each table's ``key`` mark in the offset (as canonical JSON) and its statement."""
    found = {}
    for name, schema in _schemas(offset).items():
        if key in schema:
            marker = json.dumps(schema[key], sort_keys=True)
            found[TableId.from_key(name)] = (marker, str(schema.get("change", "")))
    return found


@functools.lru_cache(maxsize=4)
def _schemas(offset: str) -> dict[str, dict[str, Any]]:
    """The schema entries of the offset's tables, by table name (read only). Parsed once
    per offset: every kind of mark (truncates, drops, lost logs) is looked for in the same
    two offsets each batch, the previous batch's offset is this one's start, and a
    1000-table offset (~1.2 MB) takes ~40 ms to parse."""
    tables = json.loads(offset).get("tables", {})
    return {name: p["schema"] for name, p in tables.items() if p.get("schema")}

"""A captured PostgreSQL table as JSON, for the offset: a table's entry carries the table
it was read with once a change was recorded for it (a TRUNCATE: snapshot/driver.py), and
restarts and replays take the table from there. Exact: the JSON reads back to an equal
:class:`PgTable` (OID, type OIDs and modifiers included, which reads check against the
WAL's Relation messages)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from sparkcdc.connectors.postgres.server.discovery import PgTable
from sparkcdc.connectors.postgres.server.types import PgColumn, PgType
from sparkcdc.core.comments import Comments
from sparkcdc.core.table import TableId


def table_to_json(table: PgTable) -> dict[str, Any]:
    return {
        "table": table.table_id.key,
        "oid": table.oid,
        "columns": [
            [c.name, _type_to_json(c.type), c.nullable, c.collation, c.deterministic]
            for c in table.columns
        ],
        "primary_key": list(table.primary_key),
        "chunk_key": table.chunk_key,
        "replica_identity": table.replica_identity,
        "column_types": [list(t) for t in table.column_types],
        "attnums": list(table.attnums),
        **({} if table.comments is None else {"comments": _comments_to_json(table.comments)}),
    }


def table_from_json(data: Mapping[str, Any]) -> PgTable:
    return PgTable(
        TableId.from_key(data["table"]),
        int(data["oid"]),
        tuple(
            PgColumn(name, _type_from_json(kind), nullable, collation, deterministic)
            for name, kind, nullable, collation, deterministic in data["columns"]
        ),
        tuple(data["primary_key"]),
        data["chunk_key"],
        data["replica_identity"],
        tuple((int(oid), int(typmod)) for oid, typmod in data["column_types"]),
        tuple(int(n) for n in data.get("attnums", ())),
        _comments_from_json(data["comments"]) if "comments" in data else None,
    )


def _comments_to_json(comments: Comments) -> dict[str, Any]:
    return {"table": comments.table, "columns": [list(c) for c in comments.columns]}


def _comments_from_json(data: Mapping[str, Any]) -> Comments:
    return Comments(data.get("table"), tuple((str(n), str(t)) for n, t in data["columns"]))


def _type_to_json(kind: PgType) -> dict[str, Any]:
    return dataclasses.asdict(kind)  # nested: an array's element is a dict too


def _type_from_json(data: Mapping[str, Any]) -> PgType:
    element = data.get("element")
    return PgType(**{**data, "element": None if element is None else _type_from_json(element)})

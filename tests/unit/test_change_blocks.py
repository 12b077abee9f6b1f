"""The columnar log path (``block_batch`` from whole rows events) gives exactly the batches
of the per-row path (``change_batch`` from one ``RowChange`` per row), for the typed
changelog and the multi-table envelope, with every metadata column."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
from decimal import Decimal

import pyarrow as pa
import pytest

from sparkcdc.connectors.mysql.binlog.position import POS_BITS
from sparkcdc.core.changes import ChangeType
from sparkcdc.core.rows import BlockKind, ChangeBlock, Row, RowChange
from sparkcdc.core.table import TableId
from sparkcdc.formats.changelog_arrow import (
    METADATA_FIELDS,
    ChangelogBatchBuilder,
    EnvelopeBatchBuilder,
    changelog_schema,
    envelope_schema,
)

TABLE = TableId("shop", "orders")
FIELDS = [
    pa.field("id", pa.int64(), nullable=False),
    pa.field("amount", pa.decimal128(10, 2)),
    pa.field("note", pa.string()),
    pa.field("at", pa.timestamp("us")),
]
ALL_METADATA = tuple(METADATA_FIELDS)
#: PostgreSQL's names of a table: its database, schema and table apart.
CONSTANTS = {"database_name": "shop", "schema_name": "sales", "table_name": "orders"}


def _row(rng: random.Random, key: int) -> Row:
    return (
        key,
        None if rng.random() < 0.2 else Decimal(rng.randint(-99999, 99999)) / 100,
        rng.choice([None, "", "ä€𝄞", "x" * rng.randint(0, 40)]),
        None
        if rng.random() < 0.2
        else dt.datetime(2024, 2, 29, 23, 59, 59, rng.randint(0, 999999)),
    )


def _blocks(seed: int, count: int) -> list[ChangeBlock]:
    rng = random.Random(seed)
    blocks = []
    for i in range(count):
        kind: BlockKind = rng.choice(["insert", "update", "delete"])
        n = rng.choice([0, 1, 2, 7, 50])
        images = [
            _row(rng, rng.randint(1, 10**9)) for _ in range(n * (2 if kind == "update" else 1))
        ]
        pos = 4 + 1000 * i
        file = f"binlog.{1 + i // 7:06d}"
        version = ((1 + i // 7) << POS_BITS) | pos
        stamp = rng.choice([0, 1, 1_700_000_000, 2_147_483_647])
        blocks.append(ChangeBlock(TABLE, kind, images, version, stamp, file, pos, f"0-1-{i}"))
    return blocks


def _per_row(blocks: list[ChangeBlock]) -> list[tuple[RowChange, list[tuple[ChangeType, Row]]]]:
    out: list[tuple[RowChange, list[tuple[ChangeType, Row]]]] = []
    for block in blocks:
        for change in block.changes():
            if change.before is None:
                assert change.after is not None
                out.append((change, [(ChangeType.INSERT, change.after)]))
            elif change.after is None:
                out.append((change, [(ChangeType.DELETE, change.before)]))
            else:
                images = [
                    (ChangeType.UPDATE_PREIMAGE, change.before),
                    (ChangeType.UPDATE_POSTIMAGE, change.after),
                ]
                out.append((change, images))
    return out


CHANGE_NAMES = ("_change_type", "_commit_version", "_commit_timestamp")


@pytest.mark.parametrize("metadata", [(), ALL_METADATA, ("row_kind", "binlog_gtid")])
@pytest.mark.parametrize("seed", range(5))
def test_changelog_block_batch_equals_change_batch(seed: int, metadata: tuple[str, ...]) -> None:
    schema = changelog_schema(FIELDS, metadata)
    builder = ChangelogBatchBuilder(schema, len(FIELDS), TABLE, CONSTANTS)
    blocks = _blocks(seed, 40)
    fast = builder.block_batch(blocks)
    reference = builder.change_batch(_per_row(blocks))
    assert fast.schema == reference.schema
    assert fast.to_pylist() == reference.to_pylist()
    assert fast.equals(reference)
    # the same blocks with their images already in Arrow columns (the decoder's sinks)
    sunk = [dataclasses.replace(b, images=[], sunk=len(b.images)) for b in blocks]
    rows = [image for b in blocks for image in b.images]
    struct_type = pa.struct([pa.field(f"c{i}", f.type) for i, f in enumerate(FIELDS)])
    data = pa.array(rows, struct_type).flatten()
    assert builder.block_batch(sunk, data).equals(reference)
    # ... and the change columns too (what a sink with change types gives)
    change_columns = [reference.column(name) for name in CHANGE_NAMES]
    assert builder.block_batch(sunk, [*data, *change_columns]).equals(reference)
    with pytest.raises(ValueError, match="images"):
        builder.block_batch(sunk, [a.slice(1) for a in data])


@pytest.mark.parametrize("metadata", [(), ALL_METADATA])
@pytest.mark.parametrize("seed", range(5))
def test_envelope_block_batch_equals_change_batch(seed: int, metadata: tuple[str, ...]) -> None:
    builder = EnvelopeBatchBuilder(
        envelope_schema(metadata),
        TABLE,
        [f.name for f in FIELDS],
        [f.type for f in FIELDS],
        [0],
        CONSTANTS,
    )
    blocks = _blocks(seed, 40)
    fast = builder.block_batch(blocks)
    reference = builder.change_batch(_per_row(blocks))
    assert fast.schema == reference.schema
    assert fast.to_pylist() == reference.to_pylist()
    assert fast.equals(reference)


def test_table_names_come_from_the_dialects_constants() -> None:
    names = ("database_name", "schema_name", "table_name")
    builder = ChangelogBatchBuilder(changelog_schema(FIELDS, names), len(FIELDS), TABLE, CONSTANTS)
    rows = builder.block_batch(_blocks(1, 3)).to_pylist()
    assert rows and all({n: r[n] for n in names} == CONSTANTS for r in rows)
    default = ChangelogBatchBuilder(changelog_schema(FIELDS, names[::2]), len(FIELDS), TABLE)
    first = default.block_batch(_blocks(1, 3)).to_pylist()[0]
    assert (first["database_name"], first["table_name"]) == (TABLE.database, TABLE.table)


def test_empty_blocks_give_an_empty_batch() -> None:
    schema = changelog_schema(FIELDS, ALL_METADATA)
    builder = ChangelogBatchBuilder(schema, len(FIELDS), TABLE, CONSTANTS)
    batch = builder.block_batch([ChangeBlock(TABLE, "update", [], 5, 1)])
    assert batch.num_rows == 0
    assert batch.schema == builder.schema


def test_block_changes_and_length() -> None:
    a, b, c, d = (1,), (2,), (3,), (4,)
    update = ChangeBlock(TABLE, "update", [a, b, c, d], 100, 7, "f", 9, "g")
    assert len(update) == 2
    assert list(update.changes()) == [
        RowChange(TABLE, a, b, 100, 7, "f", 9, "g"),
        RowChange(TABLE, c, d, 101, 7, "f", 9, "g"),
    ]
    delete = ChangeBlock(TABLE, "delete", [a], 5, 1)
    assert list(delete.changes()) == [RowChange(TABLE, a, None, 5, 1)]

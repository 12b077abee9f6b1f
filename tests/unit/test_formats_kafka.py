"""changelog-json, debezium-json and upsert messages: lossless round trips for every type
the MySQL source emits, the exact layouts, malformed input, and keep-last-row."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.changes import ChangeType
from sparkcdc.formats.changelog_json import ChangelogJsonCodec
from sparkcdc.formats.debezium_json import DebeziumJsonCodec, DebeziumRecord, SourceInfo, to_changes
from sparkcdc.formats.row_json_decode import MalformedRecordError, RowJson
from sparkcdc.formats.upsert_json import UpsertJsonCodec, UpsertMessage, normalize
from tests.support.kafka_rows import NAMES, TYPES, rows

ROWS = RowJson(NAMES, TYPES, ["id"])
CHANGELOG = ChangelogJsonCodec(NAMES, TYPES)
DEBEZIUM = DebeziumJsonCodec(NAMES, TYPES)
UPSERT = UpsertJsonCodec(NAMES, TYPES, ["id"])


@given(rows())
def test_row_json_round_trips_every_type(row: tuple[Any, ...]) -> None:
    text = ROWS.encode(row)
    assert ROWS.decode(text) == row
    assert json.loads(text).keys() == set(NAMES)  # NULLs are written, not dropped


@given(rows(), st.sampled_from(list(ChangeType)))
def test_changelog_json_round_trips(row: tuple[Any, ...], kind: ChangeType) -> None:
    assert CHANGELOG.decode(CHANGELOG.encode(kind, row)) == (kind, row)


@given(rows(), rows(), st.sampled_from(["c", "u", "d", "r"]), st.integers(0, 2**41))
def test_debezium_json_round_trips(
    before: tuple[Any, ...], after: tuple[Any, ...], op: str, ts_ms: int
) -> None:
    record = DebeziumRecord(
        op=op,
        before=before if op in ("u", "d") else None,
        after=after if op != "d" else None,
        source=SourceInfo("shop", "orders", "binlog.000002", 4711, "0-1-42"),
        ts_ms=ts_ms,
    )
    assert DEBEZIUM.decode(DEBEZIUM.encode(record)) == record


@given(rows(), st.sampled_from(list(ChangeType)))
def test_upsert_round_trips(row: tuple[Any, ...], kind: ChangeType) -> None:
    message = UPSERT.encode(kind, row)
    if kind == ChangeType.UPDATE_PREIMAGE:
        assert message is None
        return
    assert message is not None
    key, value = UPSERT.decode(message)
    assert key == (row[0],)
    assert value == (None if kind == ChangeType.DELETE else row)


def test_layouts_are_flink_and_debezium_ones() -> None:
    codec = ChangelogJsonCodec(["id", "price", "data", "at"], _types("int64 dec bin ts"))
    row = (1, Decimal("12.30"), b"\x00\xff", dt.datetime(2024, 1, 31, 10, tzinfo=dt.timezone.utc))
    assert codec.encode(ChangeType.UPDATE_POSTIMAGE, row) == (
        '{"data":{"id":1,"price":"12.30","data":"AP8=","at":"2024-01-31T10:00:00.000000Z"},'
        '"op":"+U"}'
    )
    deb = DebeziumJsonCodec(["id"], _types("int64"))
    text = deb.encode(DebeziumRecord("d", (7,), None, SourceInfo("db", "t", "f.1", 4, "0-1-2"), 5))
    assert json.loads(text) == {
        "before": {"id": 7},
        "after": None,
        "op": "d",
        "source": {"db": "db", "table": "t", "file": "f.1", "pos": 4, "gtid": "0-1-2"},
        "ts_ms": 5,
    }
    upsert = UpsertJsonCodec(["id", "v"], _types("int64 str"), ["id"])
    assert upsert.encode(ChangeType.DELETE, (3, "x")) == UpsertMessage('{"id":3}', None)
    assert upsert.encode(ChangeType.UPDATE_PREIMAGE, (3, "x"), moves_key=True) == UpsertMessage(
        '{"id":3}', None
    )


def test_debezium_update_unfolds_into_two_images_and_reads_connect_payloads() -> None:
    deb = DebeziumJsonCodec(["id", "v"], _types("int64 str"))
    wrapped = json.dumps({"schema": {}, "payload": {"before": {"id": 1, "v": "a"},
                          "after": {"id": 1, "v": "b"}, "op": "u"}})  # fmt: skip
    assert to_changes(deb.decode(wrapped)) == [
        (ChangeType.UPDATE_PREIMAGE, (1, "a")),
        (ChangeType.UPDATE_POSTIMAGE, (1, "b")),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[1]",
        '{"data":{"id":1},"op":"+X"}',
        '{"op":"+I"}',
        '{"data":{"id":"one"},"op":"+I"}',
        '{"data":{"id":true},"op":"+I"}',
        '{"data":{"id":1,"price":"abc"},"op":"+I"}',
        '{"data":{"id":1,"data":"***"},"op":"+I"}',
        '{"data":{"id":1,"at":"yesterday"},"op":"+I"}',
    ],
)
def test_malformed_changelog_json_raises(text: str) -> None:
    codec = ChangelogJsonCodec(["id", "price", "data", "at"], _types("int64 dec bin ts"))
    with pytest.raises(MalformedRecordError):
        codec.decode(text)


def test_malformed_debezium_and_upsert_raise() -> None:
    deb = DebeziumJsonCodec(["id"], _types("int64"))
    for text in ['{"op":"u","after":{"id":1}}', '{"op":"c"}', '{"op":"x","after":{"id":1}}']:
        with pytest.raises(MalformedRecordError):
            deb.decode(text)
    upsert = UpsertJsonCodec(["id", "v"], _types("int64 str"), ["id"])
    for message in [UpsertMessage("{}", None), UpsertMessage('{"id":null}', '{"id":1}')]:
        with pytest.raises(MalformedRecordError):
            upsert.decode(message)


def test_normalize_keeps_the_last_row_per_key() -> None:
    assert normalize(None, (1, "a")) == [(ChangeType.INSERT, (1, "a"))]
    assert normalize((1, "a"), (1, "a")) == []  # a replay changes nothing
    assert normalize((1, "a"), (1, "b")) == [
        (ChangeType.UPDATE_PREIMAGE, (1, "a")),
        (ChangeType.UPDATE_POSTIMAGE, (1, "b")),
    ]
    assert normalize((1, "b"), None) == [(ChangeType.DELETE, (1, "b"))]
    assert normalize(None, None) == []


@given(st.lists(st.tuples(st.integers(0, 3), st.none() | st.integers(0, 2)), max_size=40))
def test_normalized_changelog_replays_to_the_last_row_per_key(
    messages: list[tuple[int, int | None]],
) -> None:
    stored: dict[int, tuple[int, int]] = {}
    replayed: dict[int, tuple[int, int]] = {}
    for key, value in messages:
        incoming = None if value is None else (key, value)
        for kind, row in normalize(stored.get(key), incoming):
            if kind in (ChangeType.INSERT, ChangeType.UPDATE_POSTIMAGE):
                assert key not in replayed
                replayed[key] = row
            else:
                assert replayed.pop(key) == row
        if incoming is None:
            stored.pop(key, None)
        else:
            stored[key] = incoming
    assert replayed == stored


def _types(spec: str) -> list[Any]:
    import pyarrow as pa

    table = {
        "int64": pa.int64(),
        "dec": pa.decimal128(10, 2),
        "bin": pa.binary(),
        "ts": pa.timestamp("us", tz="UTC"),
        "str": pa.string(),
    }
    return [table[s] for s in spec.split()]

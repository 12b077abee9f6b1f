"""formats/envelope_decode.py without Spark: the changelog rows each kind of envelope row
makes, values read as Spark's ``from_json`` reads them (decimals rounded half up), and
what cannot be read failing, named, instead of becoming NULL. The comparison with Spark's
own unpacking, type by type, is tests/integration/test_envelope_fetch.py."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.formats.envelope_decode import EnvelopeBatch, EnvelopeDecoder, column_decoder
from sparkcdc.formats.row_json import RowJsonEncoder
from sparkcdc.formats.row_json_decode import MalformedRecordError

UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("price", pa.decimal128(6, 2)),
        ("_change_type", pa.string()),
        ("_commit_version", pa.int64()),
    ]
)


def _batch(rows: list[tuple[str, str | None, str | None, int]]) -> pa.RecordBatch:
    kinds, befores, afters, versions = (list(c) for c in zip(*rows, strict=True))
    return pa.RecordBatch.from_pydict(
        {
            "_change_type": kinds,
            "_commit_version": pa.array(versions, pa.int64()),
            "before": pa.array(befores, pa.string()),
            "after": pa.array(afters, pa.string()),
        }
    )


def _decoded(rows: list[tuple[str, str | None, str | None, int]]) -> list[dict[str, Any]]:
    decoder = EnvelopeDecoder(SCHEMA, 2, "db.t")
    decoded: list[dict[str, Any]] = decoder.decode(
        EnvelopeBatch(_batch(rows)), range(len(rows))
    ).to_pylist()
    return decoded


def test_each_kind_of_envelope_row_makes_the_changelog_rows_unpack_table_makes() -> None:
    a, b = '{"id": 1, "price": "1.50"}', '{"id": 1, "price": "2.25"}'
    rows: list[tuple[str, str | None, str | None, int]] = [
        ("insert", None, a, 1),
        ("update", a, b, 2),
        ("update", None, b, 3),
        ("delete", b, None, 4),
    ]
    got = [(r["_change_type"], r["_commit_version"], r["price"]) for r in _decoded(rows)]
    assert got == [
        ("insert", 1, Decimal("1.50")),
        ("update_preimage", 2, Decimal("1.50")),
        ("update_postimage", 2, Decimal("2.25")),
        ("update_postimage", 3, Decimal("2.25")),  # no old row: the new one alone
        ("delete", 4, Decimal("2.25")),
    ]


def test_only_the_rows_asked_for_in_their_order_and_missing_columns_are_null() -> None:
    rows: list[tuple[str, str | None, str | None, int]] = [
        ("insert", None, '{"id": 1}', 1),
        ("insert", None, '{"id": 2, "x": 1}', 2),
    ]
    decoder = EnvelopeDecoder(SCHEMA, 2, "db.t")
    got = decoder.decode(EnvelopeBatch(_batch(rows)), [1, 0]).to_pylist()
    assert [(r["id"], r["price"]) for r in got] == [(2, None), (1, None)]


@pytest.mark.parametrize(
    ("text", "value"),
    [("1.005", "1.01"), ("-1.005", "-1.01"), ("2.5E+1", "25.00"), ("0", "0.00")],
)
def test_decimals_are_rounded_half_up_to_the_scale_as_spark_rounds(text: str, value: str) -> None:
    assert column_decoder(pa.decimal128(6, 2))(text) == Decimal(value)


@pytest.mark.parametrize(
    ("row", "says"),
    [
        (("insert", None, '{"id": 1, "price": "12345.678"}', 1), "does not fit DECIMAL"),
        (("insert", None, '{"id": 1, "price": " 1"}', 1), "expected a decimal"),
        (("insert", None, '{"id": 1, "price": "1_0"}', 1), "expected a decimal"),
        (("insert", None, '{"id": 1, "price": 1.5}', 1), "expected a decimal"),
        (("insert", None, '{"id": true}', 1), "expected an integer"),
        (("insert", None, '{"id": 9223372036854775808}', 1), "does not fit"),
        (("insert", None, "[1]", 1), "not a JSON object"),
        (("insert", None, "{", 1), "not JSON"),
        (("insert", None, None, 1), "lacks its image"),
        (("delete", None, '{"id": 1}', 1), "lacks its image"),
        (("upsert", None, '{"id": 1}', 1), "not insert, update or delete"),
    ],
)
def test_what_spark_would_make_null_fails_naming_the_table(
    row: tuple[str, str | None, str | None, int], says: str
) -> None:
    with pytest.raises(MalformedRecordError, match=says) as failed:
        _decoded([row])
    assert "db.t" in str(failed.value)


VALUES = {
    pa.int32(): st.integers(-(2**31), 2**31 - 1),
    pa.float64(): st.floats(allow_nan=False),
    pa.float32(): st.floats(width=32, allow_nan=False),
    pa.decimal128(20, 0): st.integers(0, 2**64 - 1).map(Decimal),
    pa.string(): st.text(),
    pa.binary(): st.binary(),
    pa.date32(): st.dates(),
    pa.timestamp("us"): st.datetimes(),
    pa.timestamp("us", tz="UTC"): st.datetimes(timezones=st.just(UTC)),
    pa.list_(pa.int64()): st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))),
}


@given(st.data())
def test_a_value_written_by_row_json_reads_back_as_itself(data: st.DataObject) -> None:
    """What the sources write (formats/row_json.py) decodes to the same Arrow value."""
    kind = data.draw(st.sampled_from(list(VALUES)))
    value = data.draw(VALUES[kind])
    (encoded,) = RowJsonEncoder(["v"], [kind]).values((value,)).values()
    decoded = column_decoder(kind)(encoded)
    assert pa.array([decoded], kind).equals(pa.array([value], kind))

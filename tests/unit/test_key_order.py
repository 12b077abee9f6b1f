"""Key order in Python: PAD SPACE and NO PAD strings, weight tables, NULL first (no server).

PAD SPACE is checked against its definition: compare as if the shorter weight string were
padded with the weight of a space. The integration test checks the server agrees.
"""

from __future__ import annotations

import functools
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.connectors.mysql.config import MySqlSourceConfig, parse_config
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.types import MySqlColumn
from sparkcdc.connectors.mysql.snapshot.collation import (
    CollationWeights,
    implicit_weight,
    is_no_pad,
)
from sparkcdc.connectors.mysql.snapshot.keys import chunk_key_order, row_key
from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.chunks import Chunk
from sparkcdc.snapshot.keys import KeyOrder, pad_space, pad_space_key
from sparkcdc.snapshot.progress import TableProgress

#: Units around a space (0x20), including the marker values the key uses internally.
ASCII_UNITS = st.text(alphabet=" \t\x00\x01\x02\x03\x1f!ab~é😀", max_size=8)
#: The same around a UCA-like space weight U+0209.
UCA_UNITS = st.text(alphabet="\u0209\u0208\u020a\x00\x01\x02\u0e33\u0201", max_size=8)


def padded_cmp(a: str, b: str, space: str) -> int:
    """The definition of PAD SPACE: pad the shorter with spaces, then compare unit by unit."""
    n = max(len(a), len(b))
    a, b = a.ljust(n, space), b.ljust(n, space)
    return (a > b) - (a < b)


def cmp(a: object, b: object) -> int:
    return int(a > b) - int(a < b)  # type: ignore[operator]


@settings(max_examples=2000)
@given(ASCII_UNITS, ASCII_UNITS)
def test_pad_space_orders_code_points_as_if_padded(a: str, b: str) -> None:
    assert cmp(pad_space(a), pad_space(b)) == padded_cmp(a, b, " ")


@settings(max_examples=2000)
@given(UCA_UNITS, UCA_UNITS)
def test_pad_space_key_orders_any_space_weight_as_if_padded(a: str, b: str) -> None:
    assert cmp(pad_space_key(a, "\u0209"), pad_space_key(b, "\u0209")) == padded_cmp(a, b, "\u0209")


@settings(max_examples=500)
@given(st.lists(ASCII_UNITS, min_size=3, max_size=3))
def test_pad_space_keys_are_transitive_and_total(values: list[str]) -> None:
    a, b, c = sorted(values, key=pad_space)
    assert padded_cmp(a, b, " ") <= 0 and padded_cmp(b, c, " ") <= 0
    assert padded_cmp(a, c, " ") <= 0


@pytest.mark.parametrize(
    ("low", "high"),
    [
        ("a\t", "a"),  # the tab meets a pad space: 0x09 < 0x20
        ("a \t", "a"),
        ("a  \x1f", "a "),
        ("a", "a!"),
        ("a", "a \x21"),
        ("a \x00", "a"),
        ("", "\x21"),
        ("\x00", ""),
        ("a b", "ab"),
        ("ab", "a~"),
    ],
)
def test_pad_space_examples(low: str, high: str) -> None:
    assert pad_space(low) < pad_space(high)


def test_trailing_spaces_do_not_count_under_pad_space() -> None:
    assert pad_space("a") == pad_space("a  ") == pad_space("a ")
    assert pad_space("") == pad_space("   ")
    assert pad_space(" a") != pad_space("a")
    assert pad_space(42) == 42  # other types pass through


@settings(max_examples=500)
@given(ASCII_UNITS, ASCII_UNITS)
def test_no_pad_is_plain_code_point_order(a: str, b: str) -> None:
    order = KeyOrder()
    assert cmp(order.sort_key(a), order.sort_key(b)) == cmp(a, b)
    if a != b:
        assert order.sort_key(a) != order.sort_key(b)  # 'a' and 'a ' differ


def test_null_sorts_first_and_bounds_are_half_open() -> None:
    order = KeyOrder(pad_space)
    # NULL first, even before strings that sort below the empty one under PAD SPACE
    assert order.sort_key(None) < order.sort_key("\x00") < order.sort_key("")
    assert order.in_chunk(None, Chunk(None, "a"))
    assert not order.in_chunk(None, Chunk("", "a"))
    assert order.in_chunk("a ", Chunk("a", "b"))  # equal to lo under PAD SPACE
    assert not order.in_chunk("b  ", Chunk("a", "b"))  # equal to hi
    assert order.in_chunk("a\t", Chunk("", "a"))  # 'a\t' < 'a'
    assert order.emitted(None, TableProgress(started=True, cursor=""))
    assert not order.emitted("a ", TableProgress(started=True, cursor="a"))
    assert order.emitted("a\t", TableProgress(started=True, cursor="a"))
    again = pickle.loads(pickle.dumps(order))
    assert again == order and not again._bounds  # remembered bounds do not travel


@functools.cache  # built once: 65,536 weights, ~30 ms, and key() reads them only
def case_insensitive(pad: bool, rule: str = "\ufffd") -> CollationWeights:
    """A toy table like a general_ci: upper-case weights, ß = 'SS', U+00AD ignorable."""
    bmp = [chr(cp).upper() if cp < 0x80 else chr(cp) for cp in range(0x10000)]
    bmp[ord("ß")] = "SS"
    bmp[0xAD] = ""
    return CollationWeights("toy_ci", pad, " ", bmp, rule, {0x1F600: "\u2000"})


@settings(max_examples=1000)
@given(ASCII_UNITS, ASCII_UNITS)
def test_weight_tables_pad_their_weights(a: str, b: str) -> None:
    weights = case_insensitive(pad=True)
    expected = padded_cmp(a.upper(), b.upper(), " ") if "😀" not in a + b else None
    if expected is not None:
        assert cmp(weights.key(a), weights.key(b)) == expected


def test_weight_tables_handle_expansions_ignorables_and_supplementary() -> None:
    pad, nopad = case_insensitive(pad=True), case_insensitive(pad=False)
    assert pad.key("Straße") == pad.key("STRASSE ") == pad.key("stras\u00adse")
    assert nopad.key("Straße") == nopad.key("strasse") != nopad.key("strasse ")
    assert nopad.key("a😀") == "A\u2000"  # an exception
    assert nopad.key("a𝔸") == nopad.key("a🂡") == "A\ufffd"  # the constant rule
    implicit = CollationWeights("toy_520", False, " ", case_insensitive(False).bmp, "implicit")
    assert implicit.key("𝔸") == "".join(
        chr(int.from_bytes(implicit_weight(0x1D538)[i : i + 2], "big")) for i in (0, 2)
    )
    assert implicit.key("𝔸") < implicit.key("𝔹")
    code_point = CollationWeights("toy_bin", False, " ", case_insensitive(False).bmp, "code_point")
    assert code_point.key("x😀") == "X😀"


def _config() -> MySqlSourceConfig:
    return parse_config(
        {
            "hostname": "127.0.0.1",
            "port": "1",
            "username": "u",
            "password": "p",
            "database-name": "db",
            "table-name": "t",
        }
    )


def _table(*columns: MySqlColumn, key: tuple[str, ...]) -> CapturedTable:
    return CapturedTable(TableId("db", "t"), columns, key, key[0])


def _text(
    name: str, collation: str, data_type: str = "varchar", column_type: str = ""
) -> MySqlColumn:
    return MySqlColumn(
        name,
        1,
        data_type,
        column_type or f"{data_type}(10)",
        charset=collation.split("_")[0],
        collation=collation,
    )


def test_code_point_collations_need_no_server() -> None:
    config = _config()  # port 1: any attempt to connect would fail
    pad = chunk_key_order(_table(_text("k", "utf8mb4_bin"), key=("k",)), config)
    assert pad.sort_key("a\t") < pad.sort_key("a") == pad.sort_key("a ")
    for no_pad in ("utf8mb4_nopad_bin", "utf8mb4_0900_bin"):  # MariaDB, MySQL 8 (NO PAD)
        nopad = chunk_key_order(_table(_text("k", no_pad), key=("k",)), config)
        assert nopad.sort_key("a") < nopad.sort_key("a\t") < nopad.sort_key("a ")
    number = MySqlColumn("n", 2, "int", "int(11)")
    assert chunk_key_order(_table(number, key=("n",)), config) == KeyOrder()


def test_pad_attribute_by_collation_name() -> None:
    """MariaDB marks NO PAD collations by name; MySQL 8's UCA 9.0.0 ones are all NO PAD
    (information_schema.COLLATIONS.PAD_ATTRIBUTE), MySQL cannot run here to ask."""
    for name in ("utf8mb4_nopad_bin", "utf8mb4_unicode_nopad_ci", "utf8mb4_0900_ai_ci",
                 "utf8mb4_de_pb_0900_as_cs", "utf8mb4_0900_bin"):  # fmt: skip
        assert is_no_pad(name), name
    for name in ("utf8mb4_bin", "utf8mb4_general_ci", "latin1_swedish_ci", "utf8mb4_unicode_ci"):
        assert not is_no_pad(name), name


def test_row_identity_follows_pad_space_of_binary_string_keys() -> None:
    config = _config()
    number = MySqlColumn("n", 2, "int", "int(11)")
    single = row_key(_table(_text("k", "utf8mb4_bin"), number, key=("k",)), config)
    assert single(("a", 1)) == single(("a  ", 2)) != single(("a\t", 1))
    composite = row_key(_table(_text("k", "utf8mb4_bin"), number, key=("k", "n")), config)
    assert composite(("a", 1)) == composite(("a ", 1)) != composite(("a", 2))
    exact = row_key(_table(_text("k", "utf8mb4_nopad_bin"), number, key=("n", "k")), config)
    assert exact(("a", 1)) == (1, "a") != exact(("a ", 1))


def test_set_and_unsorted_enum_chunk_keys_are_refused() -> None:
    config = _config()
    labels = _text("k", "utf8mb4_bin", "enum", "enum('b','a')")
    with pytest.raises(SchemaError, match="not declared in text order"):
        chunk_key_order(_table(labels, key=("k",)), config)
    sorted_labels = _text("k", "utf8mb4_bin", "enum", "enum('a','b')")
    assert chunk_key_order(_table(sorted_labels, key=("k",)), config).collate is pad_space
    with pytest.raises(SchemaError, match="SET sorts by bit mask"):
        chunk_key_order(_table(_text("k", "utf8mb4_bin", "set", "set('a')"), key=("k",)), config)

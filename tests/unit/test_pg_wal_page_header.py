"""The WAL insert position moved back over a page header nothing follows
(connectors/postgres/server/gone_tables.py): the bound of a table renamed away."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.connectors.postgres.server.gone_tables import (
    LONG_PAGE_HEADER,
    SHORT_PAGE_HEADER,
    before_header,
)

BLOCK, SEGMENT = 8192, 16 * 1024 * 1024


def test_a_position_right_after_a_header_moves_back_to_the_page_start() -> None:
    assert before_header(0x2000028, BLOCK, SEGMENT) == 0x2000000  # a new segment's first page
    assert before_header(0x2002018, BLOCK, SEGMENT) == 0x2002000  # another page
    assert before_header(0x2002020, BLOCK, SEGMENT) == 0x2002020  # a record after the header
    assert before_header(0x2000018, BLOCK, SEGMENT) == 0x2000018  # inside a long header: as is


@given(st.integers(min_value=0, max_value=1 << 40), st.sampled_from([8192, 32768]))
def test_only_a_position_right_after_a_header_moves(insert: int, block: int) -> None:
    moved = before_header(insert, block, SEGMENT)
    if insert % SEGMENT == LONG_PAGE_HEADER:
        assert moved == insert - LONG_PAGE_HEADER and moved % SEGMENT == 0
    elif insert % block == SHORT_PAGE_HEADER and insert % SEGMENT >= block:
        assert moved == insert - SHORT_PAGE_HEADER and moved % block == 0
    else:
        assert moved == insert

"""Offsets name the server their log position was read from; read against another server,
the position is carried over by the connector or the read fails naming both servers,
never taken as a position of the server connected now (docs/design.md, "Which server a
position belongs to")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from sparkcdc.core.errors import SourceConfigurationError
from sparkcdc.core.rows import RowChange
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.driver import IncrementalSource
from sparkcdc.snapshot.origins import position_of
from tests.support.fake_dialect import Count, FakeDatabase

T = TableId("db", "t")
LOG = [RowChange(T, None, (k, "v"), 0, 0) for k in range(10, 14)]


def database(origin: str | None) -> FakeDatabase:
    return FakeDatabase(LOG, {T: {k: (k, "x") for k in range(5)}}, now=2, origin=origin)


def test_an_offset_names_its_server_and_is_read_on_it() -> None:
    db = database("a")
    source = IncrementalSource(db)
    offset = source.initial_offset()
    assert offset["origin"] == "a"
    db.now = 4
    end = source.latest_offset(offset, None)
    assert end["origin"] == "a" and end["log"] == {"n": 4}


def test_another_server_is_refused_naming_both_when_positions_cannot_move() -> None:
    offset = IncrementalSource(database("a")).initial_offset()
    moved = IncrementalSource(database("b"))
    with pytest.raises(SourceConfigurationError, match=r"from server a.*connected to server b"):
        moved.latest_offset(offset, None)
    with pytest.raises(SourceConfigurationError, match="from server a"):
        moved.partitions(offset, offset)


class Carrying(FakeDatabase):
    """A dialect that finds the same point on the other server (two changes further on)."""

    def position_elsewhere(self, data: Mapping[str, Any], origin: str, here: str) -> Count:
        return Count(int(data["n"]) + 2)


def test_a_carried_position_is_where_the_next_batch_starts() -> None:
    offset = IncrementalSource(database("a")).initial_offset()
    assert offset["log"] == {"n": 2}
    db = Carrying(LOG, {T: {k: (k, "x") for k in range(5)}}, now=4, origin="b")
    assert position_of(db, offset) == Count(4)
    assert position_of(db, {**offset, "origin": "b"}) == Count(2)


def test_offsets_without_a_server_are_read_anywhere() -> None:
    offset = IncrementalSource(database(None)).initial_offset()
    assert "origin" not in offset
    end = IncrementalSource(database("b")).latest_offset(offset, None)
    assert end["origin"] == "b"

"""The properties every registered sink must have, on its real storage, as far as it
declares them (sinks/capabilities.py).

Written only against the fixture interface (tests/conformance/sink.py), the ``Sink``
contract and write plans, and run once per sink fixture (tests/conformance/conftest.py):
a sink's declaration is its type's; a batch written twice lands once (exactly-once sinks)
or again (at-least-once sinks) and the target mirrors the source either way; a restarted
sink skips a replay and reads back at the batch's own offset; the column changes it
declares reach the target before the rows of the new shape; a truncate and a drop it
declares empty and remove the target, one it does not declare is refused whole; bad
options fail up front, naming the option, and a password never shows. One SparkSession,
small tables.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.core.changes import CHANGE_COLUMNS
from sparkcdc.core.comments import Comments
from sparkcdc.core.errors import OptionError, SparkCdcError
from sparkcdc.core.table import TableId
from sparkcdc.core.table_events import (
    ADD_COLUMN,
    ALTER_COLUMN_TYPE,
    DROP_COLUMN,
    DROP_TABLE,
    RENAME_COLUMN,
    TRUNCATE_TABLE,
    ColumnMoves,
)
from sparkcdc.sinks.base import Sink, SinkTable
from sparkcdc.sinks.registry import SINK_TYPES, validate_sink_options
from sparkcdc.sinks.write_plan import WritePlan, plan_of
from sparkcdc.snapshot.offset import SourceOffset
from tests.conformance.conftest import SINK_FIXTURES
from tests.conformance.sink import SinkUnderTest

PIPELINE = "conformance:0"
SCHEMA = "id BIGINT, a INT, b STRING, c STRING"
AT = dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
#: include-comments.enabled: what sinks with tables give the tables and columns they make
#: (quotes, a backslash and a percent sign are text, never SQL)
COMMENTS = Comments("the 'orders' \\ 100%", (("a", "a's \\ count"), ("b", "b: %s")))


def schema_of(ddl: str) -> Any:
    from pyspark.sql.types import StructType

    return StructType.fromDDL(ddl)


def changelog(spark: Any, schema: Any, rows: Sequence[tuple[Any, ...]]) -> Any:
    """A typed changelog: ``rows`` are (columns..., change type, commit version)."""
    from pyspark.sql.types import LongType, StringType, StructType, TimestampType

    full = StructType(
        [
            *schema.fields,
            *StructType()
            .add(CHANGE_COLUMNS[0], StringType())
            .add(CHANGE_COLUMNS[1], LongType())
            .add(CHANGE_COLUMNS[2], TimestampType())
            .fields,
        ]
    )
    return spark.createDataFrame([(*r, AT) for r in rows], full)


def offset(table: SinkTable, batch_id: int) -> str:
    """The batch's end offset: the target's table and another captured table."""
    return json.dumps(
        {
            "log": {"file": "binlog.000001", "pos": 1000 + batch_id},
            "tables": {table.source.key: {"done": True}, "conf.other": {"started": False}},
            "bounded": False,
        }
    )


def plan(spark: Any, table: SinkTable, batch_id: int, rows: Sequence[tuple[Any, ...]]) -> WritePlan:
    """Batch ``batch_id`` of ``table``'s changes, counted as the pipeline counts them: its
    snapshot rows are inserts at its end's version, ``100 * (batch_id + 1)``."""
    end = 100 * (batch_id + 1)
    snapshot = sum(1 for r in rows if r[-2] == "insert" and r[-1] == end)
    inserts = sum(1 for r in rows if r[-2] == "insert") - snapshot
    t = table.source
    return plan_of(
        PIPELINE,
        batch_id,
        {t: changelog(spark, table.schema, rows)},
        offset(table, batch_id),
        rows={t: len(rows)},
        snapshot_version=end,
        snapshot_rows={t: snapshot},
        log_inserts={t: inserts},
        sources={t: (t,)},
    )


def row(i: int, a: int, b: str, kind: str, version: int) -> tuple[Any, ...]:
    return (i, a, b, f"c{i}", kind, version)


#: Batch 0: the snapshot's rows; batch 1: an update, a delete, an insert from the log.
FIRST = [
    row(1, 10, "x", "insert", 100),
    row(2, 20, "y", "insert", 100),
    row(3, 30, "z", "insert", 100),
]
SECOND = [
    row(2, 20, "y", "update_preimage", 150),
    row(2, 21, "y2", "update_postimage", 150),
    row(3, 30, "z", "delete", 160),
    row(4, 40, "w", "insert", 170),
]
AFTER_SECOND = {1: (1, 10, "x", "c1"), 2: (2, 21, "y2", "c2"), 4: (4, 40, "w", "c4")}


@pytest.fixture
def stem(request: pytest.FixtureRequest) -> str:
    return f"cf{uuid.uuid4().hex[:10]}"


@pytest.fixture
def opened(
    spark: Any, sut: SinkUnderTest, scratch: Path, stem: str
) -> Iterator[tuple[Sink, SinkTable, dict[str, str]]]:
    """The sink under test, opened on one new table (``id`` its key)."""
    options = sut.options(scratch, stem)
    table = SinkTable(sut.table(stem), schema_of(SCHEMA), ("id",), comments=COMMENTS)
    sink = sut.create(options, PIPELINE)
    sink.open(spark, [table])
    try:
        yield sink, table, options
    finally:
        sink.close()


def test_every_registered_sink_type_has_a_fixture() -> None:
    """A sink type cannot skip the suite: registering one without a fixture fails here."""
    assert {name.split("-")[0] for name in SINK_FIXTURES} == set(SINK_TYPES)


def test_a_batch_written_twice_lands_once_or_is_declared_at_least_once(
    spark: Any, sut: SinkUnderTest, opened: tuple[Sink, SinkTable, dict[str, str]]
) -> None:
    """Spark replays the last batch after a crash: an exactly-once sink changes nothing
    (an older batch neither), an at-least-once sink writes it again; the target mirrors
    the source either way. What the sink does is what its type declares."""
    sink, table, options = opened
    assert sink.capabilities == sut.declared(options)
    exactly_once = sink.capabilities.exactly_once
    sink.write(plan(spark, table, 0, FIRST))
    sink.write(plan(spark, table, 1, SECOND))
    sink.write(plan(spark, table, 1, SECOND))  # the replay
    if exactly_once:
        sink.write(plan(spark, table, 0, FIRST))  # an older batch: no rows come back
    read = sut.read_back(spark, sink, table)
    assert read.rows == AFTER_SECOND
    sut.check_created(spark, sink, table, options)
    sut.check_comments(spark, sink, table, ("a", "b"))
    if exactly_once:
        assert read.repeated == 0
    else:  # a sink that skips replays declares exactly-once
        assert read.repeated > 0


def test_a_restarted_sink_skips_a_replay_and_reads_back_at_the_batchs_offset(
    spark: Any, sut: SinkUnderTest, opened: tuple[Sink, SinkTable, dict[str, str]]
) -> None:
    sink, table, options = opened
    sink.write(plan(spark, table, 0, FIRST))
    sink.write(plan(spark, table, 1, SECOND))
    sink.close()
    restarted = sut.create(options, PIPELINE)  # a new process: only the target remembers
    restarted.open(spark, [table])
    try:
        restarted.write(plan(spark, table, 1, SECOND))
        read = sut.read_back(spark, restarted, table)
        assert read.rows == AFTER_SECOND
        if not restarted.capabilities.verifiable:
            return
        assert read.repeated == 0 and read.offset is not None
        # at the batch's log position, with its table's progress (a Delta target records
        # its own tables' only; a JDBC target's offsets row is the pipeline's, whole)
        written, recorded = SourceOffset.parse(offset(table, 1)), SourceOffset.parse(read.offset)
        assert recorded.log == written.log
        assert recorded.tables[table.source] == written.tables[table.source]
    finally:
        restarted.close()


def test_the_column_changes_it_declares_reach_the_target_before_the_new_rows(
    spark: Any, sut: SinkUnderTest, opened: tuple[Sink, SinkTable, dict[str, str]]
) -> None:
    """What ``evolve`` makes of a change that widens ``a``, renames ``b`` to ``b2``, drops
    ``c`` and adds ``d`` (each part only where the sink declares its type): the rows of
    the new shape land, and a target that is a table keeps its rows' values under the
    new names."""
    sink, table, _ = opened
    capabilities = sink.capabilities
    sink.write(plan(spark, table, 0, FIRST))
    widen, rename, drop, add = (
        capabilities.accepts(k) for k in (ALTER_COLUMN_TYPE, RENAME_COLUMN, DROP_COLUMN, ADD_COLUMN)
    )
    columns = [
        "id BIGINT",
        f"a {'BIGINT' if widen else 'INT'}",
        f"{'b2' if rename else 'b'} STRING",
    ]
    columns += [] if drop else ["c STRING"]
    columns += ["d STRING"] if add else []
    added = (("d", "added, with a comment"),) if add else ()
    comments = Comments(COMMENTS.table, (*COMMENTS.columns, *added))
    after = SinkTable(table.source, schema_of(", ".join(columns)), ("id",), comments=comments)
    moves = ColumnMoves({"b": "b2"} if rename else {}, ("c",) if drop else ())
    sink.evolve(spark, after, table, moves)
    if add:  # the added column has its comment, where the sink keeps comments
        sut.check_comments(spark, sink, after, ("d",))
    big = 2**40 if widen else 11
    new_row: tuple[Any, ...] = (1, big, "x2", *([] if drop else ["c1"]), *(["d1"] if add else []))
    rows: list[tuple[Any, ...]] = [
        (1, 10, "x", *([] if drop else ["c1"]), *([None] if add else []), "update_preimage", 150)
    ]
    rows += [(*new_row, "update_postimage", 150)]
    sink.write(plan(spark, after, 1, rows))
    mirrored = sut.mirror(spark, sink, after)
    assert mirrored[1] == new_row
    if sut.exists(spark, sink, after) is not None:  # a table: the rows before the change too
        old = (2, 20, "y", *([] if drop else ["c2"]), *([None] if add else []))
        assert mirrored[2] == old and set(mirrored) == {1, 2, 3}


def test_a_truncate_and_a_drop_apply_as_declared_or_are_refused(
    spark: Any, sut: SinkUnderTest, opened: tuple[Sink, SinkTable, dict[str, str]]
) -> None:
    """A declared truncate empties the target with its (empty) batch, and rows after it
    land; a declared drop removes a target that is a table. A sink refuses an event it
    does not declare with an error, before it changes anything."""
    sink, table, _ = opened
    sink.write(plan(spark, table, 0, FIRST))
    empty = plan(spark, table, 1, [])
    if sink.capabilities.accepts(TRUNCATE_TABLE):
        sink.truncate(spark, table, empty)
        sink.write(empty)
        assert sut.mirror(spark, sink, table) == {}
        sink.write(plan(spark, table, 2, [row(9, 90, "v", "insert", 250)]))
        assert sut.mirror(spark, sink, table) == {9: (9, 90, "v", "c9")}
    else:
        with pytest.raises(SparkCdcError, match=str(table.source)):
            sink.truncate(spark, table, empty)
        assert set(sut.mirror(spark, sink, table)) == {1, 2, 3}
    gone = plan(spark, table, 3, [])
    if sink.capabilities.accepts(DROP_TABLE):
        sink.drop_table(spark, table, gone)
        sink.write(gone)
        assert sut.exists(spark, sink, table) in (False, None)
    else:
        with pytest.raises(SparkCdcError, match=str(table.source)):
            sink.drop_table(spark, table, gone)


def test_bad_options_fail_up_front_naming_the_option(sut: SinkUnderTest) -> None:
    for bad in sut.bad_options():
        with pytest.raises(OptionError, match=bad.message):
            validate_sink_options(sut.name, bad.options)


def test_a_wrong_password_fails_without_showing_it(
    spark: Any, sut: SinkUnderTest, scratch: Path, stem: str
) -> None:
    options = sut.options(scratch, stem)
    if "password" not in options:
        return  # nothing secret to show: the sink takes no password
    wrong = {**options, "password": "Wrong-" + stem}
    table = SinkTable(TableId("conf", stem), schema_of(SCHEMA), ("id",))
    sink = sut.create(wrong, PIPELINE)
    with pytest.raises(Exception) as failed:
        sink.open(spark, [table])
    sink.close()
    assert wrong["password"] not in str(failed.value)
    assert options["password"] not in str(failed.value)

"""What a target's commit records of a batch's offset (``WritePlan.offset_of``): the log
position and the progress of the target's own source tables, which is all ``verify``
reads; not every captured table's progress."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.table import TableId
from sparkcdc.sinks.write_plan import plan_of

TABLES = [TableId("shop", f"t{i}") for i in range(8)]
PROGRESS = st.one_of(
    st.just({"done": True}),
    st.builds(lambda c: {"cursor": {"int": str(c)}}, st.integers(0, 10**6)),
    st.just({"done": True, "schema": {"columns": [["id", "int"]]}}),
)


@given(
    progress=st.dictionaries(st.sampled_from(TABLES), PROGRESS, min_size=1),
    targets=st.dictionaries(
        st.sampled_from(TABLES), st.lists(st.sampled_from(TABLES), min_size=1, max_size=3)
    ),
    extra=st.fixed_dictionaries(
        {}, optional={"signals": st.just({"file": 3}), "paused": st.just(True)}
    ),
)
def test_a_target_records_the_log_and_its_own_tables_progress(
    progress: dict[TableId, dict[str, Any]],
    targets: dict[TableId, list[TableId]],
    extra: dict[str, Any],
) -> None:
    offset = {
        "log": {"file": "mysql-bin.000003", "pos": 4711},
        "tables": {t.key: p for t, p in progress.items()},
        "bounded": False,
        **extra,
    }
    text = json.dumps(offset)
    batch = plan_of(
        "p", 1, dict.fromkeys(TABLES), text, sources={t: tuple(s) for t, s in targets.items()}
    )
    for table in TABLES:
        recorded = batch.offset_of(table)
        if table not in targets:
            assert recorded == text  # sources not given: the whole offset
            continue
        assert recorded is not None
        data = json.loads(recorded)
        mine = {s.key for s in targets[table]}
        assert data["tables"] == {k: v for k, v in offset["tables"].items() if k in mine}
        assert {k: v for k, v in data.items() if k != "tables"} == {
            k: v for k, v in offset.items() if k != "tables"
        }
    assert json.loads(text) == offset  # the batch's own offset is untouched


def test_an_offset_without_table_progress_is_recorded_whole() -> None:
    t = TABLES[0]
    kafka = json.dumps({"topic": {"0": 42}})  # a changelog source's offset
    assert plan_of("p", 0, {t: None}, kafka, sources={t: (t,)}).offset_of(t) == kafka
    assert plan_of("p", 0, {t: None}, None, sources={t: (t,)}).offset_of(t) is None

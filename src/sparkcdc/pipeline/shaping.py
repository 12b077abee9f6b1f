"""Applying transforms and routes to Spark DataFrames: the batch's changelogs, and the
source rows ``verify`` reads.

Shaping works image by image: the filter is evaluated on every row of the changelog, so an
update whose new image leaves the filter keeps only its pre-image (which removes the key
from an upsert target) and an update that enters it keeps only its post-image. A plain
table read (no change columns) is shaped as if every row were an insert.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import reduce
from typing import Any

from sparkcdc.core.changes import CHANGE_COLUMNS, CHANGE_TYPE, UNCHANGED, ChangeType, change_columns
from sparkcdc.core.identifiers import quoted, sql_string
from sparkcdc.pipeline.projection import EVENT_TYPE, NAMESPACE, SCHEMA, TABLE, ProjectionItem
from sparkcdc.pipeline.rules import TransformRule
from sparkcdc.pipeline.targets import Target, TargetSource, kept_columns, kept_kind
from sparkcdc.pipeline.yaml_file import PipelineFileError
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.reduce import KEPT_SET


def shape(frame: Any, source: TargetSource, namespace: str | None) -> Any:
    """``frame`` (rows of ``source``'s table, with or without change columns) after its
    transform: filtered, projected, change columns kept last."""
    rule = source.transform
    if rule is None:
        return frame
    return _transformed(frame, source.table, rule, namespace)


def to_target(
    frames: Mapping[Any, Any], target: Target, namespace: str | None, *, marked: bool = False
) -> Any:
    """The rows of ``target``: each of its tables' frame (keyed by source table id)
    shaped, conformed to the target's schema, and unioned. ``marked``: where the tables'
    rows keep different target columns, each row says which (``sinks.reduce.KEPT_SET``,
    for the sinks; see ``TargetWrite.kept_columns``)."""
    from pyspark.sql import functions as F

    if target.as_captured:
        return frames[target.table.source]
    mark = marked and len(kept_columns(target)) > 1
    parts = []
    for source in target.sources:
        part = conform(shape(frames[source.table.source], source, namespace), target.table)
        if mark:
            part = part.withColumn(KEPT_SET, F.lit(kept_kind(target, source)))
        parts.append(part)
    return reduce(lambda a, b: a.unionByName(b), parts)


def conform(frame: Any, table: SinkTable) -> Any:
    """``frame`` with exactly ``table``'s columns in its order and types (NULL where the
    frame lacks one), then whatever change columns it has."""
    from pyspark.sql import functions as F

    have = {f.name: f.dataType for f in frame.schema.fields}
    columns = []
    for field in table.schema.fields:
        if field.name not in have:
            columns.append(F.lit(None).cast(field.dataType).alias(field.name))
        elif have[field.name] != field.dataType:
            columns.append(F.col(quoted(field.name)).cast(field.dataType).alias(field.name))
        else:
            columns.append(F.col(quoted(field.name)))
    return frame.select(*columns, *[c for c in change_columns(have) if c in have])


def shaped_schema(spark: Any, namespace: str | None) -> Any:
    """``(table, rule) -> StructType``: what the rule makes of the table's rows, analysed by
    Spark on an empty frame; an expression Spark rejects fails naming the rule's line."""

    def schema_of(table: SinkTable, rule: TransformRule) -> Any:
        empty = spark.createDataFrame([], table.schema)
        try:
            return _transformed(empty, table, rule, namespace).schema
        except Exception as exc:
            if not _is_analysis_error(exc):
                raise
        raise _first_rejected(empty, table, rule, namespace)

    return schema_of


def _transformed(frame: Any, table: SinkTable, rule: TransformRule, namespace: str | None) -> Any:
    rows = frame.withColumns(_metadata(frame, table, namespace))
    if rule.filter:
        rows = rows.where(rule.filter)
    have = frame.columns
    changes = [c for c in CHANGE_COLUMNS if c in have]
    return rows.selectExpr(*_items(table, rule), *changes, *_absent_through(have, table, rule))


def _absent_through(have: list[str], table: SinkTable, rule: TransformRule) -> list[str]:
    """``_unchanged`` (absent values, PostgreSQL's changelog-mode upsert) past a transform:
    the names of the columns the projection passes under their own names (null when none
    is left: a column the projection drops is absent from no target). A row lacking the
    value of a column another item renames or computes from (the name appearing in its
    text) fails the batch rather than write NULL or a value computed from NULL."""
    if UNCHANGED not in have:
        return []
    passed = _passed_by_name(table, rule)
    kept = f"filter({quoted(UNCHANGED)}, c -> array_contains(array({passed}), c))"
    guarded = f"IF(size({kept}) > 0, {kept}, NULL)"
    used = sorted(
        {c for item in rule.projection if not _passes_itself(item) for c in _named(item, table)}
    )
    if not used:
        return [f"{guarded} AS {quoted(UNCHANGED)}"]
    message = sql_string(
        f"an UPDATE of {table.source} left TOASTed values of {', '.join(used)} (or some) "
        "unchanged, which the WAL lacks under changelog-mode: upsert, and the transform's "
        "projection renames or computes from them, so the target cannot keep them: set "
        "REPLICA IDENTITY FULL on the table (then start from a new checkpoint) or project "
        "those columns by their own names"
    )
    names = ", ".join(sql_string(c) for c in used)
    lacks = f"arrays_overlap({quoted(UNCHANGED)}, array({names}))"
    return [
        f"IF(coalesce({lacks}, false), raise_error({message}), {guarded}) AS {quoted(UNCHANGED)}"
    ]


def _passed_by_name(table: SinkTable, rule: TransformRule) -> str:
    """The table's columns the projection passes under their own names, as the items of
    a Spark SQL ``array(...)`` (every column for ``*``)."""
    items = rule.projection
    names = (
        table.columns
        if any(i.star for i in items)
        else [i.column for i in items if _passes_itself(i) and i.column is not None]
    )
    return ", ".join(sql_string(c) for c in names) or "CAST(NULL AS STRING)"


def _passes_itself(item: ProjectionItem) -> bool:
    return item.star or (item.column is not None and item.column == item.name)


def _named(item: ProjectionItem, table: SinkTable) -> list[str]:
    """The table's columns ``item``'s text names (as a word or in backticks, in any case:
    Spark resolves names so), or all of them when a ``*`` is a function's argument
    (``struct(*)``, ``hash(*)``) or qualified (``t.*``): a superset of those it reads."""
    if re.search(r"[(,]\s*\*\s*[),]|\.\s*\*", item.text):
        return list(table.columns)
    return [
        c
        for c in table.columns
        if re.search(
            rf"(?<![\w`]){re.escape(c)}(?![\w`])|`{re.escape(c)}`", item.text, re.IGNORECASE
        )
    ]


def _items(table: SinkTable, rule: TransformRule) -> list[str]:
    """The projection as Spark ``selectExpr`` texts (``*``: the table's own columns)."""
    own = [quoted(c) for c in table.columns]
    if not rule.projection:
        return own
    texts: list[str] = []
    for item in rule.projection:
        texts.extend(own if item.star else [item.text])
    return texts


def _metadata(frame: Any, table: SinkTable, namespace: str | None) -> dict[str, Any]:
    from pyspark.sql import functions as F

    if CHANGE_TYPE in frame.columns:
        kind = F.col(CHANGE_TYPE)
        event = reduce(
            lambda acc, t: acc.when(kind == t.value, F.lit(t.row_kind)),
            list(ChangeType)[1:],
            F.when(kind == ChangeType.INSERT.value, F.lit(ChangeType.INSERT.row_kind)),
        )
    else:
        event = F.lit(ChangeType.INSERT.row_kind)
    return {
        NAMESPACE: F.lit(namespace).cast("string"),
        SCHEMA: F.lit(table.source.database),
        TABLE: F.lit(table.source.table),
        EVENT_TYPE: event,
    }


def _first_rejected(
    empty: Any, table: SinkTable, rule: TransformRule, namespace: str | None
) -> PipelineFileError:
    """The error naming the first of the rule's expressions Spark cannot analyse."""
    rows = empty.withColumns(_metadata(empty, table, namespace))
    checks = [("filter", rule.filter)] if rule.filter else []
    checks += [("projection", text) for text in _items(table, rule)]
    for what, text in checks:
        try:
            rows.where(text) if what == "filter" else rows.selectExpr(text)
        except Exception as exc:
            if not _is_analysis_error(exc):
                raise
            reason = str(exc).strip().splitlines()[0]
            return PipelineFileError(
                f"{rule.where}: transform of {table.source}: {what} '{text}' is rejected by "
                f"Spark: {reason}"
            )
    return PipelineFileError(
        f"{rule.where}: transform of {table.source}: Spark rejects the projection as a whole "
        "(two output columns with one name?)"
    )


def _is_analysis_error(exc: Exception) -> bool:
    from pyspark.errors import AnalysisException

    return isinstance(exc, AnalysisException)

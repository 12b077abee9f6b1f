"""Which target each captured table is written to, and the shape of every target.

A pipeline without ``transform`` and ``route`` rules writes each table to a target of its
own, unchanged. With rules, each table is shaped by its transform and sent to its route's
``sink-table``, and several tables may meet in one target. The plan is made once, before
the first batch, from the tables' shaped schemas (Spark works those out from the
expressions, see pipeline/shaping.py); everything that would make a target lose or
overwrite rows is refused here, naming the rule and what to change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sparkcdc.core.comments import Comments
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.projection import IDENTITY, NAMESPACE, SCHEMA, TABLE
from sparkcdc.pipeline.rules import RouteRule, TransformRule, first_transform, matching_routes
from sparkcdc.pipeline.widening import widen
from sparkcdc.pipeline.yaml_file import PipelineFileError
from sparkcdc.sinks.base import SinkTable

#: The Spark schema a transform gives a table's rows: ``(table, rule) -> StructType``.
ShapedSchema = Callable[[SinkTable, TransformRule], Any]


@dataclass(frozen=True)
class TargetSource:
    """One captured table as its target receives it."""

    table: SinkTable
    transform: TransformRule | None
    route: RouteRule | None
    #: The Spark schema of its rows after the transform (the table's own without one).
    schema: Any
    key: tuple[str, ...]


@dataclass(frozen=True)
class Target:
    """One target and the captured tables written to it."""

    #: What the sink sees: named by the route's ``sink-table`` (or the source table), with
    #: the merged schema, key and partition keys.
    table: SinkTable
    sources: tuple[TargetSource, ...]

    @property
    def as_captured(self) -> bool:
        """Written straight from one table, untouched (no shaping needed)."""
        (only, *rest) = self.sources
        return not rest and only.transform is None and only.table is self.table


def kept_columns(target: Target) -> tuple[tuple[str, ...], ...]:
    """The target's columns rows do not carry (after the transform), one set per kind of
    row (distinct, in the order of the target's tables; see :func:`kept_kind`): what
    ``lenient`` and ``ignore`` keep after a column's drop or rename, NULL in the rows, and
    the columns only other tables of a merged target have. A row read again leaves them as
    the target has them (docs/schema-evolution.md, "Shaped and merged targets")."""
    return tuple(dict.fromkeys(_kept_by(target, s) for s in target.sources))


def kept_kind(target: Target, source: TargetSource) -> int:
    """Which of :func:`kept_columns` the rows of ``source`` keep."""
    return kept_columns(target).index(_kept_by(target, source))


def _kept_by(target: Target, source: TargetSource) -> tuple[str, ...]:
    have = set(source.schema.fieldNames())
    return tuple(c for c in target.table.columns if c not in have)


def target_holding(targets: Sequence[Target], table: TableId) -> Target | None:
    """The target ``table``'s rows go to (None: the pipeline does not write it)."""
    return next((t for t in targets if table in {s.table.source for s in t.sources}), None)


def plan_targets(
    tables: Sequence[SinkTable],
    routes: Sequence[RouteRule],
    transforms: Sequence[TransformRule],
    shaped_schema: ShapedSchema,
    namespace: str | None = None,
) -> list[Target]:
    """Targets of ``tables`` under the rules, in order of their names. ``namespace`` is
    ``__namespace_name__``'s value (None on MySQL)."""
    by_target: dict[TableId, list[TargetSource]] = {}
    for table in sorted(tables, key=lambda t: t.source):
        source = shaped_source(table, first_transform(transforms, table.source), shaped_schema)
        source = _routed(source, routes)
        name = source.route.target(table.source) if source.route else table.source
        by_target.setdefault(name, []).append(source)
    return [_target(name, sources, namespace) for name, sources in sorted(by_target.items())]


def shaped_source(
    table: SinkTable, rule: TransformRule | None, schema_of: ShapedSchema
) -> TargetSource:
    """``table`` as its transform ``rule`` shapes it (not routed yet); refused, naming the
    rule, where the shape would lose the table's key."""
    if rule is None:
        return TargetSource(table, None, None, table.schema, table.key)
    schema = schema_of(table, rule)
    names = [f.name for f in schema.fields]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise PipelineFileError(
            f"{rule.where}: transform of {table.source}: the projection outputs "
            f"{', '.join(twice)} more than once; give each output column its own name (AS)"
        )
    for column in table.key:
        if not rule.passes(column):
            raise PipelineFileError(
                f"{rule.where}: transform of {table.source}: the projection does not pass the "
                f"primary-key column '{column}' through unchanged, so target rows could not be "
                f"matched to source rows. Add '{column}' (or '*') to the projection"
            )
    key = rule.primary_keys or table.key
    missing = [k for k in table.key if k not in key]
    if missing:
        raise PipelineFileError(
            f"{rule.where}: transform of {table.source}: primary-keys ({', '.join(key)}) "
            f"leave out the table's key column(s) {', '.join(missing)}; two source rows "
            "could then share a target key and overwrite each other. primary-keys may add "
            f"columns to the table's key ({', '.join(table.key)}), not replace it"
        )
    absent = [k for k in (*key, *rule.partition_keys) if k not in names]
    if absent:
        raise PipelineFileError(
            f"{rule.where}: transform of {table.source}: column(s) {', '.join(absent)} of "
            f"primary-keys / partition-keys are not in the projection's output "
            f"({', '.join(names)})"
        )
    return TargetSource(table, rule, None, schema, key)


def _routed(source: TargetSource, routes: Sequence[RouteRule]) -> TargetSource:
    found = matching_routes(routes, source.table.source)
    if len(found) > 1 and found[0].first_match:
        found = found[:1]
    if len(found) > 1:
        raise PipelineFileError(
            f"{source.table.source} matches the routes at {found[0].where} and "
            f"{found[1].where}; a table is written to one target: narrow their source-table "
            "patterns (or route-mode: FIRST_MATCH in the pipeline block)"
        )
    if not found:
        return source
    return TargetSource(source.table, source.transform, found[0], source.schema, source.key)


def _target(name: TableId, sources: list[TargetSource], namespace: str | None) -> Target:
    if len(sources) == 1 and sources[0].transform is None and sources[0].route is None:
        return Target(sources[0].table, (sources[0],))
    keys = {s.key for s in sources}
    if len(keys) > 1:
        listing = "; ".join(f"{s.table.source}: {', '.join(s.key)}" for s in sources)
        raise PipelineFileError(
            f"{_rules(sources)}: the tables written to {name} have different keys ({listing}); "
            "one target has one key. Give them the same primary-keys with a transform"
        )
    (key,) = keys
    if len(sources) > 1:
        check_distinct_keys(name, sources, key, namespace)
    partitions = {s.transform.partition_keys for s in sources if s.transform}
    partitions.discard(())
    if len(partitions) > 1:
        raise PipelineFileError(
            f"{_rules(sources)}: the tables written to {name} ask for different partition-keys"
        )
    schema = _merged_schema(name, sources)
    table = SinkTable(
        name, schema, key, partitions.pop() if partitions else (), _comments(sources, schema)
    )
    return Target(table, tuple(sources))


def _comments(sources: Sequence[TargetSource], schema: Any) -> Comments:
    """A shaped or routed target's comments: its columns' that keep a source column's name
    (the first source's that has one); the table's only when one table goes there."""
    names = [f.name for f in schema.fields]
    columns: dict[str, str] = {}
    for source in sources:
        for name, text in source.table.comments.only(names).columns:
            columns.setdefault(name, text)
    table = sources[0].table.comments.table if len(sources) == 1 else None
    return Comments(table, tuple((n, columns[n]) for n in names if n in columns))


def check_distinct_keys(
    name: TableId, sources: Sequence[TargetSource], key: tuple[str, ...], namespace: str | None
) -> None:
    """Several tables in one target must not share keys: the route vouches for it, or the
    key holds metadata columns whose values differ between the tables."""
    if all(s.route is not None and s.route.disjoint_keys for s in sources):
        return
    identities = [_identity(s, key, namespace) for s in sources]
    columns = {tuple(sorted(i)) for i in identities}
    values = [tuple(sorted(i.items())) for i in identities]
    if len(columns) == 1 and () not in columns and len(set(values)) == len(values):
        return
    tables = ", ".join(str(s.table.source) for s in sources)
    raise PipelineFileError(
        f"{_rules(sources)}: {tables} are written to {name} with the key "
        f"({', '.join(key)}), which does not tell their rows apart: equal keys in two tables "
        "would overwrite each other. Either add the source table to the key (a transform "
        "with projection '*, __table_name__ AS source_table' and primary-keys "
        f"'{', '.join(key)}, source_table'), or, if the tables never share a key (say, "
        "globally unique ids), set 'disjoint-keys: true' on the route"
    )


def _identity(source: TargetSource, key: tuple[str, ...], namespace: str | None) -> dict[str, Any]:
    """Key columns of ``source`` that are metadata naming its table, with their values."""
    values = {NAMESPACE: namespace, SCHEMA: source.table.source.database}
    values[TABLE] = source.table.source.table
    found: dict[str, Any] = {}
    for item in source.transform.projection if source.transform else ():
        if item.name in key and item.metadata in IDENTITY:
            found[item.name] = values[item.metadata]
    return found


def _merged_schema(name: TableId, sources: list[TargetSource]) -> Any:
    from pyspark.sql.types import StructField, StructType

    fields: dict[str, StructField] = {}
    origin: dict[str, TableId] = {}
    for source in sources:
        for field in source.schema.fields:
            known = fields.get(field.name)
            if known is None:
                fields[field.name] = field
                origin[field.name] = source.table.source
                continue
            wider = widen(known.dataType, field.dataType)
            if wider is None:
                raise PipelineFileError(
                    f"{_rules(sources)}: column '{field.name}' of {name} is "
                    f"{known.dataType.simpleString()} in {origin[field.name]} and "
                    f"{field.dataType.simpleString()} in {source.table.source}, and no type "
                    "holds both exactly. Cast one in a transform's projection "
                    f"(CAST({field.name} AS ...) AS {field.name})"
                )
            fields[field.name] = StructField(
                field.name, wider, known.nullable or field.nullable, known.metadata
            )
    for column, field in fields.items():
        if any(column not in s.schema.fieldNames() for s in sources):
            fields[column] = StructField(column, field.dataType, True, field.metadata)
    return StructType(list(fields.values()))


def _rules(sources: Sequence[TargetSource]) -> str:
    """Where the rules that sent ``sources`` here were written."""
    wheres = [s.route.where for s in sources if s.route] or [
        s.transform.where for s in sources if s.transform
    ]
    return " and ".join(dict.fromkeys(wheres)) or "route"

"""Delta targets named in a Spark catalog (``catalog.schema.table``, or ``schema.table`` in
the session catalog) rather than by folder.

The catalog says where a table is; once it exists the sink writes it by that location,
as it writes a target given by folder (one code path for MERGE, appends, exactly-once and
``verify``). This module is the one place a name becomes a location: it creates the
table by name (managed, in the catalog's warehouse, or external under the sink's
``location``), registers an external table's folder again when the catalog forgot it (an
in-memory catalog after a restart), and refuses what would not survive a restart.

The name parsing is pure (no pyspark: a pipeline file validates offline); the rest takes
the session.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from sparkcdc.core.errors import OptionError, SparkCdcError
from sparkcdc.core.identifiers import quoted, sql_string
from sparkcdc.core.table import TableId
from sparkcdc.sinks.names import fill_name

log = logging.getLogger(__name__)

#: Spark's name of its session catalog (what a two-part ``schema.table`` name is in).
SESSION_CATALOG = "spark_catalog"
#: The session catalog's schema of a one-part target name (Spark's own default schema).
DEFAULT_SCHEMA = "default"
#: The Spark setting that says whether the session catalog is a Hive metastore.
CATALOG_IMPLEMENTATION = "spark.sql.catalogImplementation"
#: The Spark setting under which string literals take no backslash escapes.
ESCAPED_LITERALS = "spark.sql.parser.escapedStringLiterals"


def target_name(pattern: str, source: TableId) -> str:
    """The catalog name ``pattern`` (``table-name``) gives ``source``'s target, as SQL
    text. A source database or schema with a dot or a backtick is one part, quoted; so is
    a table name with a backtick. A table name's dots stay separators: a route's
    ``sink-table: spark_catalog.lake.orders`` names its target's catalog and schema that
    way (a source table named with a dot is refused by :func:`check_catalogs` unless its
    first part names a catalog)."""

    def database(name: str) -> str:
        return quoted(name) if "." in name or "`" in name else name

    def table(name: str) -> str:
        return quoted(name) if "`" in name else name

    return fill_name(pattern, database(source.database), table(source.table))


def check_catalogs(spark: Any, names: Mapping[TableId, Sequence[str]]) -> None:
    """Every target's catalog is one the session has (``spark_catalog`` or one set up by
    ``spark.sql.catalog.<name>``): a source table whose name has dots would otherwise
    name a catalog by accident."""
    for source, parts in names.items():
        session = parts[0].lower() == SESSION_CATALOG
        if session or spark.conf.get(f"spark.sql.catalog.{parts[0]}", ""):
            continue
        raise SparkCdcError(
            f"the Delta sink's target of {source} is {sql_name(parts)}, in catalog "
            f"'{parts[0]}', which this Spark session does not have (spark-conf "
            f"'spark.sql.catalog.{parts[0]}'). A source table whose name has dots gives its "
            "target's name more parts: route it to a name of its own (a route's sink-table), "
            "or set up that catalog"
        )


def raw_literals(spark: Any) -> bool:
    """Whether the session's SQL parser reads string literals without backslash escapes
    (``spark.sql.parser.escapedStringLiterals: true``)."""
    return str(spark.conf.get(ESCAPED_LITERALS, "false")).strip().lower() == "true"


def literal(value: str, raw: bool = False) -> str:
    """``value`` as a SQL string literal: with backslash escapes (Spark's default), or,
    where the parser takes literals ``raw`` (:func:`raw_literals`), as it is between
    quotes it does not hold (a value with both quote characters is refused there, as is
    one ending in an odd run of backslashes: Spark's lexer pairs a backslash with the next
    character in either mode, so it would take the closing quote)."""
    if not raw:
        return sql_string(value)
    if (len(value) - len(value.rstrip("\\"))) % 2:
        raise OptionError(
            f"delta sink: the value {value!r} ends in a backslash, which would escape the "
            f"closing quote of its SQL string under '{ESCAPED_LITERALS}: true': change the "
            "value or that setting"
        )
    for quote in ("'", '"'):
        if quote not in value:
            return f"{quote}{value}{quote}"
    raise OptionError(
        f"delta sink: the value {value!r} has both quote characters, which a SQL string "
        f"cannot hold under '{ESCAPED_LITERALS}: true': change the value or that setting"
    )


def split_name(name: str) -> tuple[str, ...]:
    """A multi-part name as Spark's SQL parser splits it: at dots outside backticks, a
    doubled backtick inside them standing for one (`` `a.b`.c `` is ``("a.b", "c")``).
    ValueError for an unclosed backtick or an empty part."""
    parts: list[str] = []
    current = ""
    quoted_part = False  # inside backticks
    was_quoted = False  # the current part had backticks (may then be empty: refused)
    i = 0
    while i < len(name):
        char = name[i]
        if quoted_part:
            if char == "`":
                if name[i + 1 : i + 2] == "`":
                    current += "`"
                    i += 1
                else:
                    quoted_part = False
            else:
                current += char
        elif char == "`":
            quoted_part = was_quoted = True
        elif char == ".":
            if not current:
                raise ValueError(f"an empty part in '{name}'")
            parts.append(current)
            current, was_quoted = "", False
        else:
            current += char
        i += 1
    if quoted_part:
        raise ValueError(f"an unclosed backtick in '{name}'")
    if not current:
        raise ValueError(f"an empty part in '{name}'" if parts or was_quoted else "a name")
    return (*parts, current)


def sql_name(parts: Sequence[str]) -> str:
    """``parts`` as one SQL identifier, each part quoted (whatever it holds)."""
    return ".".join(quoted(p) for p in parts)


def table_parts(name: str, what: str) -> tuple[str, str, str]:
    """``(catalog, schema, table)`` of a target's name: ``schema.table`` is in the session
    catalog (so is ``SPARK_CATALOG.schema.table``: its name in any case is
    :data:`SESSION_CATALOG`), and a one-part name (a route's ``sink-table: orders``, the
    sink's default namespace, sinks/names.py) in its ``default`` schema; OptionError
    naming ``what`` (the source table, the option) otherwise."""
    try:
        parts = split_name(name)
    except ValueError as exc:
        raise OptionError(f"delta sink: the catalog name of {what} has {exc}") from None
    if len(parts) == 1:
        return (SESSION_CATALOG, DEFAULT_SCHEMA, parts[0])
    if len(parts) == 2:
        return (SESSION_CATALOG, parts[0], parts[1])
    if len(parts) == 3:
        # Spark finds its session catalog by name in any case (`SPARK_CATALOG.db.t`), as
        # CatalogManager does; other catalogs' names are as configured
        session = parts[0].lower() == SESSION_CATALOG
        return (SESSION_CATALOG if session else parts[0], parts[1], parts[2])
    raise OptionError(
        f"delta sink: the catalog name of {what} is '{name}', which has {len(parts)} part(s); "
        "expected 'catalog.schema.table' or 'schema.table' (a part with dots in backticks), "
        "or set 'path' for targets by folder"
    )


def forgets_on_restart(spark: Any, parts: Sequence[str], external: bool) -> str | None:
    """Why a managed table in Spark's in-memory session catalog cannot be a target (it
    and its schema are gone when the pipeline stops, and its folder then blocks creating
    it again), or None. An external table's folder is registered again at each start."""
    if external or parts[0] != SESSION_CATALOG:
        return None
    if spark.conf.get(CATALOG_IMPLEMENTATION, "in-memory") != "in-memory":
        return None
    return (
        f"the Delta sink's target {sql_name(parts)} would be a managed table in Spark's "
        "in-memory session catalog, which forgets it when the pipeline stops: set "
        f"'{CATALOG_IMPLEMENTATION}: hive' in the pipeline's spark-conf (a Hive metastore: "
        "Derby beside the checkpoint unless a hive-site.xml names one), or give the sink a "
        "'location' (external tables, registered again at each start)"
    )


def location_of(spark: Any, parts: Sequence[str]) -> str | None:
    """Where the catalog keeps the Delta table ``parts`` (None: no such table). A table of
    another format under the name is refused: the sink writes Delta tables only."""
    if not spark.catalog.tableExists(sql_name(parts)):
        return None
    detail = spark.sql(f"DESCRIBE DETAIL {sql_name(parts)}").first()
    if detail is None or (detail["format"] or "").lower() != "delta":
        found = "no format" if detail is None else f"format '{detail['format']}'"
        raise SparkCdcError(
            f"the catalog table {sql_name(parts)} has {found}, not Delta: point 'table-name' "
            "(or the route's sink-table) at another name, or drop that table"
        )
    return str(detail["location"])


def ensure_schema(spark: Any, parts: Sequence[str]) -> None:
    """The table's schema (namespace) exists: created when missing, as Flink CDC's lake
    sinks create a database."""
    namespace = sql_name(parts[:-1])
    if not spark.catalog.databaseExists(namespace):
        log.info("delta sink: creating schema %s", namespace)
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS {namespace}")


def create(
    spark: Any,
    parts: Sequence[str],
    schema: Any,
    partitions: Sequence[str],
    properties: Mapping[str, str],
    location: str | None,
    clustering: Sequence[str] = (),
    comment: str | None = None,
) -> None:
    """Creates the Delta table ``parts`` with ``schema`` (a Spark ``StructType``): managed,
    or external at ``location``, partitioned or clustered by the columns given, with the
    table's ``comment``. By SQL: Delta's ``DeltaTable.create().tableName`` takes two-part
    names only. Not ``IF NOT EXISTS``: a table another process made meanwhile is not this
    pipeline's."""
    ensure_schema(spark, parts)
    jvm = spark.sparkContext._jvm
    raw = raw_literals(spark)
    if any("comment" in f.metadata for f in schema.fields):
        columns = ", ".join(_column_ddl(jvm, field, raw) for field in schema.fields)
    else:
        columns = jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json()).toDDL()
    sql = f"CREATE TABLE {sql_name(parts)} ({columns}) USING delta"
    if partitions:
        sql += f" PARTITIONED BY ({', '.join(quoted(c) for c in partitions)})"
    if clustering:  # liquid clustering (the sink's cluster.key)
        sql += f" CLUSTER BY ({', '.join(quoted(c) for c in clustering)})"
    if comment is not None:  # the table's (its columns' are in the DDL of the schema)
        sql += f" COMMENT {literal(comment, raw)}"
    if location is not None:
        sql += f" LOCATION {literal(location, raw)}"
    if properties:
        # quoted as the session's parser reads literals: a value is never SQL
        pairs = ", ".join(f"{literal(k, raw)} = {literal(v, raw)}" for k, v in properties.items())
        sql += f" TBLPROPERTIES ({pairs})"
    log.info("delta sink: creating %s", sql_name(parts))
    spark.sql(sql)


def _column_ddl(jvm: Any, field: Any, raw: bool) -> str:
    """One column of CREATE TABLE: Spark's own DDL of its name and type, and its comment
    as a literal of ours (Spark's DDL escapes quotes in a comment but not backslashes)."""
    from pyspark.sql.types import StructField, StructType

    text = field.metadata.get("comment")
    metadata = {k: v for k, v in field.metadata.items() if k != "comment"}
    bare = StructType([StructField(field.name, field.dataType, field.nullable, metadata)])
    ddl = str(jvm.org.apache.spark.sql.types.DataType.fromJson(bare.json()).toDDL())
    return ddl if text is None else f"{ddl} COMMENT {literal(str(text), raw)}"


def register(spark: Any, parts: Sequence[str], location: str) -> None:
    """Registers the Delta table already at ``location`` under the name (its schema and
    properties are the table's own, from its log)."""
    log.info("delta sink: registering the Delta table at %s as %s", location, sql_name(parts))
    where = literal(location, raw_literals(spark))
    spark.sql(f"CREATE TABLE {sql_name(parts)} USING delta LOCATION {where}")


def drop(spark: Any, parts: Sequence[str]) -> None:
    """Drops the name from the catalog (a managed table's files with it)."""
    spark.sql(f"DROP TABLE IF EXISTS {sql_name(parts)}")

"""What an ALTER TABLE in the binlog does to a captured table's columns, parsed with
sqlglot's MySQL dialect, and the table's shape after it.

The binlog records DDL as statement text only (QUERY events). To decode the rows that
follow, the source needs the table's columns *as of that position*, not as they are on
the server now (more statements may have followed), so the statement's own column
definitions are applied to the columns the offset holds. The result is checked against
every later table map (``binlog_row_metadata=FULL`` names and types, table_drift.py): a
wrong reading stops the stream, it never mis-decodes.

Followed: ADD [COLUMN] (FIRST / AFTER), DROP [COLUMN], CHANGE, MODIFY, RENAME COLUMN, and
clauses that leave the columns alone (indexes, defaults, comments, engine and algorithm
options, repartitioning: ddl_partitions.py). Anything else that touches a captured
table's columns or identity (a new primary key, CONVERT TO CHARACTER SET, a statement
sqlglot cannot parse, a partition dropped with its rows) is reported as not followable,
naming the statement.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparkcdc.connectors.mysql.binlog.ddl_guard import resolve_name, without_comments
from sparkcdc.connectors.mysql.binlog.ddl_partitions import partition_change
from sparkcdc.connectors.mysql.binlog.ddl_rewrites import (
    computes_values,
    fills_existing_rows,
    keeps_values,
)
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.types import MySqlColumn
from sparkcdc.snapshot.schema_change import NO_MOVES, ColumnMoves

#: Types sqlglot names differently from information_schema's DATA_TYPE.
_TYPE_NAMES = {
    "uint": "int",
    "utinyint": "tinyint",
    "usmallint": "smallint",
    "umediumint": "mediumint",
    "ubigint": "bigint",
    "udecimal": "decimal",
    "udouble": "double",
    "ufloat": "float",
    "timestamptz": "timestamp",
    "integer": "int",
    "numeric": "decimal",
    "dec": "decimal",
    "fixed": "decimal",
    "real": "double",
    "boolean": "tinyint",
    "bool": "tinyint",
}
_UNSIGNED = frozenset({"uint", "utinyint", "usmallint", "umediumint", "ubigint", "udecimal"})
_UNSIGNED |= {"udouble", "ufloat"}
_TEXT_TYPES = frozenset(
    {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set", "json"}
)
_TEMPORAL = frozenset({"datetime", "timestamp", "time"})
#: ALTER actions that leave the columns as they are.
_NEUTRAL = ("AddConstraint", "DropIndex", "AlterIndex", "AlterColumn", "Comment")


_REAL = re.compile(r"(`(?:[^`]|``)*`|'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.)*\")|\breal\b", re.I)
_ALTER_NAME = re.compile(
    r"\s*alter\s+(?:online\s+|ignore\s+)*table\s+(?:if\s+exists\s+)?"
    r"((?:`(?:[^`]|``)+`|[\w$]+)(?:\s*\.\s*(?:`(?:[^`]|``)+`|[\w$]+))?)",
    re.I,
)
logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its "falling back" warnings: ours say more


class UnfollowableStatement(ValueError):
    """A statement changes a captured table in a way the source cannot follow."""


@dataclass(frozen=True)
class AlterResult:
    """A captured table after one statement: its new columns (None: unchanged)."""

    table: CapturedTable
    changed: bool
    #: Which columns the statement renamed (old name -> new name) and dropped, by the
    #: names they had before it: the columns before and after cannot tell a rename from a
    #: drop and an add, nor a column dropped and added again from a retyped one.
    moves: ColumnMoves = NO_MOVES
    #: Columns (names after the statement) it gave values in the rows already there
    #: without logging them: an added column's default, a retyped column's converted
    #: values (ddl_rewrites.py). Those rows are read again.
    rewritten: tuple[str, ...] = ()


def statement_tables(statement: str, default_database: str) -> list[tuple[str, str]]:
    """The ``(database, table)`` an ALTER TABLE statement alters (empty for other
    statements). Also for ALTERs sqlglot cannot parse: those must still be recognised, to
    be refused when they alter a captured table."""
    parsed = _parse(statement)
    if parsed is not None:
        return [_table_name(parsed.this, default_database)]
    match = _ALTER_NAME.match(without_comments(statement))
    return [] if match is None else [resolve_name(match.group(1), default_database)]


def changes_columns(
    statement: str, default_database: str, tables: Mapping[tuple[str, str], CapturedTable]
) -> CapturedTable | None:
    """The table of ``tables`` (by ``(database, table)``) whose columns ``statement``
    changes, or may change (a statement that cannot be followed); None for any other
    statement. Cheap for the statements that are not an ALTER TABLE (a transaction's
    BEGIN): a log read asks it of every QUERY event in its range."""
    if _ALTER_NAME.match(without_comments(statement)) is None:
        return None
    for name in statement_tables(statement, default_database):
        table = tables.get(name)
        if table is None:
            continue
        try:
            result = alter_table(statement, table, None)
        except UnfollowableStatement:
            return table
        # a statement that leaves every column as it was (a MODIFY to the same place and
        # type) changes nothing the rows after it are decoded with
        if result.changed and result.table.columns != table.columns:
            return table
    return None


def alter_table(
    statement: str,
    table: CapturedTable,
    default_charset: str | None,
    mariadb: bool = True,
) -> AlterResult:
    """``table`` after ``statement`` (an ALTER TABLE of it, see :func:`statement_tables`).
    Raises :class:`UnfollowableStatement` with the reason for what cannot be followed."""
    from sqlglot import exp

    named = _ALTER_NAME.match(without_comments(statement))
    partitions = None if named is None else partition_change(named.string[named.end() :])
    if partitions == "keeps":  # rows move between partitions; columns and values stay
        return AlterResult(table, False)
    if partitions is not None:
        raise UnfollowableStatement(
            f"{partitions.upper()} PARTITION removes or replaces rows without row events "
            "(no changelog can say which); read the table again after it (a new snapshot, "
            "or an execute-snapshot signal)"
        )
    parsed = _parse(statement)
    if parsed is None:
        raise UnfollowableStatement("sqlglot's MySQL dialect cannot parse it")
    assert isinstance(parsed, exp.Alter)
    columns = list(table.columns)
    origins: list[str | None] = [c.name for c in columns]  # each column's name before it
    rewritten: set[str] = set()  # lower-case names, as they are so far
    changed = False
    if parsed.args.get("options"):
        for option in parsed.args["options"]:
            name = type(option).__name__
            if name not in ("EngineProperty", "AlgorithmProperty", "LockProperty"):
                raise UnfollowableStatement(f"table option {option.sql('mysql')}")
    for action in parsed.args.get("actions") or []:
        kind = type(action).__name__
        if isinstance(action, exp.ColumnDef):
            column = column_from_definition(action, len(columns) + 1, default_charset, mariadb)
            if any(c.name.lower() == column.name.lower() for c in columns):
                if action.args.get("exists"):  # ADD COLUMN IF NOT EXISTS of a present one
                    continue
                raise UnfollowableStatement(f"column {column.name} is there already")
            origins.insert(_insert(columns, column, action.args.get("position")), None)
            if fills_existing_rows(action):
                rewritten.add(column.name.lower())
            changed = True
        elif isinstance(action, exp.Drop) and str(action.args.get("kind", "")).upper() == "COLUMN":
            for target in action.args.get("tables") or []:
                index = _index(columns, target.name, bool(action.args.get("exists")))
                if index is None:
                    continue
                if columns[index].name in table.primary_key:
                    raise UnfollowableStatement(f"it drops key column {columns[index].name}")
                rewritten.discard(columns[index].name.lower())
                del columns[index], origins[index]
                changed = True
        elif kind == "ModifyColumn":
            definition = action.this
            old = action.args.get("rename_from")
            old_name = old.name if old is not None else definition.name
            index = _index(columns, old_name, False)
            assert index is not None
            column = column_from_definition(definition, index + 1, default_charset, mariadb)
            if columns[index].name in table.primary_key:
                raise UnfollowableStatement(f"it changes key column {columns[index].name}")
            if (
                columns[index].name.lower() in rewritten
                or computes_values(definition)
                or not keeps_values(columns[index], column)
            ):
                rewritten.discard(columns[index].name.lower())
                rewritten.add(column.name.lower())
            del columns[index]
            origin = origins.pop(index)
            position = definition.args.get("position")
            if position is None:
                columns.insert(index, column)
                origins.insert(index, origin)
            else:
                origins.insert(_insert(columns, column, position), origin)
            changed = True
        elif kind == "RenameColumn":
            index = _index(columns, action.this.name, bool(action.args.get("exists")))
            if index is None:
                continue
            if columns[index].name in table.primary_key:
                raise UnfollowableStatement(f"it renames key column {columns[index].name}")
            if columns[index].name.lower() in rewritten:
                rewritten.discard(columns[index].name.lower())
                rewritten.add(action.args["to"].name.lower())
            columns[index] = dataclasses.replace(columns[index], name=action.args["to"].name)
            changed = True
        elif kind in _NEUTRAL:
            if kind == "AddConstraint" and "PRIMARY" in action.sql("mysql").upper():
                raise UnfollowableStatement("it changes the primary key")
            if kind == "AlterColumn" and action.args.get("dtype") is not None:
                raise UnfollowableStatement(f"clause '{action.sql('mysql')[:80]}'")
            if kind == "AlterColumn":  # SET DEFAULT of a column this statement adds fills it
                index = _index(columns, action.this.name, True)
                if index is not None and origins[index] is None:
                    rewritten.add(columns[index].name.lower())
        else:
            raise UnfollowableStatement(f"clause '{action.sql('mysql')[:80]}'")
    if not changed:
        return AlterResult(table, False)
    renumbered = tuple(dataclasses.replace(c, ordinal=i + 1) for i, c in enumerate(columns))
    kept = {o: c.name for o, c in zip(origins, columns, strict=True) if o is not None}
    moves = ColumnMoves(
        renamed={old: new for old, new in kept.items() if old != new},
        dropped=tuple(c.name for c in table.columns if c.name not in kept),
    )
    filled = tuple(c.name for c in renumbered if c.name.lower() in rewritten)
    return AlterResult(dataclasses.replace(table, columns=renumbered), True, moves, filled)


def column_from_definition(
    definition: object, ordinal: int, default_charset: str | None, mariadb: bool = True
) -> MySqlColumn:
    """A column definition (sqlglot ``ColumnDef``) as information_schema would describe
    it: DATA_TYPE, COLUMN_TYPE, precision, scale, charset and nullability."""
    from sqlglot import exp

    assert isinstance(definition, exp.ColumnDef)
    kind = definition.args.get("kind")
    if not isinstance(kind, exp.DataType):
        raise UnfollowableStatement(f"column {definition.name} has no type")
    raw = kind.this.name.lower() if hasattr(kind.this, "name") else str(kind.this).lower()
    name = _TYPE_NAMES.get(raw, raw)
    unsigned = raw in _UNSIGNED
    params = [p.this if isinstance(p, exp.DataTypeParam) else p for p in kind.expressions]
    numbers = [int(p.name) for p in params if isinstance(p, exp.Literal) and not p.is_string]
    constraints = [c.args.get("kind") for c in definition.constraints]
    text = definition.sql("mysql").upper()
    if "UNSIGNED" in text.split("--")[0]:
        unsigned = True
    precision = scale = fsp = None
    if name == "decimal":
        precision = numbers[0] if numbers else 10
        scale = numbers[1] if len(numbers) > 1 else 0
        args = f"({precision},{scale})"
    elif name in ("enum", "set"):
        labels = [p for p in params if isinstance(p, exp.Literal) and p.is_string]
        args = "(" + ",".join("'" + str(p.this).replace("'", "''") + "'" for p in labels) + ")"
    elif name in _TEMPORAL:
        fsp = numbers[0] if numbers else 0
        args = f"({fsp})" if numbers else ""
    elif raw in ("boolean", "bool"):
        args = "(1)"
    else:
        args = f"({','.join(str(n) for n in numbers)})" if numbers else ""
    if name == "json" and mariadb:
        name = "longtext"  # MariaDB's JSON is LONGTEXT with a json_valid check
    column_type = f"{name}{args}{' unsigned' if unsigned else ''}"
    charset = None
    collation = None
    if name in _TEXT_TYPES or name == "longtext":
        for constraint in constraints:
            if isinstance(constraint, exp.CharacterSetColumnConstraint):
                charset = constraint.this.name.lower()
            elif isinstance(constraint, exp.CollateColumnConstraint):
                collation = constraint.this.name.lower()
        if "BINARY" in [str(c).upper() for c in constraints]:
            raise UnfollowableStatement(f"column {definition.name}: BINARY attribute")
        if charset is None and collation is not None:
            charset = collation.split("_")[0]
        charset = charset or default_charset
    not_null = any(
        isinstance(c, exp.NotNullColumnConstraint) and not c.args.get("allow_null")
        for c in constraints
    )
    primary = any(isinstance(c, exp.PrimaryKeyColumnConstraint) for c in constraints)
    if primary:
        raise UnfollowableStatement(f"column {definition.name} is declared PRIMARY KEY")
    return MySqlColumn(
        name=definition.name,
        ordinal=ordinal,
        data_type=name,
        column_type=column_type,
        unsigned=unsigned,
        precision=precision,
        scale=scale,
        datetime_precision=fsp,
        charset=charset,
        collation=collation,
        nullable=not not_null,
    )


def _parse(statement: str) -> Any:
    """The statement as a sqlglot ``Alter`` of a table, or None for anything else."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError

    # sqlglot reads REAL as FLOAT; MySQL and MariaDB make it DOUBLE (quoted text is kept)
    text = _REAL.sub(lambda m: m.group(1) or "DOUBLE", statement)
    try:
        parsed = sqlglot.parse_one(text, read="mysql")
    except ParseError:
        return None
    if isinstance(parsed, exp.Alter) and str(parsed.args.get("kind", "")).upper() == "TABLE":
        return parsed
    return None


def _table_name(table: object, default_database: str) -> tuple[str, str]:
    from sqlglot import exp

    assert isinstance(table, exp.Table)
    return (table.db or default_database, table.name)


def _index(columns: Sequence[MySqlColumn], name: str, if_exists: bool) -> int | None:
    for i, column in enumerate(columns):
        if column.name.lower() == name.lower():  # MySQL column names ignore case
            return i
    if if_exists:
        return None
    raise UnfollowableStatement(f"the table has no column {name}")


def _insert(columns: list[MySqlColumn], column: MySqlColumn, position: object | None) -> int:
    """Insert ``column`` where ``position`` (FIRST / AFTER x / None: last) says; its index."""
    if position is None:
        columns.append(column)
        return len(columns) - 1
    where = str(position.args.get("position", "")).upper()  # type: ignore[attr-defined]
    if where == "FIRST":
        columns.insert(0, column)
        return 0
    after = position.this.name  # type: ignore[attr-defined]
    index = _index(columns, after, False)
    assert index is not None
    columns.insert(index + 1, column)
    return index + 1

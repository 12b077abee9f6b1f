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
        if result.changed and not _same_columns(table.columns, result.table.columns):
            return table
    return None


def _same_columns(old: Sequence[MySqlColumn], new: Sequence[MySqlColumn]) -> bool:
    """Whether ``new`` (a statement's columns, parsed without the table's default
    character set) are ``old``. A text column the statement gives no character set or
    collation is compared with the ones it had: a log read does not know the table's
    default, and the planning scan, which asks the server, already placed a statement that
    does change them at a batch boundary (this check is the read's safety net, and a
    false alarm would stop every read of the range)."""
    if len(old) != len(new):
        return False
    for before, after in zip(old, new, strict=True):
        if after.charset is None:
            after = dataclasses.replace(after, charset=before.charset)
        if after.collation is None:
            after = dataclasses.replace(after, collation=before.collation)
        if before != after:
            return False
    return True


def alter_table(
    statement: str,
    table: CapturedTable,
    default_charset: str | None,
    mariadb: bool = True,
) -> AlterResult:
    """``table`` after ``statement`` (an ALTER TABLE of it, see :func:`statement_tables`).
    Raises :class:`UnfollowableStatement` with the reason for what cannot be followed."""
    from sqlglot import exp

    if _moves_rows_only(statement):
        return AlterResult(table, False)
    parsed = _parse(statement)
    if parsed is None:
        raise UnfollowableStatement("sqlglot's MySQL dialect cannot parse it")
    assert isinstance(parsed, exp.Alter)
    for option in parsed.args.get("options") or []:
        if type(option).__name__ not in ("EngineProperty", "AlgorithmProperty", "LockProperty"):
            raise UnfollowableStatement(f"table option {option.sql('mysql')}")
    altering = _Altering(table, default_charset, mariadb)
    for action in parsed.args.get("actions") or []:
        altering.apply(action)
    return altering.result()


def _moves_rows_only(statement: str) -> bool:
    """True for a repartitioning that moves rows between partitions (columns and values
    stay); raises for one that removes or replaces rows, which no changelog can follow;
    False for a statement that does not touch partitions."""
    named = _ALTER_NAME.match(without_comments(statement))
    partitions = None if named is None else partition_change(named.string[named.end() :])
    if partitions is not None and partitions != "keeps":
        raise UnfollowableStatement(
            f"{partitions.upper()} PARTITION removes or replaces rows without row events "
            "(no changelog can say which); read the table again after it (a new snapshot, "
            "or an execute-snapshot signal)"
        )
    return partitions == "keeps"


class _Altering:
    """A table's columns part-way through one ALTER's actions, applied in order (each may
    name a column an earlier one added or renamed), with what the result must tell: each
    column's name before the statement (``origins``, None: added by it) and the columns
    whose existing rows it filled without logging them (``rewritten``, lower-case names
    as they are so far)."""

    def __init__(self, table: CapturedTable, default_charset: str | None, mariadb: bool) -> None:
        self.table = table
        self.default_charset = default_charset
        self.mariadb = mariadb
        self.columns = list(table.columns)
        self.origins: list[str | None] = [c.name for c in self.columns]
        self.rewritten: set[str] = set()
        self.changed = False

    def apply(self, action: Any) -> None:
        """One action of the statement; raises for one that cannot be followed."""
        from sqlglot import exp

        kind = type(action).__name__
        if isinstance(action, exp.ColumnDef):
            self._add(action)
        elif isinstance(action, exp.Drop) and str(action.args.get("kind", "")).upper() == "COLUMN":
            self._drop(action)
        elif kind == "ModifyColumn":
            self._modify(action)
        elif kind == "RenameColumn":
            self._rename(action)
        elif kind in _NEUTRAL:
            self._check_neutral(kind, action)
        else:
            raise UnfollowableStatement(f"clause '{action.sql('mysql')[:80]}'")

    def _column(self, definition: Any, ordinal: int) -> MySqlColumn:
        column = column_from_definition(definition, ordinal, self.default_charset, self.mariadb)
        # treat-tinyint1-as-boolean.enabled: every column of the table carries it
        tinyint1_boolean = self.table.columns[0].tinyint1_boolean if self.table.columns else True
        if column.tinyint1_boolean == tinyint1_boolean:
            return column
        return dataclasses.replace(column, tinyint1_boolean=tinyint1_boolean)

    def _key_column(self, index: int, what: str) -> None:
        """Refuse an action on a key column: the rows' identity would change."""
        if self.columns[index].name in self.table.primary_key:
            raise UnfollowableStatement(f"it {what} key column {self.columns[index].name}")

    def _add(self, action: Any) -> None:
        column = self._column(action, len(self.columns) + 1)
        if any(c.name.lower() == column.name.lower() for c in self.columns):
            if action.args.get("exists"):  # ADD COLUMN IF NOT EXISTS of a present one
                return
            raise UnfollowableStatement(f"column {column.name} is there already")
        self.origins.insert(_insert(self.columns, column, action.args.get("position")), None)
        if fills_existing_rows(action):
            self.rewritten.add(column.name.lower())
        self.changed = True

    def _drop(self, action: Any) -> None:
        for target in action.args.get("tables") or []:
            index = _index(self.columns, target.name, bool(action.args.get("exists")))
            if index is None:
                continue
            self._key_column(index, "drops")
            self.rewritten.discard(self.columns[index].name.lower())
            del self.columns[index], self.origins[index]
            self.changed = True

    def _modify(self, action: Any) -> None:
        """CHANGE (``rename_from`` set) or MODIFY: a new definition, in place or moved."""
        definition = action.this
        old = action.args.get("rename_from")
        index = _index(self.columns, old.name if old is not None else definition.name, False)
        assert index is not None
        column = self._column(definition, index + 1)
        self._key_column(index, "changes")
        before = self.columns[index]
        if (
            before.name.lower() in self.rewritten
            or computes_values(definition)
            or not keeps_values(before, column)
        ):
            self.rewritten.discard(before.name.lower())
            self.rewritten.add(column.name.lower())
        del self.columns[index]
        origin = self.origins.pop(index)
        position = definition.args.get("position")
        if position is None:
            self.columns.insert(index, column)
            self.origins.insert(index, origin)
        else:
            self.origins.insert(_insert(self.columns, column, position), origin)
        self.changed = True

    def _rename(self, action: Any) -> None:
        index = _index(self.columns, action.this.name, bool(action.args.get("exists")))
        if index is None:
            return
        self._key_column(index, "renames")
        new_name = action.args["to"].name
        if self.columns[index].name.lower() in self.rewritten:
            self.rewritten.discard(self.columns[index].name.lower())
            self.rewritten.add(new_name.lower())
        self.columns[index] = dataclasses.replace(self.columns[index], name=new_name)
        self.changed = True

    def _check_neutral(self, kind: str, action: Any) -> None:
        """Clauses that leave the columns alone, except the forms of them that do not."""
        if kind == "AddConstraint" and "PRIMARY" in action.sql("mysql").upper():
            raise UnfollowableStatement("it changes the primary key")
        if kind == "AlterColumn" and action.args.get("dtype") is not None:
            raise UnfollowableStatement(f"clause '{action.sql('mysql')[:80]}'")
        if kind == "AlterColumn":  # SET DEFAULT of a column this statement adds fills it
            index = _index(self.columns, action.this.name, True)
            if index is not None and self.origins[index] is None:
                self.rewritten.add(self.columns[index].name.lower())

    def result(self) -> AlterResult:
        """The table after every action, renumbered, with its renames, drops and fills."""
        table = self.table
        if not self.changed:
            return AlterResult(table, False)
        columns = self.columns
        renumbered = tuple(dataclasses.replace(c, ordinal=i + 1) for i, c in enumerate(columns))
        kept = {o: c.name for o, c in zip(self.origins, columns, strict=True) if o is not None}
        moves = ColumnMoves(
            renamed={old: new for old, new in kept.items() if old != new},
            dropped=tuple(c.name for c in table.columns if c.name not in kept),
        )
        filled = tuple(c.name for c in renumbered if c.name.lower() in self.rewritten)
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
    unsigned = raw in _UNSIGNED or "UNSIGNED" in definition.sql("mysql").upper().split("--")[0]
    params = [p.this if isinstance(p, exp.DataTypeParam) else p for p in kind.expressions]
    args, precision, scale, fsp = _type_arguments(name, raw, params)
    if name == "json" and mariadb:
        name = "longtext"  # MariaDB's JSON is LONGTEXT with a json_valid check
    constraints = [c.args.get("kind") for c in definition.constraints]
    charset = collation = None
    if name in _TEXT_TYPES or name == "longtext":
        charset, collation = _text_charset(definition.name, constraints, default_charset)
    not_null = any(
        isinstance(c, exp.NotNullColumnConstraint) and not c.args.get("allow_null")
        for c in constraints
    )
    if any(isinstance(c, exp.PrimaryKeyColumnConstraint) for c in constraints):
        raise UnfollowableStatement(f"column {definition.name} is declared PRIMARY KEY")
    # COLUMN_COMMENT: not part of the column's shape (a comment alone changes nothing)
    comment = next(
        (str(c.this.name) for c in constraints if isinstance(c, exp.CommentColumnConstraint)),
        None,
    )
    return MySqlColumn(
        name=definition.name,
        ordinal=ordinal,
        data_type=name,
        column_type=f"{name}{args}{' unsigned' if unsigned else ''}",
        unsigned=unsigned,
        precision=precision,
        scale=scale,
        datetime_precision=fsp,
        charset=charset,
        collation=collation,
        nullable=not not_null,
        comment=comment or None,
    )


def _type_arguments(
    name: str, raw: str, params: Sequence[Any]
) -> tuple[str, int | None, int | None, int | None]:
    """COLUMN_TYPE's parenthesised part as information_schema spells it for a type of
    DATA_TYPE ``name`` (``raw``: as written), and its precision, scale and fractional
    seconds (the server's defaults where the statement gives none)."""
    from sqlglot import exp

    numbers = [int(p.name) for p in params if isinstance(p, exp.Literal) and not p.is_string]
    if name == "decimal":
        precision = numbers[0] if numbers else 10
        scale = numbers[1] if len(numbers) > 1 else 0
        return f"({precision},{scale})", precision, scale, None
    if name in ("enum", "set"):
        labels = [p for p in params if isinstance(p, exp.Literal) and p.is_string]
        quoted = ",".join("'" + str(p.this).replace("'", "''") + "'" for p in labels)
        return f"({quoted})", None, None, None
    if name in _TEMPORAL:
        return (f"({numbers[0]})" if numbers else ""), None, None, numbers[0] if numbers else 0
    if raw in ("boolean", "bool"):
        return "(1)", None, None, None
    return (f"({','.join(str(n) for n in numbers)})" if numbers else ""), None, None, None


def _text_charset(
    column: str, constraints: Sequence[Any], default_charset: str | None
) -> tuple[str | None, str | None]:
    """A text column's charset and collation: its own, the collation's charset, or the
    table's default (the server fills them in the same way)."""
    from sqlglot import exp

    charset = collation = None
    for constraint in constraints:
        if isinstance(constraint, exp.CharacterSetColumnConstraint):
            charset = constraint.this.name.lower()
        elif isinstance(constraint, exp.CollateColumnConstraint):
            collation = constraint.this.name.lower()
    if "BINARY" in [str(c).upper() for c in constraints]:
        raise UnfollowableStatement(f"column {column}: BINARY attribute")
    if charset is None and collation is not None:
        charset = collation.split("_")[0]
    return charset or default_charset, collation


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

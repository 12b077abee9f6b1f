"""Which columns an ALTER TABLE gives values in the rows already there without a row event
in the binlog: those rows have to be read again for any copy of the table to be right.

MySQL and MariaDB write an ALTER to the binlog as its statement only. Rows the table
holds are filled or converted in place and never logged:

* an added column takes its default (``DEFAULT 5``, ``DEFAULT CURRENT_TIMESTAMP``, an
  expression), the type's implicit one when it is ``NOT NULL`` without a default (0, ''),
  a generated value, or AUTO_INCREMENT numbers. Only a nullable column without a default
  (or ``DEFAULT NULL``) is NULL in every existing row, as a copy that adds it has it;
* a retyped column's values are converted: rounded (fewer decimals), cut (shorter text,
  outside strict mode), mapped (another enum list, another character set), computed
  (generated, AUTO_INCREMENT), or NULLs made implicit defaults (``NOT NULL`` outside
  strict mode). Only widenings keep every value as the source reads it: a larger integer
  (an unsigned one into a larger signed one), more digits on both sides of a decimal
  point while it stays a decimal128, longer VARCHAR / TEXT / BLOB, enum or set labels
  added at the end, finer DATETIME / TIMESTAMP. Not TIME (read as text with its
  digits), nor anything to or from a ``tinyint(1)`` read as a boolean
  (``treat-tinyint1-as-boolean.enabled``, the default), nor FLOAT to DOUBLE.

The rules err on the side of a read: a type or clause not known to keep the values
counts as one that changes them (``tests/unit/test_mysql_ddl_rewrites.py``).
"""

from __future__ import annotations

import re
from typing import Any

from sparkcdc.connectors.mysql.server.types import MySqlColumn, reads_tinyint1_as_boolean

#: Constraints an added column may carry and still be NULL in every existing row.
_NEUTRAL_CONSTRAINTS = frozenset(
    {
        "NotNullColumnConstraint",  # only as NULL (allow_null), see fills_existing_rows
        "CommentColumnConstraint",
        "CharacterSetColumnConstraint",
        "CollateColumnConstraint",
        "InvisibleColumnConstraint",
        "DefaultColumnConstraint",  # only as DEFAULT NULL
        "UniqueColumnConstraint",
    }
)
#: Constraints a MODIFY / CHANGE may carry and leave the values as they are.
_KEEPING_CONSTRAINTS = frozenset(
    {
        "NotNullColumnConstraint",  # NOT NULL itself: keeps_values compares nullability
        "DefaultColumnConstraint",  # for rows written later
        "OnUpdateColumnConstraint",
        "CommentColumnConstraint",
        "CharacterSetColumnConstraint",
        "CollateColumnConstraint",
        "InvisibleColumnConstraint",
        "UniqueColumnConstraint",
    }
)
#: Decimal digits past which a DECIMAL is read as text (Arrow's decimal128 holds 38).
_DECIMAL_DIGITS = 38
_INTEGERS = ("tinyint", "smallint", "mediumint", "int", "bigint")
_TEXTS = ("tinytext", "text", "mediumtext", "longtext")
_BLOBS = ("tinyblob", "blob", "mediumblob", "longblob")
_LENGTHED = frozenset({"char", "varchar", "varbinary"})
_LENGTH = re.compile(r"\((\d+)\)")


def fills_existing_rows(definition: object) -> bool:
    """Whether an added column (a sqlglot ``ColumnDef``) is anything but NULL in the
    rows the table already holds."""
    from sqlglot import exp

    assert isinstance(definition, exp.ColumnDef)
    if _bare_timestamp(definition):
        return True
    for constraint in definition.constraints:
        what = constraint.args.get("kind")
        name = type(what).__name__
        if what is None or name not in _NEUTRAL_CONSTRAINTS:
            return True
        if name == "NotNullColumnConstraint" and not what.args.get("allow_null"):
            return True
        if name == "DefaultColumnConstraint" and not isinstance(what.this, exp.Null):
            return True
    return False


def computes_values(definition: object) -> bool:
    """Whether a MODIFY / CHANGE's column definition (a sqlglot ``ColumnDef``) makes the
    server compute the column's values anew, whatever its type: generated (``AS``),
    AUTO_INCREMENT (0 and NULL renumbered), a TIMESTAMP not declared NULL (NOT NULL on
    MariaDB before 10.10), or a clause not known to leave the values alone."""
    from sqlglot import exp

    assert isinstance(definition, exp.ColumnDef)
    if _bare_timestamp(definition):
        return True
    kinds = [type(c.args.get("kind")).__name__ for c in definition.constraints]
    return any(k not in _KEEPING_CONSTRAINTS for k in kinds)


def keeps_values(old: MySqlColumn, new: MySqlColumn) -> bool:
    """Whether a MODIFY / CHANGE from ``old`` to ``new`` leaves every value the column
    holds, as the source reads it, as it was (a rename, a new default or comment, a
    widening); see :func:`computes_values` for the clauses that decide it alone."""
    if old.nullable and not new.nullable:
        return False  # NULLs become the implicit default outside strict mode
    if old.charset != new.charset:
        return False  # text converted to another character set (what it lacks becomes '?')
    if old.column_type == new.column_type:  # enum labels by case too
        return True
    if reads_tinyint1_as_boolean(old) or reads_tinyint1_as_boolean(new):
        return False  # read as a boolean: numbers other than 0 and 1 read otherwise
    if "(" in new.column_type and new.data_type in _TEXTS + _BLOBS:
        return False  # TEXT(n): the server picks the smallest type that holds n
    if new.unsigned and not old.unsigned:
        return False  # negative values become 0
    a, b = old.data_type, new.data_type
    if a in _INTEGERS and b in _INTEGERS:  # an unsigned one needs a larger signed one
        wider = _INTEGERS.index(b) - _INTEGERS.index(a)
        return wider > 0 if old.unsigned and not new.unsigned else wider >= 0
    if a == b == "decimal":
        p, s, q, t = old.precision or 10, old.scale or 0, new.precision or 10, new.scale or 0
        if t != s and max(p, q) > _DECIMAL_DIGITS:
            return False  # read as text with its scale's digits: '1.50' becomes '1.5000'
        return t >= s and q - t >= p - s
    if a in _TEXTS and b in _TEXTS:
        return _TEXTS.index(b) >= _TEXTS.index(a)
    if a in _BLOBS and b in _BLOBS:
        return _BLOBS.index(b) >= _BLOBS.index(a)
    if a == b and a in _LENGTHED:
        return _length(new.column_type) >= _length(old.column_type)
    if a == "varchar" and b in _TEXTS[1:]:
        return True  # a TEXT holds 65,535 bytes, as many as any VARCHAR can
    if a == b and a in ("datetime", "timestamp"):  # TIME is read as text with its digits
        return (new.datetime_precision or 0) >= (old.datetime_precision or 0)
    if a == b and a in ("enum", "set"):
        inner = old.column_type[old.column_type.index("(") + 1 : old.column_type.rindex(")")]
        later = new.column_type[new.column_type.index("(") + 1 : new.column_type.rindex(")")]
        return later.startswith(inner + ",")  # labels added at the end keep their numbers
    return False


def _bare_timestamp(definition: Any) -> bool:
    """A TIMESTAMP column not declared NULL: without explicit_defaults_for_timestamp
    (MariaDB before 10.10) it is NOT NULL DEFAULT CURRENT_TIMESTAMP."""
    from sqlglot import exp

    kind = definition.args.get("kind")
    timestamps = (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ)
    if not isinstance(kind, exp.DataType) or kind.this not in timestamps:
        return False
    return not any(
        isinstance(c.args.get("kind"), exp.NotNullColumnConstraint)
        and c.args["kind"].args.get("allow_null")
        for c in definition.constraints
    )


def _length(column_type: str) -> int:
    match = _LENGTH.search(column_type)
    return int(match.group(1)) if match else 1
